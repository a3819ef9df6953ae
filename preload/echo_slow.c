/* The slowdown injector (echorun --inject slow:rank=R,copy=K,factor=F[,from=N][,to=M]):
 * one process becomes F times slower in its compute phases, as on a slow or
 * shared core: before each MPI call from its Nth to its Mth, it keeps its core
 * busy for F-1 times the compute phase that just ended.  The spin comes before
 * the call's record starts, so the records see a longer compute phase, not a
 * longer MPI call.  Plan line: "slow <rank> <copy> <factor> <from> <to>" (to 0: to the end). */
#include "echo_internal.h"
#include "echo_records.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int echo_slow_on;
static double factor;
static unsigned long from_call, to_call, calls;
static struct timespec last_exit;

static double since(const struct timespec *t) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t->tv_sec) + (double)(now.tv_nsec - t->tv_nsec) * 1e-9;
}

void echo_slow_setup(void) {
    const char *v = echo_plan_value("slow");
    int rank, copy;
    if (!v || sscanf(v, "%d %d %lf %lu %lu", &rank, &copy, &factor, &from_call, &to_call) != 5) return;
    if (rank != echo.app_rank || copy != echo.copy || factor <= 1.0) return;
    clock_gettime(CLOCK_MONOTONIC, &last_exit);
    echo_slow_on = 1;
}

void echo_slow_before(void) {
    calls++;
    if (calls < from_call || (to_call && calls >= to_call)) return;
    double extra = (factor - 1.0) * since(&last_exit);
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    while (since(&start) < extra) {
    }
}

void echo_slow_after(void) { clock_gettime(CLOCK_MONOTONIC, &last_exit); }
