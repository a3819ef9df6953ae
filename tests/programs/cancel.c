/* `cancel stable|cancel`: each rank computes 100 values and sums them with
 * MPI_Allreduce. "cancel" computes ((1 + x) - 1) / x for tiny x, a catastrophic
 * cancellation whose result keeps few significant digits under a change of
 * rounding; "stable" sums positive terms and keeps nearly all of them. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int cancel = argc > 1 && !strcmp(argv[1], "cancel");
    double v[100], total[100];
    for (int i = 0; i < 100; i++) {
        volatile double x = (1.0 + i + rank) * 1e-13, one = 1.0;
        if (cancel) {
            v[i] = ((one + x) - one) / x;
        } else {
            double s = 0;
            for (int k = 1; k <= 1000; k++) s += 1.0 / ((double)k * k + x);
            v[i] = s;
        }
    }
    MPI_Allreduce(v, total, 100, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("r%d: first %.17g last %.17g\n", rank, v[0], v[99]);
    MPI_Finalize();
    return 0;
}
