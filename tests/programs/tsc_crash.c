/* A code that reads the time-stamp counter, and crashes: `tsc_crash RANK [handler]` makes that rank dereference
 * a bad pointer in the middle of its steps.  With `handler` it first installs its own crash reporter for SIGSEGV
 * after MPI_Init (as codes that print where they died do), which prints "rR: caught signal 11" and exits 3.
 * Prints "rR: ..." lines. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <x86intrin.h>

static int rank;

static void report(int sig) {
    char line[64];
    int n = snprintf(line, sizeof line, "r%d: caught signal %d\n", rank, sig);
    if (write(1, line, (size_t)n) < 0) _exit(4);
    _exit(3);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int target = argc > 1 ? atoi(argv[1]) : -1;
    if (argc > 2 && strcmp(argv[2], "handler") == 0) signal(SIGSEGV, report);
    volatile int *bad = (volatile int *)(argc > 99 ? argv : NULL);
    unsigned long long cycles = 0, total;
    for (int step = 0; step < 6; step++) {
        unsigned long long c0 = __rdtsc();
        if (step == 3 && rank == target) *bad = 1;
        cycles += __rdtsc() - c0;
        MPI_Allreduce(&cycles, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    }
    printf("r%d: done\n", rank);
    MPI_Finalize();
    return 0;
}
