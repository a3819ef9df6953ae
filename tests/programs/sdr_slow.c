/* Exclusion of slow SDR replicas: an iterative code whose odd ranks compute
 * twice as long as the even ones, so the even ranks wait for them every
 * iteration (halo exchange with both neighbours, a residual Allreduce).  A
 * slowed replica of an even rank holds back its replica world unless it is
 * excluded; once well again it catches up in the time its siblings wait.
 * Prints a checksum every 100 iterations and at the end. */
#include "battery.h"
#include <stdlib.h>

static double work(double x, long n) {
    for (long i = 0; i < n; i++) x = x * 0.9999999 + 1e-9 * (double)(i % 5);
    return x;
}

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 600;
    long n = argc > 2 ? atol(argv[2]) : 150000;
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    double x = rank + 1;
    for (int it = 0; it < iters; it++) {
        x = work(x, rank % 2 ? 2 * n : n);
        double from_left = 0, from_right = 0, sum = 0;
        MPI_Sendrecv(&x, 1, MPI_DOUBLE, right, 1, &from_left, 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        MPI_Sendrecv(&x, 1, MPI_DOUBLE, left, 2, &from_right, 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        x = 0.5 * x + 0.25 * (from_left + from_right);
        MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        x = 0.9 * x + 0.1 * sum / size;
        if (it % 100 == 99) SAY("iteration %d sum %.12e", it + 1, sum);
    }
    SAY("final %.12e", x);
    SAY("done");
    MPI_Finalize();
    return 0;
}
