/* Each rank sums its share of a harmonic series, keeps its partial sum in a file of its own and reads it back
 * (a checkpoint, as codes do), prints it, and rank 0 prints the total; the slowest rank's time goes to stderr. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double t0 = MPI_Wtime();
    double part = 0.0;
    for (int i = rank; i < 200000; i += size) part += 1.0 / (i + 1);

    char name[64];
    snprintf(name, sizeof name, "partial_sums.%d.txt", rank);
    FILE *f = fopen(name, "w");
    if (!f) { perror(name); MPI_Abort(MPI_COMM_WORLD, 1); }
    fprintf(f, "%.17g\n", part);
    fclose(f);
    double back = 0.0;
    f = fopen(name, "r");
    if (!f || fscanf(f, "%lg", &back) != 1) { fprintf(stderr, "r%d: cannot read %s back\n", rank, name); MPI_Abort(MPI_COMM_WORLD, 1); }
    fclose(f);
    remove(name);

    double total = 0.0, took = MPI_Wtime() - t0, slowest = 0.0;
    MPI_Reduce(&back, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&took, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    printf("r%d: partial sum %.9f\n", rank, part);
    if (rank == 0) {
        printf("r0: total %.9f\n", total);
        fprintf(stderr, "slowest rank: %.3f s\n", slowest);
    }
    MPI_Finalize();
    return 0;
}
