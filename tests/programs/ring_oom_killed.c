/* A ring that runs for argv[1] steps, after which rank argv[2] is ended by SIGKILL before it reduces its results, as
 * the kernel's OOM killer or a batch system's memory limit ends a process: no handler, no atexit, no word. */
#include "battery.h"
#include <signal.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    long steps = argc > 1 ? atol(argv[1]) : 1000;
    int victim = argc > 2 ? atoi(argv[2]) : 1;
    double value = rank + 1.0, checksum = 0.0;
    for (long step = 0; step < steps; step++) {
        value = ring_step(value, step);
        checksum += value;
    }
    if (rank == victim) raise(SIGKILL); /* the results' buffers were one allocation too many */
    ring_result(steps, value, checksum);
    MPI_Finalize();
    return 0;
}
