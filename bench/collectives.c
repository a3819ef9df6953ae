/* A loop of small collectives. Prints "collectives <microseconds per iteration>". */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double x = rank, y;
    char blk[1024] = {0};
    const int iters = 2000;
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Bcast(blk, sizeof blk, MPI_BYTE, i % 2, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    t = MPI_Wtime() - t;
    if (rank == 0) printf("collectives %.3f\n", t / iters * 1e6);
    MPI_Finalize();
    return 0;
}
