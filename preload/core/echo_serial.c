/* One thread inside MPI at a time, under copies and SDR.
 *
 * Copies follow their representative call by call: each copy must make the same MPI calls, and read the same
 * clock readings, in the same order as its representative.  A program that calls MPI from several threads one at
 * a time (MPI_THREAD_SERIALIZED: an OpenMP code's calls from `omp single`, `omp master` or `critical` on whichever
 * thread gets there) keeps that order, so echo gives it the level it asks for.  A program whose threads are
 * inside MPI at the same time would be matched in a different order on each copy: the wrappers (generated,
 * gen_wrappers.py) claim the process's one slot at each application call, and a thread that finds another one
 * inside MPI stops the job naming both threads and their calls, rather than let the copies drift apart.
 *
 * The slot is one atomic word (the thread, and the call it is in or a clock reading), so a wrapper's claim costs
 * one compare-and-swap.  A clock reading that is shared with the copies (echo_clock.c, threaded programs) claims
 * it too, waiting for an MPI call in progress: the channel to the copies carries one message at a time. */
#define _GNU_SOURCE
#include "echo_internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

int echo_serial_on;

#define CLOCK_READING 0xffffffffu /* the call field of a slot held by a clock reading */
static _Atomic uint64_t slot;     /* 0 free, else thread id << 32 | function id (or CLOCK_READING) */

static uint64_t held_by(unsigned what) { return (uint64_t)(uint32_t)gettid() << 32 | what; }

static void pause_briefly(unsigned spins) {
    if (spins < 64) {
        sched_yield();
    } else {
        struct timespec nap = {0, 20000}; /* an MPI call in progress may block for long: do not spin on 2 cores */
        nanosleep(&nap, NULL);
    }
}

void echo_serial_setup(void) { echo_serial_on = (echo.cloned || echo.sdr) && !echo.reinit; }

/* at an application's MPI call: 1 if this thread took the slot (echo_serial_leave gives it back) */
int echo_serial_enter(int fn) {
    uint64_t mine = held_by((unsigned)fn);
    for (unsigned spins = 0;; spins++) {
        uint64_t seen = 0;
        if (atomic_compare_exchange_strong(&slot, &seen, mine)) return 1;
        if (seen >> 32 == mine >> 32) return 0; /* this thread already holds it (a call MPI made back into us) */
        unsigned what = (unsigned)(seen & 0xffffffffu);
        if (what != CLOCK_READING)
            echo_fatal("thread %u called %s while thread %u is inside %s: with copies, MPI must be called by one "
                       "thread at a time (MPI_THREAD_SERIALIZED), or the copies would match the calls in another "
                       "order than their representative; make the threads take turns (omp critical, a lock), or run "
                       "without --clones", (unsigned)(mine >> 32), echo_function_names[fn], (unsigned)(seen >> 32),
                       (int)what < echo_nfunctions ? echo_function_names[what] : "an MPI call");
        pause_briefly(spins); /* another thread is taking a clock reading: a moment */
    }
}

void echo_serial_leave(void) { atomic_store(&slot, 0); }

/* a clock reading to share with the copies: waits for the slot (an MPI call in progress, another reading) */
int echo_serial_claim_reading(void) {
    uint64_t mine = held_by(CLOCK_READING);
    for (unsigned spins = 0;; spins++) {
        uint64_t seen = 0;
        if (atomic_compare_exchange_strong(&slot, &seen, mine)) return 1;
        if (seen >> 32 == mine >> 32) return 0;
        pause_briefly(spins);
    }
}
