/* A hybrid MPI + OpenMP code that collocates as threaded DFT codes do: the threads of each rank add every atom's Gaussian
 * onto one shared density grid (a smooth bump here) with `omp atomic` (two atoms' Gaussians overlap, so the grid points' sums are
 * made in the order the threads get there), then the ranks reduce the grid's total charge and the energy of the
 * density and rank 0 prints them.  With more than one thread the last bits of the sums may change from run to
 * run.  Prints "rR: ..." lines. */
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define POINTS 4096
#define ATOMS 64

int main(int argc, char **argv) {
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double *grid = calloc(POINTS, sizeof *grid);
#pragma omp parallel for schedule(dynamic, 1)
    for (int a = 0; a < ATOMS; a++) {
        double centre = (a * 61 + rank * 17) % POINTS, width = 40.0 + a % 7;
        for (int p = 0; p < POINTS; p++) {
            double d = (p - centre) / width, w = 1.0 - d * d / 36; /* a smooth bump, zero 6 widths out */
            if (w <= 0) continue;
#pragma omp atomic
            grid[p] += w * w * w / (1.0 + a);
        }
    }
    double mine[2] = {0, 0}, total[2];
    for (int p = 0; p < POINTS; p++) {
        mine[0] += grid[p];
        mine[1] += grid[p] * grid[p];
    }
    MPI_Allreduce(mine, total, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("r0: %d threads a rank: total charge %.17g, density energy %.17g\n", omp_get_max_threads(), total[0],
               total[1]);
    free(grid);
    MPI_Finalize();
    return 0;
}
