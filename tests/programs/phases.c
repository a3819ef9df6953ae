/* Compute phases of a few milliseconds between collectives, for the
 * performance-fault tests: the same work in every copy, so copies' phase times
 * differ only by the cores and hosts under them (or an injected slowdown). */
#include "battery.h"
#include <stdlib.h>

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 40;
    double acc = rank;
    for (int it = 0; it < iters; it++) {
        for (long i = 0; i < 2000000; i++) acc = acc * 0.999999 + 1e-7 * (double)(i % 7);
        double sum = 0;
        MPI_Allreduce(&acc, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        acc = sum / size;
    }
    SAY("result %.9f", acc);
    SAY("done");
    MPI_Finalize();
    return 0;
}
