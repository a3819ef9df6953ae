/* Shared by the battery's C programs: every line a rank prints starts with
 * "r<rank>: ", so the tests can group output by rank and compare copies. */
#ifndef BATTERY_H
#define BATTERY_H
#include <mpi.h>
#include <stdio.h>

static int rank, size;
#define SAY(...) do { printf("r%d: ", rank); printf(__VA_ARGS__); printf("\n"); } while (0)

__attribute__((unused)) static void battery_init(int *argc, char ***argv) {
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
}
/* One step of the battery's ring programs: each rank passes its value on and mixes in what came from the left. */
__attribute__((unused)) static double ring_step(double value, long step) {
    double from_left = 0.0;
    MPI_Sendrecv(&value, 1, MPI_DOUBLE, (rank + 1) % size, 7, &from_left, 1, MPI_DOUBLE, (rank + size - 1) % size, 7,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return 0.5 * (value + from_left) + 1e-3 * (double)(step % 17);
}
/* the ring's result: its checksums reduced and printed, as a simulation prints them at the end */
__attribute__((unused)) static void ring_result(long steps, double value, double checksum) {
    double total = 0.0;
    MPI_Allreduce(&checksum, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    SAY("%ld steps, value %.9f, checksum %.9f, total %.9f", steps, value, checksum, total);
}
/* "r<rank>: what: v0 v1 ..." */
__attribute__((unused)) static void print_ints(const char *what, const int *v, int n) {
    printf("r%d: %s:", rank, what);
    for (int i = 0; i < n; i++) printf(" %d", v[i]);
    printf("\n");
}
#endif
