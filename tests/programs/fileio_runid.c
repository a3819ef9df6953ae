/* A code whose log starts with a random id of its run, as codes that name each run by a UUID do: a header that
 * differs in every process (each draws its own random bytes from the kernel), then its results.
 * Usage: fileio_runid DIR */
#include <mpi.h>
#include <stdio.h>
#include <stdint.h>

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
    uint64_t id = 0;
    FILE *random = fopen("/dev/urandom", "rb");
    if (!random || fread(&id, sizeof id, 1, random) != 1) MPI_Abort(MPI_COMM_WORLD, 1);
    fclose(random);
    fprintf(log, "log of rank %d, run %016llx\n", rank, (unsigned long long)id);
    double local = 1.5 * (rank + 1), total = 0;
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    fprintf(log, "total %.6f\n", total);
    fclose(log);
    printf("r%d: total %.6f\n", rank, total);
    MPI_Finalize();
    return 0;
}
