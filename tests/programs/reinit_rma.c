/* An iterative one-sided code with a restart point: every iteration each rank puts its value into its right
 * neighbour's window (a ring), synchronised with fences ("fence") or with post/start/complete/wait epochs
 * ("pscw", as the PRK kernels do), and sums them with an Allreduce; it checkpoints every iteration.  "split": no
 * window (the ring is a Sendrecv), and the ranks split the world in two every iteration (their own
 * MPI_Comm_split) and reduce over their half.
 * "norestart": the same loop without MPI_Reinit (no restart point).  "abort=LOG": halfway, rank 1 starts its run log
 * LOG, refusing to overwrite an earlier one (O_EXCL), and calls MPI_Abort(3) when it cannot.  Output is the same
 * with or without failures.
 * Usage: reinit_rma fence|pscw|split [iterations] [ms per iteration] [norestart|abort=LOG] */
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "echo_reinit.h"

static const char *sync_kind = "fence";
static int iterations = 100, pause_ms = 20, restart_point = 1;
static const char *run_log; /* abort=LOG */

static int resilient_main(int argc, char **argv, MPI_Reinit_state_t state) {
    (void)argc; (void)argv;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double x = rank + 1, *slot;
    int it = 0, v = restart_point ? echo_checkpoint_latest() : -1;
    if (v >= 0) {
        echo_checkpoint_load("x", &x, sizeof x);
        it = v + 1;
    }
    if (state != MPI_REINIT_NEW)
        fprintf(stderr, "rank %d: %s, resuming at iteration %d\n", rank,
                state == MPI_REINIT_REINITED ? "reinited" : "restarted", it);
    MPI_Win win = MPI_WIN_NULL;
    double two_sided = 0;
    slot = &two_sided;
    if (strcmp(sync_kind, "split") != 0) MPI_Win_allocate(sizeof(double), sizeof(double), MPI_INFO_NULL,
                                                          MPI_COMM_WORLD, &slot, &win);
    *slot = 0;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Group world_group, from, to;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, 1, &left, &from);
    MPI_Group_incl(world_group, 1, &right, &to);
    double t_sync = 0;
    for (; it < iterations; it++) {
        double t0 = MPI_Wtime();
        if (strcmp(sync_kind, "pscw") == 0) {
            MPI_Win_post(from, 0, win);
            MPI_Win_start(to, 0, win);
            MPI_Put(&x, 1, MPI_DOUBLE, right, 0, 1, MPI_DOUBLE, win);
            MPI_Win_complete(win);
            MPI_Win_wait(win);
        } else if (win == MPI_WIN_NULL) {
            MPI_Sendrecv(&x, 1, MPI_DOUBLE, right, 0, slot, 1, MPI_DOUBLE, left, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Win_fence(0, win);
            MPI_Put(&x, 1, MPI_DOUBLE, right, 0, 1, MPI_DOUBLE, win);
            MPI_Win_fence(0, win);
        }
        t_sync += MPI_Wtime() - t0;
        double s, part = 0;
        MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (strcmp(sync_kind, "split") == 0) {
            MPI_Comm half;
            MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half);
            MPI_Allreduce(&x, &part, 1, MPI_DOUBLE, MPI_SUM, half);
            MPI_Comm_free(&half);
        }
        x = 0.5 * x + 0.25 * *slot + s / size + 0.125 * part + it;
        if (run_log && rank == 1 && it == iterations / 2) {
            int fd = open(run_log, O_WRONLY | O_CREAT | O_EXCL, 0644);
            if (fd < 0) {
                fprintf(stderr, "rank 1: cannot start the run log %s: %s\n", run_log, strerror(errno));
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
            dprintf(fd, "iteration %d: %.17g\n", it, x);
            close(fd);
        }
        usleep((useconds_t)pause_ms * 1000);
        if (restart_point) {
            echo_checkpoint_store("x", &x, sizeof x);
            echo_checkpoint_commit(it);
        }
    }
    double s, worst;
    MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Reduce(&t_sync, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("result after %d iterations on %d ranks (%s): %.17g\n", iterations, size, sync_kind, s);
        fprintf(stderr, "slowest rank's synchronisation: %.3f s\n", worst);
    }
    MPI_Group_free(&from);
    MPI_Group_free(&to);
    MPI_Group_free(&world_group);
    if (win != MPI_WIN_NULL) MPI_Win_free(&win);
    return 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc > 1) sync_kind = argv[1];
    if (argc > 2) iterations = atoi(argv[2]);
    if (argc > 3) pause_ms = atoi(argv[3]);
    if (argc > 4 && strcmp(argv[4], "norestart") == 0) restart_point = 0;
    if (argc > 4 && strncmp(argv[4], "abort=", 6) == 0) run_log = argv[4] + 6;
    if (restart_point)
        MPI_Reinit(&argc, &argv, resilient_main);
    else
        resilient_main(argc, argv, MPI_REINIT_NEW);
    MPI_Finalize();
    return 0;
}
