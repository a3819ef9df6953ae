/* A ring that runs for argv[1] steps, after which rank argv[2] is ended by SIGKILL before it reduces its results, as
 * the kernel's OOM killer or a batch system's memory limit ends a process: no handler, no atexit, no word. */
#include "battery.h"
#include <signal.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    long steps = argc > 1 ? atol(argv[1]) : 1000;
    int victim = argc > 2 ? atoi(argv[2]) : 1;
    double value = rank + 1.0, from_left = 0.0, checksum = 0.0;
    for (long step = 0; step < steps; step++) {
        MPI_Sendrecv(&value, 1, MPI_DOUBLE, (rank + 1) % size, 7, &from_left, 1, MPI_DOUBLE,
                     (rank + size - 1) % size, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        value = 0.5 * (value + from_left) + 1e-3 * (double)(step % 17);
        checksum += value;
    }
    if (rank == victim) raise(SIGKILL); /* the results' buffers were one allocation too many */
    double total = 0.0;
    MPI_Allreduce(&checksum, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    SAY("%ld steps, value %.9f, checksum %.9f, total %.9f", steps, value, checksum, total);
    MPI_Finalize();
    return 0;
}
