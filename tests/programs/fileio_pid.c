/* A code whose log starts with the process that wrote it, as many production codes' logs do ("process 4242 on
 * node12"): a header that differs in every process of a run, then its results.  Usage: fileio_pid DIR */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char path[512];
    snprintf(path, sizeof path, "%s/md.%d.log", argc > 1 ? argv[1] : ".", rank);
    FILE *log = fopen(path, "w");
    if (!log) {
        perror(path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    fprintf(log, "log of rank %d, process %d\n", rank, (int)getpid());
    double local = 1.5 * (rank + 1), total = 0;
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    fprintf(log, "total %.6f\n", total);
    fclose(log);
    printf("r%d: total %.6f\n", rank, total);
    MPI_Finalize();
    return 0;
}
