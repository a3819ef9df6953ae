/* A ring that runs for argv[1] steps (default 1000): each rank passes its value on and mixes in what came from the
 * left; the checksums are reduced and printed at the end, as a simulation prints them.  Many small calls: its record
 * files grow all the time. */
#include "battery.h"
#include <stdlib.h>

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    long steps = argc > 1 ? atol(argv[1]) : 1000;
    double value = rank + 1.0, checksum = 0.0;
    for (long step = 0; step < steps; step++) {
        value = ring_step(value, step);
        checksum += value;
    }
    ring_result(steps, value, checksum);
    MPI_Finalize();
    return 0;
}
