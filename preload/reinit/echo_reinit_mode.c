/* The Reinit mode (echorun --mode reinit, docs/reinit.md): one copy of each rank in a world echo owns, as the
 * clone layer makes it, repaired after a failure (echo_reinit.c). */
#include "echo_internal.h"

static void reinit_setup(void) { echo_reinit_setup(); /* a restarted process learns its rank here */ }

const echo_mode_t echo_mode_reinit = {
    .name = "reinit",
    .restarted = echo_reinit_is_child,
    .setup = reinit_setup,
    .teardown = echo_clone_teardown,
    .finalize_begins = echo_reinit_finalize,
};
