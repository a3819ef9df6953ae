/* Event planning with the system PAPI (the library the collector counts with).
 *
 *   papi_plan list                 every preset and native event PAPI knows here, one a line:
 *                                  "<preset|native>\t<name>\t<ok|PAPI's reason>\t<description>",
 *                                  then every component PAPI disabled, with PAPI's reason:
 *                                  "component\t<name>\t<reason>\t<description>"
 *   papi_plan pack ANCHOR EV...    pack the events greedily into sets PAPI accepts together, the
 *                                  anchor (or "-") first in every set; prints "set\t<i>\t<ev>,<ev>..."
 *                                  a set and "bad\t<ev>\t<PAPI's reason>" for events no set takes.
 */
#include <papi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SETS 64
#define MAX_PER_SET 8 /* the records carry at most 8 events per copy (2 slots each) */

static int sets[MAX_SETS], count[MAX_SETS], nsets;
static char members[MAX_SETS][4096];

static int try_add(int s, const char *ev) {
    if (count[s] >= MAX_PER_SET) return PAPI_ECOUNT;
    int rc = PAPI_add_named_event(sets[s], ev);
    if (rc != PAPI_OK) return rc;
    /* a set must also start: some conflicts only show there */
    rc = PAPI_start(sets[s]);
    if (rc != PAPI_OK) {
        PAPI_remove_named_event(sets[s], ev);
        return rc;
    }
    long long v[MAX_PER_SET];
    PAPI_stop(sets[s], v);
    count[s]++;
    size_t n = strlen(members[s]);
    snprintf(members[s] + n, sizeof members[s] - n, "%s%s", n ? "," : "", ev);
    return PAPI_OK;
}

static int new_set(const char *anchor) {
    if (nsets == MAX_SETS) return -1;
    sets[nsets] = PAPI_NULL;
    PAPI_create_eventset(&sets[nsets]);
    if (anchor && try_add(nsets, anchor) != PAPI_OK) { /* the anchor cannot join: sets go without it */ }
    return nsets++;
}

static void show(const char *kind, int code) {
    PAPI_event_info_t info;
    if (PAPI_get_event_info(code, &info) != PAPI_OK) return;
    int es = PAPI_NULL;
    PAPI_create_eventset(&es);
    int rc = PAPI_add_event(es, code);
    if (rc == PAPI_OK) rc = PAPI_start(es); /* added is not enough: it must count */
    if (rc == PAPI_OK) {
        long long v[1];
        PAPI_stop(es, v);
    }
    PAPI_cleanup_eventset(es);
    PAPI_destroy_eventset(&es);
    printf("%s\t%s\t%s\t%s\n", kind, info.symbol, rc == PAPI_OK ? "ok" : PAPI_strerror(rc),
           info.short_descr[0] ? info.short_descr : info.long_descr);
}

static void list(void) {
    int code = PAPI_PRESET_MASK;
    if (PAPI_enum_event(&code, PAPI_ENUM_FIRST) == PAPI_OK) {
        do show("preset", code);
        while (PAPI_enum_event(&code, PAPI_ENUM_EVENTS) == PAPI_OK);
    }
    for (int cid = 0; cid < PAPI_num_components(); cid++) {
        const PAPI_component_info_t *cmp = PAPI_get_component_info(cid);
        if (!cmp) continue;
        if (cmp->disabled) { /* its events are not listed at all: say why, or a user sees only "nothing" */
            printf("component\t%s\t%s\t%s\n", cmp->name, cmp->disabled_reason[0] ? cmp->disabled_reason : "disabled",
                   cmp->description);
            continue;
        }
        code = PAPI_NATIVE_MASK;
        if (PAPI_enum_cmp_event(&code, PAPI_ENUM_FIRST, cid) != PAPI_OK) continue;
        do show("native", code);
        while (PAPI_enum_cmp_event(&code, PAPI_ENUM_EVENTS, cid) == PAPI_OK);
    }
}

int main(int argc, char **argv) {
    int rc = PAPI_library_init(PAPI_VER_CURRENT);
    if (rc != PAPI_VER_CURRENT) {
        fprintf(stderr, "PAPI_library_init failed: %s\n", rc < 0 ? PAPI_strerror(rc) : "version mismatch");
        return 1;
    }
    if (argc >= 2 && !strcmp(argv[1], "list")) {
        list();
        return 0;
    }
    if (argc < 3 || strcmp(argv[1], "pack")) {
        fprintf(stderr, "usage: papi_plan list | papi_plan pack ANCHOR|- EVENT...\n");
        return 2;
    }
    const char *anchor = strcmp(argv[2], "-") ? argv[2] : NULL;
    if (anchor) {
        int es = PAPI_NULL;
        PAPI_create_eventset(&es);
        rc = PAPI_add_named_event(es, anchor);
        if (rc != PAPI_OK) {
            printf("bad\t%s\t%s\n", anchor, PAPI_strerror(rc));
            anchor = NULL;
        }
    }
    for (int i = 3; i < argc; i++) {
        const char *ev = argv[i];
        if (anchor && !strcmp(ev, anchor)) continue;
        int placed = 0;
        for (int s = 0; s < nsets && !placed; s++) placed = try_add(s, ev) == PAPI_OK;
        if (placed) continue;
        int s = new_set(anchor);
        rc = s < 0 ? PAPI_ECOUNT : try_add(s, ev);
        if (rc != PAPI_OK) {
            printf("bad\t%s\t%s\n", ev, PAPI_strerror(rc));
            if (s >= 0 && count[s] <= (anchor ? 1 : 0)) { /* an empty new set: drop it */
                PAPI_cleanup_eventset(sets[s]);
                PAPI_destroy_eventset(&sets[s]);
                members[s][0] = 0;
                count[s] = 0;
                nsets--;
            }
        }
    }
    if (nsets == 0 && anchor) new_set(anchor);
    for (int s = 0; s < nsets; s++) printf("set\t%d\t%s\n", s, members[s]);
    return 0;
}
