/* Ranks 0 and 1 make an intercommunicator of their MPI_COMM_SELFs (a call SDR does not replicate), rank 1 and
 * the others after computing for minutes.  Under SDR rank 0 is stopped at the call at once, and the job must end
 * then: no MPI_Abort ends it under ULFM (it can wait for ever), and mpirun does not end the processes still
 * computing. */
#include "battery.h"
#include <unistd.h>

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    if (rank > 0) sleep(150); /* a long computation */
    if (rank < 2) {
        MPI_Comm inter;
        MPI_Intercomm_create(MPI_COMM_SELF, 0, MPI_COMM_WORLD, 1 - rank, 27, &inter);
        MPI_Comm_free(&inter);
    }
    SAY("done");
    MPI_Finalize();
    return 0;
}
