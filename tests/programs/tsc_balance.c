/* Load balancing the way MD codes do it: each rank counts the cycles of its force loop with the time-stamp
 * counter (rdtsc), the ranks gather the counts and rebalance their share of the atoms by them, and the total
 * is printed.  Prints "rR: ..." lines. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <x86intrin.h>

#define ATOMS 40000

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    unsigned long long *cycles = malloc(size * sizeof *cycles);
    int mine = ATOMS / size;
    double energy = 0;
    for (int step = 0; step < 8; step++) {
        unsigned long long c0 = __rdtsc();
        double e = 0;
        for (int i = 0; i < mine; i++) e += 1.0 / (1.0 + (double)((i * 7 + step + rank) % 101));
        unsigned long long own = __rdtsc() - c0;
        MPI_Allgather(&own, 1, MPI_UNSIGNED_LONG_LONG, cycles, 1, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
        unsigned long long total = 0;
        for (int r = 0; r < size; r++) total += cycles[r];
        /* the slower a rank was, the fewer atoms it gets next step */
        mine = (int)(ATOMS / size * (2.0 - (double)cycles[rank] * size / (double)total));
        if (mine < 1) mine = 1;
        double sum;
        MPI_Allreduce(&e, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        energy += sum;
        if (rank == 0) printf("r0: step %d cycles %llu\n", step, total);
    }
    printf("r%d: atoms %d\n", rank, mine);
    free(cycles);
    MPI_Finalize();
    return 0;
}
