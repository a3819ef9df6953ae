/* Compute phases, made slow or tested (docs/perf.md).
 *
 * The slowdown injector (echorun --inject slow:rank=R,copy=K,factor=F[,from=N][,to=M]):
 * one process becomes F times slower in its compute phases, as on a slow or
 * shared core: before each MPI call from its Nth to its Mth, it sleeps for F-1
 * times the compute phase that just ended: the cycles it loses go to someone
 * outside the job, as on a shared core (spinning would take them from the
 * job's other processes when they share cores, a different fault).  The pause
 * comes before the call's record starts, so the records see a longer compute
 * phase, not a longer MPI call.  Plan line: "slow <rank> <copy> <factor> <from> <to>" (to 0: to the end).
 *
 * Explicit tests (echorun --perf-tests N), for runs without copies: before
 * every Nth call a process times a short fixed computation (DGRP's test) and
 * appends the seconds it took to RUN_DIR/perf/<real rank>.tests; echo/perf.py
 * compares the processes' kth tests.  A slowed process is slowed in its tests
 * too (a slow core is slow for everything).  Plan line: "perf_tests <N>". */
#include "echo_internal.h"
#include "echo_records.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int echo_slow_on; /* the injector or the tests are on: the wrappers call in */
static int slowed;
static double factor;
static unsigned long test_every;
static int tests_fd = -1;
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
    if (v && sscanf(v, "%d %d %lf %lu %lu", &rank, &copy, &factor, &from_call, &to_call) == 5 &&
        rank == echo.app_rank && copy == echo.copy && factor > 1.0)
        slowed = 1;
    v = echo_plan_value("perf_tests");
    if (v && (test_every = strtoul(v, NULL, 10)) > 0) {
        char path[1200];
        snprintf(path, sizeof path, "%s/perf", echo.run_dir);
        mkdir(path, 0755);
        snprintf(path, sizeof path, "%s/perf/%d.tests", echo.run_dir, echo.real_rank);
        tests_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
    }
    clock_gettime(CLOCK_MONOTONIC, &last_exit);
    echo_slow_on = slowed || tests_fd >= 0;
}

/* lose (factor - 1) x `seconds`, while the injected slowdown is on */
static void lose_time(double seconds) {
    if (!slowed || calls < from_call || (to_call && calls >= to_call)) return;
    static int said;
    if (!said) { /* the slowdown began: echorun compares the plan's injections with these events */
        said = 1;
        char detail[96];
        snprintf(detail, sizeof detail, "compute phases made %g times longer from here", factor);
        echo_event("injection", "slow", echo_record_seq(), -1, -1, 0, echo.copy, -1, detail);
    }
    double extra = (factor - 1.0) * seconds;
    struct timespec pause = {(time_t)extra, (long)((extra - (double)(time_t)extra) * 1e9)};
    while (nanosleep(&pause, &pause) != 0) {
    }
}

/* DGRP's test: the same fixed work on every process (about a millisecond on a current core) */
static void run_test(void) {
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    volatile double x = 1.0;
    for (int i = 0; i < 300000; i++) x = x * 1.0000001 + 1e-9;
    lose_time(since(&start));
    char line[64];
    int n = snprintf(line, sizeof line, "%.9f\n", since(&start));
    if (write(tests_fd, line, (size_t)n) < 0) tests_fd = -1;
}

void echo_slow_before(void) {
    calls++;
    lose_time(since(&last_exit));
    if (tests_fd >= 0 && calls % test_every == 0) run_test();
}

void echo_slow_after(void) { clock_gettime(CLOCK_MONOTONIC, &last_exit); }
