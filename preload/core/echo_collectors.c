/* The role collectors built into this library (see collectors/): each one's
 * init looks at the plan and, when this copy has its role, sets the hooks. */
#include "echo_internal.h"

#include <stdlib.h>

echo_hooks_t echo_hooks;

/* every subscription, in order: entering calls run first to last, leaving ones last to first (the first to
 * start around a call ends last, so that a measure never includes another collector's work half) */
static echo_hooks_t *subscribed;
static int nsubscribed;

static void all_enter(void) {
    for (int i = 0; i < nsubscribed; i++)
        if (subscribed[i].enter) subscribed[i].enter();
}
static void all_leave(void) {
    for (int i = nsubscribed - 1; i >= 0; i--)
        if (subscribed[i].leave) subscribed[i].leave();
}
static void all_finish(void) {
    for (int i = 0; i < nsubscribed; i++)
        if (subscribed[i].finish) subscribed[i].finish();
}
static void all_outgoing(const void *buf, int count, MPI_Datatype dt) {
    for (int i = 0; i < nsubscribed; i++)
        if (subscribed[i].outgoing) subscribed[i].outgoing(buf, count, dt);
}
static void all_delivered(void *buf, int count, MPI_Datatype dt) {
    for (int i = 0; i < nsubscribed; i++)
        if (subscribed[i].delivered) subscribed[i].delivered(buf, count, dt);
}

/* the entry of one event: NULL (the wrappers skip it), its one subscriber (no extra call), or all of them */
#define DISPATCH(event)                                                                                          \
    do {                                                                                                       \
        int n = 0;                                                                                             \
        for (int i = 0; i < nsubscribed; i++)                                                                  \
            if (subscribed[i].event) n++, echo_hooks.event = subscribed[i].event;                              \
        if (n == 0) echo_hooks.event = NULL;                                                                   \
        if (n > 1) echo_hooks.event = all_##event;                                                             \
    } while (0)

void echo_hooks_subscribe(const echo_hooks_t *hooks) {
    subscribed = realloc(subscribed, sizeof *subscribed * (size_t)(nsubscribed + 1));
    subscribed[nsubscribed++] = *hooks;
    DISPATCH(enter);
    DISPATCH(leave);
    DISPATCH(finish);
    DISPATCH(outgoing);
    DISPATCH(delivered);
}

#ifdef ECHO_WITH_PAPI
void echo_papi_init(void);
#endif
#ifdef ECHO_WITH_VALGRIND
void echo_valgrind_init(void);
#endif

void echo_perturb_init(void);

void echo_collectors_init(void) {
    echo_perturb_init();
#ifdef ECHO_WITH_VALGRIND
    echo_valgrind_init();
#else
    if (echo_plan_value("valgrind_slice"))
        echo_fatal("this echo library was built without Valgrind's headers (apt-get install valgrind)");
#endif
#ifdef ECHO_WITH_PAPI
    echo_papi_init();
#else
    if (echo_plan_value("papi_sets"))
        echo_fatal("this echo library was built without PAPI (install libpapi-dev, then run again: the library is "
                   "rebuilt)");
#endif
}
