/* A computation seeded from its argument (deterministic: copies agree), or, without one, from the kernel's random
 * bytes, as std::random_device seeds a generator: each copy then sends other numbers, a real divergence that no
 * injection caused. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    unsigned seed = 0;
    if (argc > 1) {
        seed = (unsigned)atoi(argv[1]) + (unsigned)rank;
    } else {
        FILE *random = fopen("/dev/urandom", "rb");
        if (!random || fread(&seed, sizeof seed, 1, random) != 1) MPI_Abort(MPI_COMM_WORLD, 1);
        fclose(random);
    }
    srand(seed);
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
