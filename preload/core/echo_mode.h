/* A mode of the library: what the base (process lifecycle, records, MPI_Init and MPI_Finalize, request and
 * ULFM handles) calls where the modes differ, so that it never names a mode's own functions (the layers:
 * docs/architecture.md).  One mode is chosen when the plan is read (echo_modes.c) and stays for the process.
 * A hook left NULL means the mode has nothing to do there. */
#ifndef ECHO_MODE_H
#define ECHO_MODE_H

#include "compat/echo_mpi.h"

typedef struct echo_mode {
    const char *name;                  /* the plan's "mode" value, or "clones" / "plain" */
    int (*restarted)(void);            /* this process replaces a failed one (its rank is known after MPI_Init) */
    void (*setup)(void);               /* right after MPI_Init, before the records open: the rank model */
    void (*teardown)(void);            /* before the real MPI_Finalize, once records and events are closed */
    void (*finalize_begins)(void);     /* first thing in MPI_Finalize (Reinit: may end the process there) */
    int (*skips_finalize)(void);       /* the real MPI_Finalize would wait forever: do not call it */
    int (*owns_request)(MPI_Request);  /* a request handle of the mode's own (Fortran handles: echo_requests.c) */
    int (*owns_comm)(MPI_Comm);        /* the mode handles failures on it itself (the application's ULFM calls) */
} echo_mode_t;

extern const echo_mode_t *echo_mode;   /* never NULL: the plain mode until the plan says otherwise */

/* after the plan is read (echo.sdr, echo.reinit, echo.cloned set): the mode of this process */
void echo_mode_choose(void);

/* the modes (one struct each, in its own folder) and the plain one: records and roles, no copies */
extern const echo_mode_t echo_mode_plain, echo_mode_clone, echo_mode_sdr, echo_mode_reinit;

/* what the plain and clone modes share at set-up (echo_process.c): the rank model read from the plan, then the
 * injectors and roles */
void echo_rank_model_setup(void);
void echo_roles_setup(void);

#endif
