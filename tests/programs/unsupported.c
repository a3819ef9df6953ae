/* Calls a function echo has no clone semantics for yet (one-sided windows,
 * until they are written): under clones it must stop with a message naming it. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, buf = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Win win;
    MPI_Win_create(&buf, sizeof buf, sizeof buf, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_free(&win);
    printf("r%d: done\n", rank);
    MPI_Finalize();
    return 0;
}
