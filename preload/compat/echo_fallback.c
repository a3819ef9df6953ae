/* Fallbacks for what an MPI lacks (see fallback.h). */
#include "echo_internal.h"

#include <string.h>

int echo_lacks(const char *fn) {
    echo_fatal("echo called %s, which this MPI does not have (an echo bug: its semantics should not be reached)",
               fn);
}

#if !ECHO_DECLARES(MPI_Info_get_string)
/* MPI-4's MPI_Info_get_string from MPI-3's calls: the value's size with its NUL in *buflen; the value itself,
 * cut to *buflen, when value is not NULL */
int echo_info_get_string(MPI_Info info, const char *key, int *buflen, char *value, int *flag) {
    int len = 0;
    int rc = PMPI_Info_get_valuelen(info, key, &len, flag);
    if (rc != MPI_SUCCESS || !*flag) return rc;
    if (value && *buflen > 0) {
        char whole[len + 1];
        rc = PMPI_Info_get(info, key, len, whole, flag);
        whole[len] = '\0';
        snprintf(value, (size_t)*buflen, "%s", whole);
    }
    *buflen = len + 1;
    return rc;
}
#endif
