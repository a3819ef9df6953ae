/* The SDR mode (echorun --mode sdr, docs/sdr.md): every copy is a replica that communicates, through the
 * replicated layer of this folder; it does not use the clone layer. */
#include "echo_sdr.h"

/* the layer's state first (echo_sdr_core.c), then what uses it: the world's communicator, the kills, the judge of
 * slow replicas (the core's setup calls none of them: they call the core) */
static void sdr_setup(void) {
    echo_sdr_setup();
    sdr_comm_add(sdr_comm_world());
    echo_kills_plan("sdr", 1, 0); /* its lines name the replica; a killed replica is not started again */
    echo_kills_arm(echo_epoch_now());
    sdr_slow_setup();
    echo_slow_setup();
}

static int owns_comm(MPI_Comm app) { return sdr_comm_of(app) != NULL; }

extern const struct echo_calls echo_calls_sdr; /* generated: preload/gen/gen_wrappers.py's MODES */

const echo_mode_t echo_mode_sdr = {
    .name = "sdr",
    .calls = &echo_calls_sdr,
    .setup = sdr_setup,
    .teardown = echo_sdr_finalize,
    .skips_finalize = echo_sdr_skips_finalize,
    .aborts = echo_sdr_aborts,
    .owns_request = sdr_is_request,
    .owns_comm = owns_comm,
};
