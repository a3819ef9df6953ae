/* A computation seeded from its argument (deterministic: copies agree), or, without one, from the process id,
 * as a program with an unseeded random generator would be: each copy then sends other numbers, a real
 * divergence that no injection caused. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    srand(argc > 1 ? (unsigned)atoi(argv[1]) + (unsigned)rank : (unsigned)getpid());
    double sum = 0;
    for (int step = 0; step < 30; step++) {
        double local = rand() / (double)RAND_MAX;
        MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    printf("r%d: sum %.6f\n", rank, sum);
    printf("r%d: done\n", rank);
    MPI_Finalize();
    return 0;
}
