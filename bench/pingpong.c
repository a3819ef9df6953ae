/* Ping-pong between ranks 0 and 1: one-way latency per message size.
 * Prints "pingpong <bytes> <microseconds>" from rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *buf = calloc(1 << 22, 1);
    for (int bytes = 1; bytes <= (1 << 22); bytes *= 4) {
        int iters = bytes <= 4096 ? 4000 : bytes <= (1 << 18) ? 400 : 40;
        for (int warm = 0; warm < 2; warm++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t = MPI_Wtime();
            for (int i = 0; i < iters; i++) {
                if (rank == 0) {
                    MPI_Send(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                    MPI_Recv(buf, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (rank == 1) {
                    MPI_Recv(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
                }
            }
            t = MPI_Wtime() - t;
            if (warm && rank == 0) printf("pingpong %d %.3f\n", bytes, t / iters / 2 * 1e6);
        }
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
