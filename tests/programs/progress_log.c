/* A ring that logs its progress on standard output at every step, as solvers print their residuals: argv[1] steps
 * (default 1000); the final checksums reduced and printed at the end. Its output is most of what it writes. */
#include "battery.h"
#include <math.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    long steps = argc > 1 ? atol(argv[1]) : 1000;
    double value = rank + 1.0, checksum = 0.0;
    for (long step = 0; step < steps; step++) {
        double next = ring_step(value, step);
        SAY("step %ld residual %.6e", step, fabs(next - value));
        value = next;
        checksum += value;
    }
    ring_result(steps, value, checksum);
    MPI_Finalize();
    return 0;
}
