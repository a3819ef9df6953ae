/* A code that runs two kinds of work side by side: the even ranks and the odd ranks each make their own
 * communicator with MPI_Comm_create_group (only the members of each half call it, both with the same tag, at the
 * same time), reduce their work on it, and the halves' first ranks compare results on MPI_COMM_WORLD. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int half[64], n = 0;
    for (int r = rank % 2; r < size && n < 64; r += 2) half[n++] = r;
    MPI_Group world, mine;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, n, half, &mine);
    MPI_Comm team;
    MPI_Comm_create_group(MPI_COMM_WORLD, mine, 42, &team);
    int trank, tsize;
    MPI_Comm_rank(team, &trank);
    MPI_Comm_size(team, &tsize);
    long work = 0;
    for (int step = 0; step < 4; step++) {
        long mine_now = (rank + 1) * (step + 1), sum = 0;
        MPI_Allreduce(&mine_now, &sum, 1, MPI_LONG, MPI_SUM, team);
        work += sum;
    }
    int first = -1;
    MPI_Bcast(&rank, 0, MPI_INT, 0, team); /* an empty broadcast: the program's own habit */
    if (trank == 0) first = rank;
    MPI_Bcast(&first, 1, MPI_INT, 0, team);
    long other = 0;
    if (trank == 0 && size > 1)
        MPI_Sendrecv(&work, 1, MPI_LONG, 1 - rank, 5, &other, 1, MPI_LONG, 1 - rank, 5, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    printf("r%d: team rank %d of %d led by r%d, work %ld\n", rank, trank, tsize, first, work);
    if (trank == 0) printf("r%d: the other half's work %ld\n", rank, other);
    MPI_Comm_free(&team);
    MPI_Group_free(&mine);
    MPI_Group_free(&world);
    MPI_Finalize();
    return 0;
}
