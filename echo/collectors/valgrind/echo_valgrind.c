/* Valgrind slice collector: under `--valgrind-slice callgrind:K`, copy k (1..K)
 * of every rank runs callgrind with instrumentation off at start and turns it
 * on only in the epochs it owns: epoch e = call number / N, owned when
 * e mod K == k - 1.  The union of the K slices covers the run once.
 *
 * Plan keys: "valgrind_slice <tool> <K> <N>"; this copy's role "callgrind-slice-<k-1>". */
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>

#include "echo_internal.h"
#include "echo_records.h"

static int slice, nslices, on;
static uint64_t epoch_calls, epoch = (uint64_t)-1;

static void on_enter(void) {
    uint64_t e = echo_record_seq() / epoch_calls;
    if (e == epoch) return;
    epoch = e;
    int mine = (int)(e % (uint64_t)nslices) == slice;
    if (mine && !on) CALLGRIND_START_INSTRUMENTATION;
    if (!mine && on) CALLGRIND_STOP_INSTRUMENTATION;
    on = mine;
}

static void on_finish(void) {
    if (on) CALLGRIND_STOP_INSTRUMENTATION;
    on = 0;
}

void echo_valgrind_init(void) {
    const char *spec = echo_plan_value("valgrind_slice");
    if (!spec || strncmp(echo.role, "callgrind-slice-", 16) != 0) return;
    slice = atoi(echo.role + 16);
    const char *k = strchr(spec, ' ');
    nslices = k ? atoi(k + 1) : 1;
    const char *n = k ? strchr(k + 1, ' ') : NULL;
    epoch_calls = n ? (uint64_t)atoll(n + 1) : 100;
    if (nslices < 1 || epoch_calls < 1) return;
    echo_hooks_subscribe(&(echo_hooks_t){.enter = on_enter, .finish = on_finish});
    on_enter(); /* the epoch of MPI_Init itself */
}
