/* A mode of the library: what the base (process lifecycle, records, MPI_Init and MPI_Finalize, request and
 * ULFM handles) calls where the modes differ, so that it never names a mode's own functions (the layers:
 * docs/architecture.md).  One mode is chosen when the plan is read (echo_modes.c) and stays for the process.
 * A hook left NULL means the mode has nothing to do there. */
#ifndef ECHO_MODE_H
#define ECHO_MODE_H

#include "compat/echo_mpi.h"

/* a mode's dispatch table: what each MPI call does in that mode, one entry a function (generated with the
 * wrappers from preload/gen/gen_wrappers.py's MODES; its layout depends on the mpi.h, so only wrappers.c sees it) */
struct echo_calls;

typedef struct echo_mode {
    const char *name;                  /* the plan's "mode" value, or "clones" / "plain" */
    const struct echo_calls *calls;    /* its dispatch table (echo_calls_<mode>, generated) */
    int (*restarted)(void);            /* this process replaces a failed one (its rank is known after MPI_Init) */
    void (*setup)(void);               /* right after MPI_Init, before the records open: the rank model */
    void (*teardown)(void);            /* before the real MPI_Finalize, once records and events are closed */
    void (*finalize_begins)(void);     /* first thing in MPI_Finalize (Reinit: may end the process there) */
    int (*skips_finalize)(void);       /* the real MPI_Finalize would wait forever: do not call it */
    void (*aborts)(int errorcode);     /* the application's MPI_Abort, before the real one (SDR: the job's end) */
    void (*exits)(int status);         /* the program's exit() with a non-zero status before MPI_Finalize */
    int (*owns_request)(MPI_Request);  /* a request handle of the mode's own (Fortran handles: echo_requests.c) */
    /* the application's ULFM calls (core/echo_ulfm.c): on a communicator the mode owns they stop the job (SDR
     * handles failures itself; a copy is no member of what its representative would revoke); real_comm: the real
     * communicator behind an application's handle they act on instead (Reinit) */
    int (*owns_comm)(MPI_Comm);
    MPI_Comm (*real_comm)(MPI_Comm);
} echo_mode_t;

extern const echo_mode_t *echo_mode;   /* never NULL: the plain mode until the plan says otherwise */
/* echo_mode->calls, kept apart: every wrapper reads it, and one load is cheaper than two */
extern const struct echo_calls *echo_calls;
extern const struct echo_calls echo_calls_plain;

/* after the plan is read (echo.sdr, echo.reinit, echo.cloned set): the mode of this process */
void echo_mode_choose(void);

/* the modes (one struct each, in its own folder) and the plain one: records and roles, no copies */
extern const echo_mode_t echo_mode_plain, echo_mode_clone, echo_mode_sdr, echo_mode_reinit;

/* what the plain and clone modes share at set-up: the rank model read from the plan (echo_plan.c), then the
 * injectors and roles (echo_modes.c) */
void echo_rank_model_setup(void);
void echo_roles_setup(void);

#endif
