/* Attribute keyvals, in every mode: the clone layer's and SDR's stand-in communicators both copy the
 * application's attributes through the callbacks remembered here. */
#include "echo_internal.h"

#include <stdlib.h>

/* ---- attribute keyvals: MPI_Comm_dup copies attributes through their keyval's
 * copy callback.  A representative's real dup of the representatives' world, or
 * a copy's stand-in (a dup of MPI_COMM_SELF), is not a dup of the handle the
 * application set its attributes on, so echo runs the callbacks itself. */
typedef struct {
    int keyval;
    MPI_Comm_copy_attr_function *copy;
    MPI_Comm_delete_attr_function *del;
    void *extra;
} keyval_t;
static keyval_t *keyvals;
static int nkeyvals, keyvals_cap;

static void remember_keyval(int keyval, MPI_Comm_copy_attr_function *copy, MPI_Comm_delete_attr_function *del,
                            void *extra) {
    for (int i = 0; i < nkeyvals; i++)
        if (keyvals[i].keyval == keyval) { /* a number MPI reused */
            keyvals[i] = (keyval_t){keyval, copy, del, extra};
            return;
        }
    if (nkeyvals == keyvals_cap) {
        keyvals_cap = keyvals_cap ? 2 * keyvals_cap : 16;
        keyvals = realloc(keyvals, sizeof *keyvals * (size_t)keyvals_cap);
    }
    keyvals[nkeyvals++] = (keyval_t){keyval, copy, del, extra};
}

static keyval_t *keyval_of(int keyval) {
    for (int i = 0; i < nkeyvals; i++)
        if (keyvals[i].keyval == keyval) return &keyvals[i];
    return NULL;
}

/* MPI runs the application's callbacks inside calls echo wraps (MPI_Comm_free, MPI_Comm_delete_attr,
 * MPI_Comm_dup, MPI_Finalize...); through these, the callbacks' own MPI calls are the application's (MPICH's
 * attr/attrt asks its rank in MPI_COMM_WORLD in its delete callback: a copy answered with its real rank). */
static int copy_trampoline(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag) {
    keyval_t *k = keyval_of(keyval);
    int depth = echo_depth, rc = MPI_SUCCESS;
    *flag = 0;
    echo_depth = 0;
    if (k && k->copy) rc = k->copy(comm, keyval, extra, in, out, flag);
    echo_depth = depth;
    return rc;
}

static int delete_trampoline(MPI_Comm comm, int keyval, void *value, void *extra) {
    keyval_t *k = keyval_of(keyval);
    int depth = echo_depth, rc = MPI_SUCCESS;
    echo_depth = 0;
    if (k && k->del) rc = k->del(comm, keyval, value, extra);
    echo_depth = depth;
    return rc;
}

/* MPICH's null callbacks are null pointers, which MPI must see as such */
static int create_keyval(MPI_Comm_copy_attr_function *copy, MPI_Comm_delete_attr_function *del, int *keyval,
                         void *extra) {
    int rc = PMPI_Comm_create_keyval(copy ? copy_trampoline : NULL, del ? delete_trampoline : NULL, keyval, extra);
    if (rc == MPI_SUCCESS) remember_keyval(*keyval, copy, del, extra);
    return rc;
}

int echo_always_MPI_Comm_create_keyval(MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                                       MPI_Comm_delete_attr_function *comm_delete_attr_fn, int *comm_keyval,
                                       void *extra_state) {
    return create_keyval(comm_copy_attr_fn, comm_delete_attr_fn, comm_keyval, extra_state);
}

int echo_always_MPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval,
                                  void *extra_state) {
    return create_keyval(copy_fn, delete_fn, keyval, extra_state); /* the same thing, MPI-1 names */
}

int echo_comm_copy_attributes(MPI_Comm from, MPI_Comm to) {
    /* A keyval the application freed lives on while an attribute uses it (its copy callback still runs, MPICH's
     * attr/fkeyval), and is gone after: MPI then rejects the number, through the communicator's error handler
     * unless echo asks with errors returned.  Gone ones are forgotten. */
    MPI_Errhandler eh;
    PMPI_Comm_get_errhandler(from, &eh);
    PMPI_Comm_set_errhandler(from, MPI_ERRORS_RETURN);
    int rc = MPI_SUCCESS, kept = 0;
    for (int i = 0; i < nkeyvals; i++) {
        void *in, *out = NULL;
        int has = 0, keep = 0;
        if (rc == MPI_SUCCESS && PMPI_Comm_get_attr(from, keyvals[i].keyval, &in, &has) != MPI_SUCCESS) continue;
        keyvals[kept++] = keyvals[i];
        /* MPICH's MPI_COMM_NULL_COPY_FN is a null pointer (Open MPI's a function): nothing to copy */
        if (rc != MPI_SUCCESS || !has || !keyvals[i].copy) continue;
        rc = copy_trampoline(from, keyvals[i].keyval, keyvals[i].extra, in, &out, &keep);
        if (rc == MPI_SUCCESS && keep) PMPI_Comm_set_attr(to, keyvals[i].keyval, out);
    }
    nkeyvals = kept;
    PMPI_Comm_set_errhandler(from, eh);
    PMPI_Errhandler_free(&eh);
    return rc;
}
