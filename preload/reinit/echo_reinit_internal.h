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
/* where failed ranks start again (echo_placement.c) */
void echo_placement_init(MPI_Comm world, int rank, int size);
void echo_placement_share(MPI_Comm inter, int root_side, int nchildren, int size);
int echo_placement_choose(const int *failed, int nfailed, int size, char (*out)[64], int *moved_rank);
int echo_placement_simulated(void);

#endif
