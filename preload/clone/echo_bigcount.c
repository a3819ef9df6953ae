/* Large-count calls (MPI-4's MPI_X_c) under cloning.  gen_wrappers.py writes each echo_MPI_X_c as the int form's
 * semantics (echo_MPI_X) called with the counts narrowed to int: a copy gets exactly what its representative got,
 * by the same code as for MPI_X, and a fix to one form is a fix to both.  What is narrowed: scalar counts and
 * displacement units, the count and displacement arrays of v- and w-collectives (these helpers), and outputs
 * written back widened.  The representative's real call is then the int form: the same message, matched the
 * same way (MPI defines MPI_X_c and MPI_X to be interchangeable on the wire).
 *
 * A count beyond an int, with its datatype, becomes one element of a contiguous type of `count` elements: the same
 * type signature, so the same message, and a status still counts bytes (MPI_Get_count_c with the caller's datatype
 * answers in its elements).  What cannot be done so stops the job naming the call: a count with an MPI_Op
 * (reductions apply to predefined types only), an entry of a v-collective's arrays or a displacement unit beyond
 * an int. */
#include "echo_clone.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

int echo_narrow_int(long long v, const char *fn, const char *what) {
    if (v > INT_MAX || v < INT_MIN)
        echo_fatal("%s is not supported with clones for %s %lld, beyond an int (echo carries a larger count as one "
                   "element of a contiguous datatype, which a reduction's count, a v-collective's array or a "
                   "displacement unit cannot be: see \"Large counts\" in docs/replication.md)", fn, what, v);
    return (int)v;
}

int echo_narrow_count(MPI_Count count, MPI_Datatype *dt, const char *fn, const char *what) {
    if (count <= INT_MAX) return echo_narrow_int(count, fn, what);
    MPI_Datatype whole;
    if (PMPI_Type_contiguous_c(count, *dt, &whole) != MPI_SUCCESS || PMPI_Type_commit(&whole) != MPI_SUCCESS)
        return echo_narrow_int(count, fn, what); /* not a datatype MPI accepts: stop naming the call */
    *dt = whole;
    return 1;
}

void echo_widened_free(MPI_Datatype dt, MPI_Datatype original) {
    /* MPI and echo's requests keep what a pending operation still uses */
    if (dt != original) PMPI_Type_free(&dt);
}

/* Arrays a nonblocking or persistent operation may still read: kept for the rest of the run, one copy per
 * call, argument and distinct content, so a loop that starts the same collective again and again allocates once.
 * Never one array for two arguments: MPICH takes a call whose send and receive sides share their buffer and their
 * counts for aliased buffers (mpi4py's empty buffers share an address), as it would natively never see. */
typedef struct kept {
    struct kept *next;
    const char *fn, *what;
    int n;
    int v[];
} kept_t;
static kept_t *kept_arrays;

static const int *keep_ints(int *tmp, int n, const char *fn, const char *what) {
    for (kept_t *k = kept_arrays; k; k = k->next)
        if (k->n == n && !strcmp(k->fn, fn) && !strcmp(k->what, what) &&
            !memcmp(k->v, tmp, (size_t)n * sizeof(int))) {
            free(tmp);
            return k->v;
        }
    kept_t *k = malloc(sizeof(kept_t) + (size_t)n * sizeof(int));
    if (!k) echo_fatal("out of memory for the counts of a large-count call");
    k->fn = fn;
    k->what = what;
    k->n = n;
    memcpy(k->v, tmp, (size_t)n * sizeof(int));
    k->next = kept_arrays;
    kept_arrays = k;
    free(tmp);
    return k->v;
}

#define NARROW_ARRAY(T)                                                                   \
    if (!a) return NULL;                                                                  \
    int *out = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));                             \
    if (!out) echo_fatal("out of memory for the counts of %s", fn);                       \
    for (int i = 0; i < n; i++) out[i] = echo_narrow_int((long long)a[i], fn, what);      \
    return keep ? keep_ints(out, n, fn, what) : out

const int *echo_narrow_counts(const MPI_Count *a, int n, int keep, const char *fn, const char *what) {
    NARROW_ARRAY(MPI_Count);
}

const int *echo_narrow_aints(const MPI_Aint *a, int n, int keep, const char *fn, const char *what) {
    NARROW_ARRAY(MPI_Aint);
}

void echo_narrow_free(const int *a, int keep) {
    if (!keep) free((void *)a);
}

int echo_narrow_len(MPI_Comm comm, const char *fn, int side, int root) {
    echo_comm_t *c = echo_comm_get(comm, fn);
    if (strstr(fn, "eighbor_")) {  /* MPI_(I)neighbor_*: one block per neighbour of the topology */
        int in, out;
        echo_topo_degrees(c, &in, &out);
        return side ? in : out;
    }
    /* the root's arrays, significant at the root only: Gatherv's receive side, Scatterv's send side */
    int gatherv = strstr(fn, "atherv") && !strstr(fn, "llgatherv"); /* not Allgatherv, whose arrays all hold */
    if ((gatherv && side == 1) || (strstr(fn, "catterv") && side == 0))
        return echo_is_root(c, root) ? echo_comm_peers(c) : 0;
    if (strstr(fn, "educe_scatter")) return c->size; /* one count per process of the local group */
    return echo_comm_peers(c);
}
