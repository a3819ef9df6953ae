/* Cost of a one-sided epoch of Puts: rank 0 puts BYTES into rank 1's window (MPI_Win_allocate), in a fence
 * epoch (both fence), a PSCW one (rank 1 posts to rank 0 and waits, rank 0 starts, puts and completes) or a
 * passive-target one (rank 0 locks rank 1's window exclusively, puts and unlocks; rank 1 waits in MPI_Barrier
 * meanwhile, as a target that makes no other call); time per epoch on rank 0 (after a warm-up), the best of 5
 * rounds.
 * Usage: fenceput BYTES ITERATIONS [fence|pscw|lock]; prints "fenceput BYTES US", "pscwput BYTES US" or
 * "lockput BYTES US" */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int bytes = argc > 1 ? atoi(argv[1]) : 8, iters = argc > 2 ? atoi(argv[2]) : 1000;
    int pscw = argc > 3 && !strcmp(argv[3], "pscw"), lock = argc > 3 && !strcmp(argv[3], "lock");
    MPI_Group world, peer;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int other = 1 - rank;
    MPI_Group_incl(world, 1, &other, &peer);
    char *base, *src = malloc((size_t)bytes + 1);
    memset(src, 1, (size_t)bytes + 1);
    MPI_Win win;
    MPI_Win_allocate(bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    if (!pscw && !lock) MPI_Win_fence(0, win); /* PSCW and lock epochs need no fence before them */
    double best = 1e30;
    for (int round = 0; round < 5 && !(lock && rank == 1); round++) {
        double t0 = 0;
        for (int it = -10; it < iters; it++) {
            if (it == 0) t0 = MPI_Wtime();
            if (pscw && rank == 1) {
                MPI_Win_post(peer, 0, win);
                MPI_Win_wait(win);
            } else if (lock) {
                MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
                MPI_Put(src, bytes, MPI_BYTE, 1, 0, bytes, MPI_BYTE, win);
                MPI_Win_unlock(1, win);
            } else if (pscw) {
                MPI_Win_start(peer, 0, win);
                MPI_Put(src, bytes, MPI_BYTE, 1, 0, bytes, MPI_BYTE, win);
                MPI_Win_complete(win);
            } else {
                if (rank == 0) MPI_Put(src, bytes, MPI_BYTE, 1, 0, bytes, MPI_BYTE, win);
                MPI_Win_fence(0, win);
            }
        }
        double per = (MPI_Wtime() - t0) / iters;
        if (per < best) best = per;
    }
    if (lock) MPI_Barrier(MPI_COMM_WORLD); /* rank 1, the passive target, waits here */
    if (rank == 0) printf("%s %d %.2f\n", lock ? "lockput" : pscw ? "pscwput" : "fenceput", bytes, best * 1e6);
    MPI_Win_free(&win);
    MPI_Group_free(&peer);
    MPI_Group_free(&world);
    free(src);
    MPI_Finalize();
    return 0;
}
