/* A code whose particles sit on some ranks only: the ranks that hold particles make their own communicator with
 * MPI_Comm_create_group (only they call it; the busiest, the highest rank, leads), reduce their energies and the
 * step time on it, and free it.  With the argument "even" only the even ranks hold particles. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define MAX_RANKS 64

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int even_only = argc > 1 && !strcmp(argv[1], "even");
    int holders[MAX_RANKS], n = 0;
    for (int r = size - 1; r >= 0 && n < MAX_RANKS; r--)
        if (!even_only || r % 2 == 0) holders[n++] = r;
    MPI_Group world, busy;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, n, holders, &busy);
    int me;
    MPI_Group_rank(busy, &me);
    if (me != MPI_UNDEFINED) {
        double t0 = MPI_Wtime();
        MPI_Comm particles;
        MPI_Comm_create_group(MPI_COMM_WORLD, busy, 7, &particles);
        int prank, psize;
        MPI_Comm_rank(particles, &prank);
        MPI_Comm_size(particles, &psize);
        double energy = 0;
        for (int step = 0; step < 5; step++) {
            double mine = (rank + 1) * 0.5 + step, sum = 0;
            MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, particles);
            energy += sum;
        }
        long long count = 100 + rank, total = 0;
        MPI_Reduce(&count, &total, 1, MPI_LONG_LONG, MPI_SUM, 0, particles);
        double elapsed = MPI_Wtime() - t0, slowest = 0;
        MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, particles);
        printf("r%d: particle rank %d of %d, energy %.1f\n", rank, prank, psize, energy);
        if (prank == 0) printf("r%d: %lld particles, step time %.6f s\n", rank, total, slowest);
        MPI_Comm_free(&particles);
    }
    MPI_Group_free(&busy);
    MPI_Group_free(&world);
    int done = 0, all = 0;
    MPI_Allreduce(&done, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("r%d: done\n", rank);
    MPI_Finalize();
    return 0;
}
