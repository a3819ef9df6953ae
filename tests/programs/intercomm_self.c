/* An intercommunicator whose local groups are MPI_COMM_SELF: ranks 0 and 1 each take their own MPI_COMM_SELF as
 * the local communicator and MPI_COMM_WORLD as the bridge, exchange their ranks over it, then do the same with
 * MPI_Intercomm_create_from_groups; the other ranks only finalize.  Each rank prints what it received. */
#include "battery.h"

static void exchange(const char *how, MPI_Comm inter) {
    int got = -1, rsize;
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Sendrecv(&rank, 1, MPI_INT, 0, 13, &got, 1, MPI_INT, 0, 13, inter, MPI_STATUS_IGNORE);
    SAY("%s: remote size %d, the other side is rank %d", how, rsize, got);
}

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    if (rank < 2) {
        int other = 1 - rank;
        MPI_Comm inter;
        MPI_Intercomm_create(MPI_COMM_SELF, 0, MPI_COMM_WORLD, other, 27, &inter);
        exchange("over MPI_COMM_SELF", inter);
        MPI_Comm_free(&inter);

        MPI_Group world, mine, theirs;
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        MPI_Group_incl(world, 1, &rank, &mine);
        MPI_Group_incl(world, 1, &other, &theirs);
        MPI_Intercomm_create_from_groups(mine, 0, theirs, 0, "pair", MPI_INFO_NULL, MPI_ERRORS_ARE_FATAL, &inter);
        exchange("from groups", inter);
        MPI_Comm_free(&inter);
        MPI_Group_free(&world);
        MPI_Group_free(&mine);
        MPI_Group_free(&theirs);
    }
    SAY("done");
    MPI_Finalize();
    return 0;
}
