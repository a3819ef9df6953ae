/* A code that keeps its work arrays in temporary files, as C codes do: a scratch file made with mkstemp in $TMPDIR,
 * written every step and read back at the end, and a run directory made with mkdtemp holding a summary; both are
 * left behind (the job script collects them); the local sum goes through a tmpfile.  With "stamp", each process
 * heads its scratch file with an id drawn from the kernel's random bytes (as codes stamp their files): a real
 * difference between processes, which a comparison must find.  With "named", the summary is named by such an id
 * instead (as codes name a run's files by a UUID): a name every process draws for itself, that no other has.
 * Usage: scratch_c [stamp|named] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STEPS 16
#define N 256

static long random_id(void) {
    long id = 0;
    FILE *random = fopen("/dev/urandom", "rb");
    if (!random || fread(&id, sizeof id, 1, random) != 1) MPI_Abort(MPI_COMM_WORLD, 1);
    fclose(random);
    return id;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char scratch[4096], dir[4096], summary[4200];
    snprintf(scratch, sizeof scratch, "%s/work.%d.XXXXXX", tmp, rank);
    int fd = mkstemp(scratch);
    if (fd < 0) {
        perror(scratch);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (argc > 1 && strcmp(argv[1], "stamp") == 0) {
        long id = random_id();
        if (write(fd, &id, sizeof id) != (ssize_t)sizeof id) MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double block[N];
    for (int step = 0; step < STEPS; step++) {
        for (int i = 0; i < N; i++) block[i] = (rank + 1) * 0.5 + step * 0.25 + i * 1e-3;
        if (write(fd, block, sizeof block) != (ssize_t)sizeof block) {
            perror("write");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    lseek(fd, argc > 1 && strcmp(argv[1], "stamp") == 0 ? (off_t)sizeof(long) : 0, SEEK_SET);
    double local = 0;
    for (int step = 0; step < STEPS; step++) {
        if (read(fd, block, sizeof block) != (ssize_t)sizeof block) {
            perror("read");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (int i = 0; i < N; i++) local += block[i];
    }
    close(fd);
    FILE *spill = tmpfile(); /* the local sum through an unnamed file, as a code spills a buffer */
    if (!spill || fprintf(spill, "%.17g\n", local) < 0 || fseek(spill, 0, SEEK_SET) != 0 ||
        fscanf(spill, "%lg", &local) != 1) {
        perror("tmpfile");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    fclose(spill);
    double total = 0;
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    snprintf(dir, sizeof dir, "%s/run.%d.XXXXXX", tmp, rank);
    if (!mkdtemp(dir)) {
        perror(dir);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (argc > 1 && strcmp(argv[1], "named") == 0)
        snprintf(summary, sizeof summary, "%s/summary.%016lx.txt", dir, (unsigned long)random_id());
    else
        snprintf(summary, sizeof summary, "%s/summary.txt", dir);
    FILE *f = fopen(summary, "w");
    if (!f) {
        perror(summary);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    fprintf(f, "rank %d local %.6f total %.6f\n", rank, local, total);
    fclose(f);
    printf("r%d: total %.6f\n", rank, total);
    MPI_Finalize();
    return 0;
}
