/* `exit_status STATUS [RANK]`: a small iterative solver, then every rank (or only RANK; -1: all) returns
 * STATUS from main after MPI_Finalize, as a code that reports "did not converge" through its exit status does. */
#include "battery.h"
#include <stdlib.h>

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    int status = argc > 1 ? atoi(argv[1]) : 3, failing = argc > 2 ? atoi(argv[2]) : -1;
    double x = rank + 1, sum = 0, t0 = MPI_Wtime();
    for (int it = 0; it < 200; it++) {
        MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        x = 0.5 * (x + sum / size);
    }
    double elapsed = MPI_Wtime() - t0, slowest;
    MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    SAY("x %.6f", x);
    if (rank == 0) fprintf(stderr, "solver: %.3f ms\n", slowest * 1e3);
    MPI_Finalize();
    return failing < 0 || failing == rank ? status : 0;
}
