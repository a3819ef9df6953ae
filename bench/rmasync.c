/* Cost of a fence epoch with copies: rank 0 puts one int into each of the first
 * `changed` pages of rank 1's window of `bytes` bytes, then fences; time per
 * epoch on rank 0 (after a warm-up).  With copies every fence forwards the
 * pages of each window that changed (docs/rma.md).
 * Usage: rmasync BYTES CHANGED_PAGES ITERATIONS */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Aint bytes = argc > 1 ? atol(argv[1]) : 1 << 20;
    int changed = argc > 2 ? atoi(argv[2]) : 1, iters = argc > 3 ? atoi(argv[3]) : 100;
    char *base;
    MPI_Win win;
    MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    for (MPI_Aint i = 0; i < bytes; i++) base[i] = 0;
    MPI_Win_fence(0, win);
    double t0 = 0;
    for (int it = -10; it < iters; it++) {
        if (it == 0) t0 = MPI_Wtime();
        if (rank == 0)
            for (int p = 0; p < changed; p++) MPI_Put(&it, 1, MPI_INT, 1, (MPI_Aint)p * 4096, 1, MPI_INT, win);
        MPI_Win_fence(0, win);
    }
    double per = (MPI_Wtime() - t0) / iters;
    if (rank == 0) printf("bytes %ld changed %d per_epoch_us %.1f\n", (long)bytes, changed, per * 1e6);
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
