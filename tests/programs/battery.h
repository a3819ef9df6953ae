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
/* "r<rank>: what: v0 v1 ..." */
__attribute__((unused)) static void print_ints(const char *what, const int *v, int n) {
    printf("r%d: %s:", rank, what);
    for (int i = 0; i < n; i++) printf(" %d", v[i]);
    printf("\n");
}
#endif
