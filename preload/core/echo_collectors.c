/* The role collectors built into this library (see collectors/): each one's
 * init looks at the plan and, when this copy has its role, sets the hooks. */
#include "echo_internal.h"

echo_hooks_t echo_hooks;

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
