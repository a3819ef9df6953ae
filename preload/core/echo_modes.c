/* The one table of modes: the plan's "mode" picks one, else the copies do (clones or plain).  A new mode is a
 * folder with its echo_mode_t and a line here (docs/architecture.md). */
#include "echo_internal.h"

static void plain_setup(void) {
    echo_rank_model_setup();
    echo_roles_setup();
}

const echo_mode_t echo_mode_plain = {.name = "plain", .calls = &echo_calls_plain, .setup = plain_setup};

const echo_mode_t *echo_mode = &echo_mode_plain;
const struct echo_calls *echo_calls = &echo_calls_plain;

void echo_mode_choose(void) {
    echo_mode = echo.sdr ? &echo_mode_sdr : echo.reinit ? &echo_mode_reinit
              : echo.cloned ? &echo_mode_clone : &echo_mode_plain;
    echo_calls = echo_mode->calls;
}
