/* A ring that logs its progress on standard output at every step, as solvers print their residuals: argv[1] steps
 * (default 1000); the final checksums reduced and printed at the end. Its output is most of what it writes. */
#include "battery.h"
#include <math.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    long steps = argc > 1 ? atol(argv[1]) : 1000;
    double value = rank + 1.0, from_left = 0.0, checksum = 0.0;
    for (long step = 0; step < steps; step++) {
        MPI_Sendrecv(&value, 1, MPI_DOUBLE, (rank + 1) % size, 7, &from_left, 1, MPI_DOUBLE,
                     (rank + size - 1) % size, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double next = 0.5 * (value + from_left) + 1e-3 * (double)(step % 17);
        SAY("step %ld residual %.6e", step, fabs(next - value));
        value = next;
        checksum += value;
    }
    double total = 0.0;
    MPI_Allreduce(&checksum, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    SAY("%ld steps, value %.9f, checksum %.9f, total %.9f", steps, value, checksum, total);
    MPI_Finalize();
    return 0;
}
