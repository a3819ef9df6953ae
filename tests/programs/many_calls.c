/* A program that makes many MPI calls (argv[1] of them, default 100000): for
 * the bound on record files. */
#include "battery.h"
#include <stdlib.h>

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    long n = argc > 1 ? atol(argv[1]) : 100000;
    int r = 0;
    for (long i = 0; i < n; i++) MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Barrier(MPI_COMM_WORLD);
    SAY("done");
    MPI_Finalize();
    return 0;
}
