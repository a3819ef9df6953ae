/* The time-stamp counter's trap on each thread (echo_tsc_trap.c): flags that the fault's handler and its setup
 * (echo_tsc.c) read and set too. */
#ifndef ECHO_TSC_TRAP_H
#define ECHO_TSC_TRAP_H

#include "echo_internal.h"

extern int echo_tsc_trapping;         /* the handler is installed (echo_tsc_setup); echo_tsc_trapped: echo_internal.h */
extern ECHO_TLS int echo_tsc_in_call; /* this thread is inside an application's MPI call (echo_tsc_enter) */
extern ECHO_TLS int echo_tsc_lifted;  /* ... and the counter read freely since its first read in it */
extern ECHO_TLS int echo_tsc_armed;   /* this thread's flag is known set (its own, or inherited from its creator) */

#endif
