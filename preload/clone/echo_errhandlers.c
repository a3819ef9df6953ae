/* The application's error handlers under cloning: each one MPI is given is a
 * trampoline of echo's that notes the class it was raised with (echo_raised),
 * then calls the application's function.
 *
 * Why: a representative's call that fails raises the error on its real
 * handle, and its copies raise it on their stand-ins (generated wrappers) when
 * the forwarded return code says the call failed.  MPICH 5 returns
 * MPI_SUCCESS from a call once the user's handler has returned (MPICH 4.0,
 * Intel MPI and Open MPI return the error code), so without the note a copy
 * would neither run its handler nor know it should.  The representative's
 * forward carries the note (echo_forward.c); the copy raises the same class on
 * its own handle and returns MPI_SUCCESS, as its representative did.
 *
 * MPI calls an error handler with the handle and the code only.  Each handler
 * the application creates gets a trampoline of its own, from a fixed set per
 * kind, that knows the application's function without asking MPI: MPICH with
 * MPI_THREAD_MULTIPLE (mpi4py's default) holds a lock while it runs a handler,
 * and asking it then for the handle's error handler deadlocks (MPICH aborts:
 * "Resource deadlock avoided").  A slot is free again once MPI gives out its
 * handler's number anew (so that handler is gone).  When every slot is taken, a
 * shared trampoline finds the function by the handler attached to the handle
 * (an MPI call: fine without threads, and on Open MPI).  The predefined
 * handlers (MPI_ERRORS_RETURN, MPI_ERRORS_ARE_FATAL, MPI_ERRORS_ABORT) are
 * MPI's own: a call returns their errors. */
#include "echo_clone.h"

#include <stdarg.h>
#include <stdlib.h>

typedef void (*user_fn)(void *, int *, ...);

static struct {
    MPI_Errhandler eh;
    user_fn fn;
} *handlers;
static int nhandlers, cap;

static void remember(MPI_Errhandler eh, user_fn fn) {
    /* a freed handler's number may be given out again: the newest function is its */
    for (int i = 0; i < nhandlers; i++)
        if (handlers[i].eh == eh) {
            handlers[i].fn = fn;
            return;
        }
    if (nhandlers == cap) {
        cap = cap ? 2 * cap : 8;
        handlers = realloc(handlers, sizeof *handlers * (size_t)cap);
    }
    handlers[nhandlers].eh = eh;
    handlers[nhandlers++].fn = fn;
}

static user_fn lookup(MPI_Errhandler eh) {
    for (int i = 0; i < nhandlers; i++)
        if (handlers[i].eh == eh) return handlers[i].fn;
    echo_fatal("an error handler echo did not create was raised: please report this echo bug");
}

static void noted(int *code) {
    int cls = *code;
    PMPI_Error_class(*code, &cls);
    echo_raised = cls;
}

/* The arguments after the code are the MPI's own (Open MPI passes a message and NULL): passed on as they came. */
static void call_user(user_fn user, void *h, int *code, va_list ap) {
    void *a = va_arg(ap, void *), *b = va_arg(ap, void *);
    noted(code);
    user(h, code, a, b);
}

/* ---- a trampoline per handler: 64 slots per kind, numbered in octal 000..077 ---- */
enum { SLOTS = 64 };
typedef struct {
    user_fn fn;
    MPI_Errhandler eh;
    int used;
} slot_t;

#define R8(M, K, H, p) M(K, H, p##0) M(K, H, p##1) M(K, H, p##2) M(K, H, p##3) M(K, H, p##4) M(K, H, p##5) \
    M(K, H, p##6) M(K, H, p##7)
#define R64(M, K, H) R8(M, K, H, 0) R8(M, K, H, 1) R8(M, K, H, 2) R8(M, K, H, 3) R8(M, K, H, 4) R8(M, K, H, 5) \
    R8(M, K, H, 6) R8(M, K, H, 7)
#define SLOT_TRAMPOLINE(KIND, HANDLE, i)                      \
    static void KIND##_slot##i(HANDLE *h, int *code, ...) {   \
        va_list ap;                                           \
        va_start(ap, code);                                   \
        call_user(KIND##_slots[0##i].fn, h, code, ap);        \
        va_end(ap);                                           \
    }
#define SLOT_ADDRESS(KIND, HANDLE, i) KIND##_slot##i,

/* a free slot for a handler MPI is about to create (-1: none) */
static int free_slot(const slot_t *slots) {
    for (int i = 0; i < SLOTS; i++)
        if (!slots[i].used) return i;
    return -1;
}

/* MPI created `eh` with slot i's trampoline (i < 0: the shared one) */
static void bind_slot(slot_t *slots, int i, MPI_Errhandler eh, user_fn fn) {
    for (int k = 0; k < SLOTS; k++) /* the handler that had this number is gone: its slot is free */
        if (k != i && slots[k].used && slots[k].eh == eh) slots[k].used = 0;
    if (i >= 0) slots[i] = (slot_t){.fn = fn, .eh = eh, .used = 1};
}

/* echo_MPI_X_create_errhandler (gen_wrappers.py reads the name on the ECHO_DEFINE_ line) gives MPI a trampoline. */
#define ECHO_DEFINE_ERRHANDLER(fn, KIND, HANDLE)                                                                    \
    static slot_t KIND##_slots[SLOTS];                                                                              \
    R64(SLOT_TRAMPOLINE, KIND, HANDLE)                                                                              \
    static MPI_##KIND##_errhandler_function *const KIND##_slot_fns[SLOTS] = {R64(SLOT_ADDRESS, KIND, HANDLE)};      \
    static void KIND##_trampoline(HANDLE *h, int *code, ...) {                                                      \
        MPI_Errhandler eh;                                                                                          \
        PMPI_##KIND##_get_errhandler(*h, &eh);                                                                      \
        user_fn user = lookup(eh);                                                                                  \
        PMPI_Errhandler_free(&eh);                                                                                  \
        va_list ap;                                                                                                 \
        va_start(ap, code);                                                                                         \
        call_user(user, h, code, ap);                                                                               \
        va_end(ap);                                                                                                 \
    }                                                                                                               \
    int echo_##fn(MPI_##KIND##_errhandler_function *f, MPI_Errhandler *errhandler) {                                \
        int i = free_slot(KIND##_slots);                                                                            \
        int rc = P##fn(i >= 0 ? KIND##_slot_fns[i] : KIND##_trampoline, errhandler);                                \
        if (rc != MPI_SUCCESS) return rc;                                                                           \
        bind_slot(KIND##_slots, i, *errhandler, (user_fn)f);                                                        \
        if (i < 0) remember(*errhandler, (user_fn)f);                                                               \
        return rc;                                                                                                  \
    }

ECHO_DEFINE_ERRHANDLER(MPI_Comm_create_errhandler, Comm, MPI_Comm)
ECHO_DEFINE_ERRHANDLER(MPI_Win_create_errhandler, Win, MPI_Win)
ECHO_DEFINE_ERRHANDLER(MPI_File_create_errhandler, File, MPI_File)
