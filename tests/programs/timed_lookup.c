/* A run-time database read on every rank, as a quantum-chemistry code reads its settings (NWChem's rtdb_cget): the
 * value is looked up on rank 0 into a 32 KiB buffer on the stack, and the whole buffer is broadcast, though only
 * the string at its start was written.  The code times each phase with gettimeofday, as such codes do, right
 * before the lookup, or (argument `cycles`) with the time-stamp counter itself, as MD and quantum-chemistry codes
 * do for load balancing and profiling (`rdtsc`).  Natively harmless: the other ranks read the string up to its
 * end. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <x86intrin.h>

#define VALUE_MAX 32768

static const char *settings[][2] = {{"scf:thresh", "1e-8"}, {"basis:name", "6-31g"}, {"task:operation", "gradient"}};

/* the value of `key` on every rank, into `value` (at most n bytes); 0 if there is none */
static int lookup(const char *key, char *value, size_t n) {
    char buffer[VALUE_MAX];
    int rank, found = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        for (size_t i = 0; i < sizeof settings / sizeof *settings; i++)
            if (strcmp(settings[i][0], key) == 0) {
                snprintf(buffer, sizeof buffer, "%s", settings[i][1]);
                found = 1;
            }
    MPI_Bcast(&found, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!found) return 0;
    MPI_Bcast(buffer, VALUE_MAX, MPI_CHAR, 0, MPI_COMM_WORLD);
    snprintf(value, n, "%s", buffer);
    return 1;
}

static int by_cycles;

static double wall(void) {
    if (by_cycles) return (double)__rdtsc();
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return tv.tv_sec + 1e-6 * tv.tv_usec;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    by_cycles = argc > 1 && strcmp(argv[1], "cycles") == 0;
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double spent = 0;
    char value[256];
    for (size_t i = 0; i < sizeof settings / sizeof *settings; i++) {
        double t0 = wall();
        if (!lookup(settings[i][0], value, sizeof value)) MPI_Abort(MPI_COMM_WORLD, 1);
        spent += wall() - t0;
        printf("r%d: %s = %s\n", rank, settings[i][0], value);
    }
    double most;
    MPI_Reduce(&spent, &most, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) fprintf(stderr, "lookups took %.6f %s\n", most, by_cycles ? "cycles" : "s");
    MPI_Finalize();
    return 0;
}
