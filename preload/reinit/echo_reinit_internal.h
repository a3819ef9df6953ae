/* The Reinit mode's own functions (reinit/), over the clone layer: the base reaches them only through
 * echo_mode_reinit (reinit/echo_reinit_mode.c). */
#ifndef ECHO_REINIT_INTERNAL_H
#define ECHO_REINIT_INTERNAL_H

#include "echo_clone.h"

/* ---- Reinit mode (echo_reinit.c) ---- */
int echo_reinit_is_child(void);      /* a process started again in place of a failed one */
void echo_reinit_setup(void);        /* after MPI_Init: the world echo can replace */
int echo_reinit_on_error(int rc);    /* a call failed: repair the world if a process failed */
void echo_reinit_internal_comm(MPI_Comm c); /* a communicator of echo's own on the world: revoke it too */
void echo_reinit_finalize(void);     /* MPI_Finalize after a repair: end without waiting for failed processes */
/* the call of the application this process is in (the wrappers set it; NULL outside one), and a count of the
 * calls it entered and left: the watchdog of failures MPI never reports (echo_reinit_watchdog.c) */
typedef struct { const char *name; unsigned long seq; } echo_reinit_call_t;
extern volatile echo_reinit_call_t echo_reinit_call;
void echo_reinit_watchdog_start(void); /* once the rank is known (a restarted process: once it joined) */
void echo_reinit_aborts(int errorcode); /* the application's MPI_Abort: the job ends with its code */
void echo_reinit_stop_note(const char *text); /* echo ended the job: echorun ends what is left (jobstop.py) */
extern int echo_reinit_windows;        /* the application made a window (the wrappers set it) */
int echo_reinit_can_restart(void);     /* inside MPI_Reinit: a failure returns to the restart point */
void echo_reinit_redeploy(const char *why) __attribute__((noreturn)); /* a program with windows: end as killed */
/* where failed ranks start again (echo_placement.c) */
void echo_placement_init(MPI_Comm world, int rank, int size);
void echo_placement_share(MPI_Comm inter, int root_side, int nchildren, int size);
int echo_placement_choose(const int *failed, int nfailed, int size, char (*out)[64], int *moved_rank);
int echo_placement_simulated(void);

#endif
