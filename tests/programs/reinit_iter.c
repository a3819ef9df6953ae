/* An iterative program written for Reinit: it checkpoints every iteration and,
 * after a restart, resumes from the latest checkpoint every rank has.  Its
 * output (stdout) is the same whether or not processes fail on the way; what
 * happened goes to stderr.
 * Usage: reinit_iter [iterations] [ms per iteration] [nockpt] [barrier-first]
 *   nockpt: never checkpoint (a restart starts from the beginning)
 *   barrier-first: wait 1 s, then a barrier before MPI_Reinit (a failure there has no restart point) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "echo_reinit.h"

static int iterations = 100, pause_ms = 20, checkpoints = 1;

static int resilient_main(int argc, char **argv, MPI_Reinit_state_t state) {
    (void)argc; (void)argv;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double x = rank + 1;
    int it = 0, v = checkpoints ? echo_checkpoint_latest() : -1;
    if (v >= 0) {
        echo_checkpoint_load("x", &x, sizeof x);
        it = v + 1;
    }
    if (state != MPI_REINIT_NEW || rank == 0)
        fprintf(stderr, "rank %d: %s, resuming at iteration %d\n", rank,
                state == MPI_REINIT_NEW ? "new" : state == MPI_REINIT_REINITED ? "reinited" : "restarted", it);
    MPI_Comm ring; /* a derived communicator, made again after every restart */
    MPI_Comm_dup(MPI_COMM_WORLD, &ring);
    for (; it < iterations; it++) {
        double s, left = 0;
        MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Sendrecv(&x, 1, MPI_DOUBLE, (rank + 1) % size, 0, &left, 1, MPI_DOUBLE, (rank + size - 1) % size, 0,
                     ring, MPI_STATUS_IGNORE);
        x = 0.5 * x + 0.25 * left + s / size + it;
        usleep((useconds_t)pause_ms * 1000);
        if (checkpoints) {
            echo_checkpoint_store("x", &x, sizeof x);
            echo_checkpoint_commit(it);
        }
    }
    double s;
    MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("result after %d iterations on %d ranks: %.17g\n", iterations, size, s);
    MPI_Comm_free(&ring);
    return 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc > 1) iterations = atoi(argv[1]);
    if (argc > 2) pause_ms = atoi(argv[2]);
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "nockpt") == 0) checkpoints = 0;
        if (strcmp(argv[i], "barrier-first") == 0) {
            sleep(1);
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    MPI_Reinit(&argc, &argv, resilient_main);
    MPI_Finalize();
    return 0;
}
