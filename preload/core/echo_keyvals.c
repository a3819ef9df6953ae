/* Attribute keyvals, in every mode: the clone layer's and SDR's stand-in communicators both copy the
 * application's attributes through the callbacks remembered here. */
#include "echo_internal.h"

#include <stdlib.h>

/* ---- attribute keyvals: MPI_Comm_dup copies attributes through their keyval's
 * copy callback.  A representative's real dup of the representatives' world, or
 * a copy's stand-in (a dup of MPI_COMM_SELF), is not a dup of the handle the
 * application set its attributes on, so echo runs the callbacks itself. */
typedef struct { int keyval; MPI_Comm_copy_attr_function *copy; void *extra; } keyval_t;
static keyval_t *keyvals;
static int nkeyvals, keyvals_cap;

static void remember_keyval(int keyval, MPI_Comm_copy_attr_function *copy, void *extra) {
    for (int i = 0; i < nkeyvals; i++)
        if (keyvals[i].keyval == keyval) { /* a number MPI reused */
            keyvals[i] = (keyval_t){keyval, copy, extra};
            return;
        }
    if (nkeyvals == keyvals_cap) {
        keyvals_cap = keyvals_cap ? 2 * keyvals_cap : 16;
        keyvals = realloc(keyvals, sizeof *keyvals * (size_t)keyvals_cap);
    }
    keyvals[nkeyvals++] = (keyval_t){keyval, copy, extra};
}

int echo_always_MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                                       MPI_Comm_delete_attr_function *comm_delete_attr_fn, int *comm_keyval,
                                       void *extra_state) {
    int rc = PMPI_Comm_create_keyval(comm_copy_attr_fn, comm_delete_attr_fn, comm_keyval, extra_state);
    if (rc == MPI_SUCCESS) remember_keyval(*comm_keyval, comm_copy_attr_fn, extra_state);
    return rc;
}

int echo_always_MPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval,
                                  void *extra_state) {
    int rc = PMPI_Comm_create_keyval(copy_fn, delete_fn, keyval, extra_state); /* the same thing, MPI-1 names */
    if (rc == MPI_SUCCESS) remember_keyval(*keyval, copy_fn, extra_state);
    return rc;
}

int echo_comm_copy_attributes(MPI_Comm from, MPI_Comm to) {
    for (int i = 0; i < nkeyvals; i++) {
        void *in, *out = NULL;
        int has = 0, keep = 0;
        /* MPICH's MPI_COMM_NULL_COPY_FN is a null pointer (Open MPI's a function): nothing to copy */
        if (!keyvals[i].copy) continue;
        if (PMPI_Comm_get_attr(from, keyvals[i].keyval, &in, &has) != MPI_SUCCESS || !has) continue;
        int rc = keyvals[i].copy(from, keyvals[i].keyval, keyvals[i].extra, in, &out, &keep);
        if (rc != MPI_SUCCESS) return rc;
        if (keep) PMPI_Comm_set_attr(to, keyvals[i].keyval, out);
    }
    return MPI_SUCCESS;
}
