/* PAPI collector: this copy counts its own set of events, exactly (no
 * multiplexing), from MPI_Init to MPI_Finalize.  At every intercepted call the
 * set is read on entry and on exit; the record of the call gets two slots per
 * event: the delta of the compute phase before the call ("EV>") and of the call
 * itself ("EV@").  Totals and the cost of one read go to the metrics.
 *
 * Plan keys: "papi_set <copy> EV1,EV2,..." (one line per copy that counts). */
#define _GNU_SOURCE
#include <papi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "echo_internal.h"
#include "echo_records.h"

#define MAX_EVENTS (ECHO_REC_MAX_SLOTS / 2)

static int eventset = PAPI_NULL, nevents, started;
static char names[MAX_EVENTS][PAPI_MAX_STR_LEN];
static char units[MAX_EVENTS][PAPI_MIN_STR_LEN];
static long long last[MAX_EVENTS], entry[MAX_EVENTS], now[MAX_EVENTS];

static void on_enter(void) {
    if (!started || PAPI_read(eventset, now) != PAPI_OK) return;
    uint64_t *slot = echo_record_slots();
    for (int i = 0; i < nevents; i++) {
        slot[2 * i] = (uint64_t)(now[i] - last[i]);
        entry[i] = now[i];
    }
}

static void on_leave(void) {
    if (!started || PAPI_read(eventset, now) != PAPI_OK) return;
    uint64_t *slot = echo_record_slots();
    for (int i = 0; i < nevents; i++) {
        slot[2 * i + 1] = (uint64_t)(now[i] - entry[i]);
        last[i] = now[i];
    }
}

static void on_finish(void) {
    if (!started) return;
    long long total[MAX_EVENTS];
    PAPI_stop(eventset, total);
    started = 0;
    char name[PAPI_MAX_STR_LEN + 16];
    for (int i = 0; i < nevents; i++) {
        snprintf(name, sizeof name, "papi %.100s", names[i]);
        echo_metric(name, (double)total[i], units[i]);
    }
}

/* The unit PAPI gives for an event; where it gives none, the perf_event software clocks count nanoseconds
 * (perf_event_open(2): PERF_COUNT_SW_CPU_CLOCK and TASK_CLOCK), and everything else counts occurrences. */
static void event_unit(const char *event, char *unit, size_t size) {
    int code;
    PAPI_event_info_t info;
    if (PAPI_event_name_to_code(event, &code) == PAPI_OK && PAPI_get_event_info(code, &info) == PAPI_OK &&
        info.units[0]) {
        snprintf(unit, size, "%s", info.units);
        return;
    }
    const char *colon = strstr(event, "::"), *base = colon ? colon + 2 : event;
    size_t n = strcspn(base, ":"); /* without qualifiers (":u=1") */
    int clock = (n == 10 && !strncmp(base, "TASK-CLOCK", n)) || (n == 9 && !strncmp(base, "CPU-CLOCK", n));
    snprintf(unit, size, "%s", clock ? "ns" : "count");
}

static void unavailable(const char *event, int rc) {
    char detail[256];
    snprintf(detail, sizeof detail, "PAPI cannot count %s here: %s", event, PAPI_strerror(rc));
    echo_event("papi-unavailable", event, 0, -1, -1, 0, echo.copy, -1, detail);
}

void echo_papi_init(void) {
    char key[32];
    snprintf(key, sizeof key, "papi_set_%d", echo.copy);
    const char *set = echo_plan_value(key);
    if (!set) return;
    int rc = PAPI_library_init(PAPI_VER_CURRENT);
    if (rc != PAPI_VER_CURRENT) {
        unavailable("PAPI", rc < 0 ? rc : PAPI_EINVAL);
        return;
    }
    PAPI_create_eventset(&eventset);
    char *list = strdup(set), *save = NULL;
    for (char *ev = strtok_r(list, ",", &save); ev && nevents < MAX_EVENTS; ev = strtok_r(NULL, ",", &save)) {
        rc = PAPI_add_named_event(eventset, ev);
        if (rc != PAPI_OK) {
            unavailable(ev, rc);
            continue;
        }
        snprintf(names[nevents], sizeof names[0], "%s", ev);
        event_unit(ev, units[nevents], sizeof units[0]);
        char slot[64];
        snprintf(slot, sizeof slot, "%.29s>", ev); /* the compute phase before the call */
        echo_records_add_slot(slot);
        snprintf(slot, sizeof slot, "%.29s@", ev); /* the call itself */
        echo_records_add_slot(slot);
        nevents++;
    }
    free(list);
    if (!nevents || PAPI_start(eventset) != PAPI_OK) return;
    started = 1;
    /* the cost of one read, which every call pays twice */
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < 200; i++) PAPI_read(eventset, now);
    clock_gettime(CLOCK_MONOTONIC, &b);
    echo_metric("papi read", ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / 200, "ns");
    PAPI_read(eventset, last);
    echo_hooks_subscribe(&(echo_hooks_t){.enter = on_enter, .leave = on_leave, .finish = on_finish});
}
