/* A proxy application's default build: it solves, then reports its time and memory, reducing the ranks' maximum
 * resident size (getrusage) to print the largest and the total.  Prints "rR: ..." lines. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#define N 200000

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double *a = malloc(N * sizeof *a), local = 0, sum;
    for (int i = 0; i < N; i++) local += (a[i] = (double)((i + rank) % 9));
    MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("r%d: sum %.1f\n", rank, sum);
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    long rss = usage.ru_maxrss, max_rss, total_rss;
    MPI_Reduce(&rss, &max_rss, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&rss, &total_rss, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("r0: memory max %ld KiB total %ld KiB\n", max_rss, total_rss);
    free(a);
    MPI_Finalize();
    return 0;
}
