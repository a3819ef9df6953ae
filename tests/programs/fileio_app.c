/* A simulation that keeps its files the way production codes do, in the directory it is given:
 * - its result file is created exclusively (O_CREAT|O_EXCL: it refuses to overwrite an earlier run's);
 * - every step it writes a checkpoint to a temporary file and renames it over the last one, and every few
 *   steps reads the checkpoint back as a restart would, checking it holds what it wrote;
 * - each rank appends a line a step to its own history, and at the end counts the lines it wrote;
 * - rank 0 appends the energies to a log.
 * Usage: fileio_app DIR STEPS */
#include <errno.h>
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define N 64

static void fail(const char *what, const char *path) {
    fprintf(stderr, "fileio_app: %s %s: %s\n", what, path, strerror(errno));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3 || chdir(argv[1]) != 0) {
        fprintf(stderr, "usage: fileio_app DIR STEPS\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int steps = atoi(argv[2]);
    char result[64], tmp[64], cpt[64], history[64];
    snprintf(result, sizeof result, "result.%d.dat", rank);
    snprintf(tmp, sizeof tmp, "state.%d.tmp", rank);
    snprintf(cpt, sizeof cpt, "state.%d.cpt", rank);
    snprintf(history, sizeof history, "history.%d.txt", rank);

    char lock[64]; /* held while the run goes on, as codes guard a directory against a second run */
    snprintf(lock, sizeof lock, "running.%d.lock", rank);
    int held = open(lock, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (held < 0) fail("cannot take", lock);
    int out = open(result, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (out < 0) fail("cannot create", result);
    if (rank == 0 && mkdir("frames", 0755) != 0 && errno != EEXIST) fail("cannot make", "frames");
    MPI_Barrier(MPI_COMM_WORLD);
    FILE *log = rank == 0 ? fopen("run.log", "a") : NULL;
    if (rank == 0 && !log) fail("cannot open", "run.log");

    double state[N], energy = 0, t0 = MPI_Wtime();
    for (int i = 0; i < N; i++) state[i] = rank + 0.5 * i;
    for (int step = 1; step <= steps; step++) {
        double local = 0;
        for (int i = 0; i < N; i++) {
            state[i] = 0.99 * state[i] + 0.01 * step;
            local += state[i] * state[i];
        }
        MPI_Allreduce(&local, &energy, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);

        FILE *f = fopen(tmp, "w");
        if (!f) fail("cannot write", tmp);
        fwrite(&step, sizeof step, 1, f);
        fwrite(state, sizeof state, 1, f);
        if (fclose(f) != 0) fail("cannot close", tmp);
        if (rename(tmp, cpt) != 0) fail("cannot rename to", cpt);

        if (step % 5 == 0) { /* a restart's read, to check the checkpoint */
            double back[N];
            int back_step = 0;
            f = fopen(cpt, "r");
            if (!f || fread(&back_step, sizeof back_step, 1, f) != 1 || fread(back, sizeof back, 1, f) != 1)
                fail("cannot read back", cpt);
            fclose(f);
            if (back_step != step || memcmp(back, state, sizeof back) != 0) {
                fprintf(stderr, "fileio_app: %s holds step %d, not step %d\n", cpt, back_step, step);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
        f = fopen(history, "a");
        if (!f) fail("cannot append to", history);
        fprintf(f, "step %d local %.12f\n", step, local);
        fclose(f);
        if (step % 10 == 0) {
            char frame[64];
            snprintf(frame, sizeof frame, "frames/frame.%d.%d", rank, step);
            f = fopen(frame, "w");
            if (!f) fail("cannot write", frame);
            for (int i = 0; i < N; i++) fprintf(f, "%d %.9f\n", i, state[i]);
            fclose(f);
        }
        if (log) {
            fprintf(log, "step %d energy %.12f\n", step, energy);
            fflush(log);
        }
    }
    if (write(out, state, sizeof state) != (ssize_t)sizeof state) fail("cannot write", result);
    close(out);

    close(held);
    if (unlink(lock) != 0) fail("cannot remove", lock);
    struct stat st;
    if (stat(lock, &st) == 0 || errno != ENOENT) fail("still there:", lock);

    FILE *f = fopen(history, "r"); /* the history holds one line a step, as this run wrote it */
    if (!f) fail("cannot read", history);
    int lines = 0;
    for (int c; (c = fgetc(f)) != EOF;) lines += c == '\n';
    fclose(f);
    if (lines != steps) {
        fprintf(stderr, "fileio_app: %s has %d lines after %d steps\n", history, lines, steps);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double elapsed = MPI_Wtime() - t0, slowest;
    MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (log) {
        fprintf(log, "final energy %.12f\n", energy);
        fclose(log);
        fprintf(stderr, "steps took %.3f s\n", slowest); /* a timer, on standard error: not compared */
    }
    printf("r%d: %d steps, energy %.12f\n", rank, steps, energy);
    MPI_Finalize();
    return 0;
}
