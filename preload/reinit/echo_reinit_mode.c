/* The Reinit mode (echorun --mode reinit, docs/reinit.md): one copy of each rank in a world echo owns, as the
 * clone layer makes it, repaired after a failure (echo_reinit.c). */
#include "echo_reinit_internal.h"

/* the watchdog (echo_reinit_watchdog.c) repairs through echo_reinit.c: started here, once the rank is known, so
 * that echo_reinit.c, which it calls, does not call it back */
static void reinit_setup(void) {
    echo_reinit_setup(); /* a restarted process learns its rank here */
    echo_reinit_watchdog_start();
}

/* one process per rank: the application's ULFM calls act on the real communicator behind its handle */
static MPI_Comm real_comm(MPI_Comm app) {
    echo_comm_t *c = echo.cloned ? echo_comm_find(app) : NULL;
    return c ? c->real : app;
}

extern const struct echo_calls echo_calls_reinit; /* generated: preload/gen/gen_wrappers.py's MODES */

const echo_mode_t echo_mode_reinit = {
    .name = "reinit",
    .calls = &echo_calls_reinit,
    .restarted = echo_reinit_is_child,
    .setup = reinit_setup,
    .teardown = echo_clone_teardown,
    .finalize_begins = echo_reinit_finalize,
    .aborts = echo_reinit_aborts,
    .real_comm = real_comm,
};
