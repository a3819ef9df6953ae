/* Calls the one function echo has no clone semantics for (MPI_Comm_join: a
 * socket per process): under clones it must stop with a message naming it.
 * (Without clones every call passes through: the battery at 1 copy shows it;
 * this program is not for that, Open MPI loops forever on a bad socket.) */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm joined = MPI_COMM_NULL;
    MPI_Comm_join(-1, &joined); /* not a socket */
    printf("r%d: done\n", rank);
    MPI_Finalize();
    return 0;
}
