/* The SDR mode (echorun --mode sdr, docs/sdr.md): every copy is a replica that communicates, through the
 * replicated layer of this folder; it does not use the clone layer. */
#include "echo_sdr.h"

static void sdr_setup(void) {
    echo_sdr_setup();
    echo_slow_setup();
}

/* SDR handles failures on its replicated communicators itself: the application's ULFM calls on them stop the job */
static MPI_Comm ulfm_comm(MPI_Comm app, const char *fn) {
    if (sdr_comm_of(app)) echo_unsupported(fn);
    return app;
}

extern const struct echo_calls echo_calls_sdr; /* generated: preload/gen/gen_wrappers.py's MODES */

const echo_mode_t echo_mode_sdr = {
    .name = "sdr",
    .calls = &echo_calls_sdr,
    .setup = sdr_setup,
    .teardown = echo_sdr_finalize,
    .skips_finalize = echo_sdr_skips_finalize,
    .owns_request = sdr_is_request,
    .ulfm_comm = ulfm_comm,
};
