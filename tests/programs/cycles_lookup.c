/* A run-time database read on every rank (as timed_lookup.c), by a code that times its phases with the time-stamp
 * counter itself, as MD and quantum-chemistry codes do for load balancing and profiling (`rdtsc`, here
 * `__rdtsc()`): the value is looked up on rank 0 into a 32 KiB buffer on the stack and the whole buffer is
 * broadcast, though only the string at its start was written.  The counter is read right before the lookup, at
 * the depth the lookup's buffer then takes; the settings are printed once all are read.  Natively harmless: the
 * other ranks read the string up to its end. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
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

static __attribute__((noinline)) uint64_t cycles(void) { return __rdtsc(); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    enum { N = sizeof settings / sizeof *settings };
    uint64_t spent = 0;
    char value[N][256];
    for (size_t i = 0; i < N; i++) {
        uint64_t t0 = cycles();
        if (!lookup(settings[i][0], value[i], sizeof value[i])) MPI_Abort(MPI_COMM_WORLD, 1);
        spent += cycles() - t0;
    }
    for (size_t i = 0; i < N; i++) printf("r%d: %s = %s\n", rank, settings[i][0], value[i]);
    uint64_t most;
    MPI_Reduce(&spent, &most, 1, MPI_UINT64_T, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) fprintf(stderr, "lookups took %llu cycles\n", (unsigned long long)most);
    MPI_Finalize();
    return 0;
}
