/* The file view's cost (bench/run_fileview.py): what a rank's file I/O takes, timed by the program.
 *   fileview small DIR NAMES FILES ROUNDS: each round writes FILES files of 4 KiB to temporary names, renames
 *       each over its final name and reads it back (a checkpointing code's pattern, many small files);
 *   fileview stream DIR NAMES MIB: writes MIB MiB to one file in 4 MiB writes, fsync'ed at the end.
 * NAMES: "rank" (files named by rank, as a program names them) or "pid" (by process id: every process writes
 * files of its own, so copies without the file view do the same I/O as with it, without colliding). 
 * Prints "fileview SECONDS" (the slowest rank's time, on rank 0). */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void die(const char *what, const char *path) {
    perror(path);
    fprintf(stderr, "fileview: %s %s\n", what, path);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc < 5 || chdir(argv[2]) != 0) {
        fprintf(stderr, "usage: fileview small DIR rank|pid FILES ROUNDS | fileview stream DIR rank|pid MIB\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int id = strcmp(argv[3], "pid") == 0 ? (int)getpid() : rank;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    char tmp[64], name[64];
    if (strcmp(argv[1], "small") == 0) {
        int files = atoi(argv[4]), rounds = argc > 5 ? atoi(argv[5]) : 1;
        static char block[4096], back[4096];
        for (int r = 0; r < rounds; r++)
            for (int i = 0; i < files; i++) {
                memset(block, 'a' + (r + i) % 26, sizeof block);
                snprintf(tmp, sizeof tmp, "f.%d.%d.tmp", id, i);
                snprintf(name, sizeof name, "f.%d.%d", id, i);
                FILE *f = fopen(tmp, "w");
                if (!f || fwrite(block, sizeof block, 1, f) != 1 || fclose(f) != 0) die("cannot write", tmp);
                if (rename(tmp, name) != 0) die("cannot rename to", name);
                f = fopen(name, "r");
                if (!f || fread(back, sizeof back, 1, f) != 1 || memcmp(back, block, sizeof back)) die("bad", name);
                fclose(f);
            }
    } else {
        long mib = atol(argv[4]);
        size_t chunk = 4u << 20;
        char *buf = malloc(chunk);
        for (size_t i = 0; i < chunk; i++) buf[i] = (char)(i * 7 + rank);
        snprintf(name, sizeof name, "stream.%d", id);
        int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) die("cannot create", name);
        for (long left = mib << 20; left > 0; left -= (long)chunk)
            if (write(fd, buf, chunk) != (ssize_t)chunk) die("cannot write", name);
        if (fsync(fd) != 0 || close(fd) != 0) die("cannot close", name);
        free(buf);
    }
    double took = MPI_Wtime() - t0, slowest;
    MPI_Reduce(&took, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("fileview %.6f\n", slowest);
    MPI_Finalize();
    return 0;
}
