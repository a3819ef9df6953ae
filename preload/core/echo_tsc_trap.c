/* The time-stamp counter's trap on each thread (echo_tsc.c traps the application's `rdtsc` and emulates it in a
 * SIGSEGV handler): lifted for the rest of an MPI call once something in it read the counter (the handler), set
 * again when the call returns, held by echo's own work outside the application's calls (the clock's exchange of
 * readings, echo_clock.c, which the handler shares the application's readings through), lifted for a process the
 * program starts (echo_tsc_children.c), and off at MPI_Finalize.  Flags and system calls only, below the handler
 * and the exchange that both use them. */
#define _GNU_SOURCE
#include "echo_records.h"
#include "echo_tsc_trap.h"

#include <sys/prctl.h>

int echo_tsc_trapped; /* between MPI_Init and MPI_Finalize the application's counter faults */

#if defined(__x86_64__) && defined(PR_SET_TSC)
int echo_tsc_trapping;
ECHO_TLS int echo_tsc_in_call;
ECHO_TLS int echo_tsc_lifted;
ECHO_TLS int echo_tsc_armed;

int echo_tsc_lift_for_child(void) {
    int state = 0;
    if (!echo_tsc_trapping || prctl(PR_GET_TSC, &state, 0, 0, 0) != 0 || state != PR_TSC_SIGSEGV) return 0;
    prctl(PR_SET_TSC, PR_TSC_ENABLE, 0, 0, 0);
    return 1;
}

void echo_tsc_trap_again(int lifted) {
    if (lifted) prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0);
}

void echo_tsc_leave(void) {
    echo_tsc_in_call = echo_ticks_by_kernel = 0;
    if (!echo_tsc_lifted) return;
    echo_tsc_lifted = 0;
    if (echo_tsc_trapped) prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0); /* not after MPI_Finalize */
}

/* Echo's own work outside an application's MPI call (sharing a clock reading with the copies, reading MPI's
 * clock) calls MPI, which may read the counter many times while it waits: as inside an application's call, the
 * first read lifts the trap for the rest of it, or `lift_now` lifts it at once (two system calls, less than a
 * fault, where the counter is read for sure).  Nests in a call or in a fault's emulation (the flag already lifted)
 * as nothing.  1: held, echo_tsc_release sets the trap again. */
int echo_tsc_hold(int lift_now) {
    if (!echo_tsc_trapped || echo_tsc_in_call || !echo_tsc_armed) return 0;
    echo_tsc_in_call = 1;
    if (lift_now) {
        prctl(PR_SET_TSC, PR_TSC_ENABLE, 0, 0, 0);
        echo_tsc_lifted = 1;
    }
    return 1;
}

void echo_tsc_release(int held) {
    if (!held) return;
    echo_tsc_in_call = 0;
    if (!echo_tsc_lifted) return;
    echo_tsc_lifted = 0;
    if (echo_tsc_trapped) prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0);
}

/* at MPI_Finalize: this thread reads the counter freely again; threads it started stay trapped, and the handler
 * stays to give them their real counter */
void echo_tsc_teardown(void) {
    if (!echo_tsc_trapping) return;
    echo_tsc_trapped = 0;
    prctl(PR_SET_TSC, PR_TSC_ENABLE, 0, 0, 0);
}
#else
int echo_tsc_lift_for_child(void) { return 0; }
void echo_tsc_trap_again(int lifted) { (void)lifted; }
void echo_tsc_teardown(void) {}
void echo_tsc_leave(void) {}
int echo_tsc_hold(int lift_now) { (void)lift_now; return 0; }
void echo_tsc_release(int held) { (void)held; }
#endif
