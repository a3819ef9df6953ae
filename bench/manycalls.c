/* Makes many records quickly: N cheap MPI calls per rank (MPI_Iprobe on a
 * quiet communicator), for the ingest benchmark. */
#include <mpi.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    int flag;
    for (long i = 0; i < n; i++) MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
