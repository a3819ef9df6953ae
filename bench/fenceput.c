/* Cost of a fence epoch of Puts: rank 0 puts BYTES into rank 1's window (MPI_Win_allocate) and both fence; time
 * per epoch on rank 0 (after a warm-up), the best of 5 rounds.
 * Usage: fenceput BYTES ITERATIONS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int bytes = argc > 1 ? atoi(argv[1]) : 8, iters = argc > 2 ? atoi(argv[2]) : 1000;
    char *base, *src = malloc((size_t)bytes + 1);
    memset(src, 1, (size_t)bytes + 1);
    MPI_Win win;
    MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    MPI_Win_fence(0, win);
    double best = 1e30;
    for (int round = 0; round < 5; round++) {
        double t0 = 0;
        for (int it = -10; it < iters; it++) {
            if (it == 0) t0 = MPI_Wtime();
            if (rank == 0) MPI_Put(src, bytes, MPI_BYTE, 1, 0, bytes, MPI_BYTE, win);
            MPI_Win_fence(0, win);
        }
        double per = (MPI_Wtime() - t0) / iters;
        if (per < best) best = per;
    }
    if (rank == 0) printf("fenceput %d %.2f\n", bytes, best * 1e6);
    MPI_Win_free(&win);
    free(src);
    MPI_Finalize();
    return 0;
}
