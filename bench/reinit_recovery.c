/* Recovery-time benchmark program: the same iterative computation recovered
 * two ways from the failure of one process.
 *   reinit_recovery reinit  DIR N MS KILLRANK KILLITER   (under echorun --mode reinit; in-memory checkpoints)
 *   reinit_recovery restart DIR N MS KILLRANK KILLITER   (under mpirun, relaunched after the failure; file checkpoints)
 * The process of rank KILLRANK kills itself at iteration KILLITER (once: a
 * marker in DIR remembers it).  Epoch times go to DIR/stamps: "fail", "init"
 * (MPI_Init returned on rank 0), "entry" and "resumed" (restart point entered,
 * checkpoint loaded: computation goes on), and "done". */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "echo_reinit.h"

static const char *mode, *dir;
static int iterations, pause_ms, kill_rank, kill_iter;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static void stamp(const char *what, double t) {
    char path[4096];
    snprintf(path, sizeof path, "%s/stamps", dir);
    FILE *f = fopen(path, "a");
    fprintf(f, "%s %.6f\n", what, t);
    fclose(f);
}

/* restart mode: this rank's checkpoint in DIR/ckpt.<rank> (iteration, value) */
static int load_file(int rank, double *x) {
    char path[4096];
    snprintf(path, sizeof path, "%s/ckpt.%d", dir, rank);
    FILE *f = fopen(path, "r");
    int it = -1;
    if (f) {
        if (fscanf(f, "%d %lf", &it, x) != 2) it = -1;
        fclose(f);
    }
    return it;
}

static void store_file(int rank, int it, double x) {
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/ckpt.%d", dir, rank);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    fprintf(f, "%d %.17g\n", it, x);
    fclose(f);
    rename(tmp, path);
}

static int resilient_main(int argc, char **argv, MPI_Reinit_state_t state) {
    (void)argc; (void)argv;
    double entry = now();
    int rank, size, reinit = strcmp(mode, "reinit") == 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double x = rank + 1;
    int start = 0, v;
    if (reinit) {
        v = echo_checkpoint_latest();
        if (v >= 0) echo_checkpoint_load("x", &x, sizeof x);
    } else {
        int mine = load_file(rank, &x);
        MPI_Allreduce(&mine, &v, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (v >= 0 && v != mine) { /* every rank restarts from the version all of them have */
            fprintf(stderr, "rank %d: checkpoint %d, job resumes at %d\n", rank, mine, v);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    start = v + 1;
    if (rank == 0 && (state != MPI_REINIT_NEW || v >= 0)) {
        stamp("entry", entry);
        stamp("resumed", now());
    }
    for (int it = start; it < iterations; it++) {
        double s;
        MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        x = 0.5 * x + s / size + it;
        usleep((useconds_t)pause_ms * 1000);
        if (reinit) {
            echo_checkpoint_store("x", &x, sizeof x);
            echo_checkpoint_commit(it);
        } else {
            store_file(rank, it, x);
            MPI_Barrier(MPI_COMM_WORLD); /* the version is complete on every rank */
        }
        char marker[4096];
        snprintf(marker, sizeof marker, "%s/killed", dir);
        if (rank == kill_rank && it == kill_iter && access(marker, F_OK) != 0) {
            fclose(fopen(marker, "w"));
            stamp("fail", now());
            raise(SIGKILL);
        }
    }
    double s;
    MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        stamp("done", now());
        printf("result %.17g\n", s);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: %s reinit|restart DIR ITERATIONS MS KILLRANK KILLITER\n", argv[0]);
        return 2;
    }
    mode = argv[1];
    dir = argv[2];
    iterations = atoi(argv[3]);
    pause_ms = atoi(argv[4]);
    kill_rank = atoi(argv[5]);
    kill_iter = atoi(argv[6]);
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) stamp("init", now());
    MPI_Reinit(&argc, &argv, resilient_main);
    MPI_Finalize();
    return 0;
}
