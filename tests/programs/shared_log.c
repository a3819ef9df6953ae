/* Every rank appends its progress to one shared log, as codes that keep a run log do (each rank in turn, between
 * barriers), and rank 0 writes the result file; then prints what it wrote.  Usage: shared_log DIR (its files go
 * there). */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc < 2 || chdir(argv[1]) != 0) { perror("shared_log DIR"); MPI_Abort(MPI_COMM_WORLD, 2); }
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double x = rank + 1, sum = 0;
    for (int step = 0; step < 5; step++) {
        MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        x = sum / size + rank;
        for (int r = 0; r < size; r++) {
            if (r == rank) {
                FILE *log = fopen("run.log", "a");
                if (!log) { perror("run.log"); MPI_Abort(MPI_COMM_WORLD, 1); }
                fprintf(log, "step %d rank %d sum %.6f\n", step, rank, sum);
                fclose(log);
            }
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    if (rank == 0) {
        FILE *out = fopen("result.txt", "w");
        fprintf(out, "%.12f\n", sum);
        fclose(out);
        printf("r0: sum %.12f\n", sum);
    }
    MPI_Finalize();
    return 0;
}
