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
 * MPI calls an error handler with the handle and the code only, so the
 * trampoline finds the application's function by the handler attached to that
 * handle.  The predefined handlers (MPI_ERRORS_RETURN, MPI_ERRORS_ARE_FATAL,
 * MPI_ERRORS_ABORT) are MPI's own: a call returns their errors. */
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

/* The arguments after the code are the MPI's own (Open MPI passes a message and NULL): passed on as they came.
 * echo_MPI_X_create_errhandler (gen_wrappers.py reads the name on the ECHO_DEFINE_ line) gives MPI the trampoline. */
#define ECHO_DEFINE_ERRHANDLER(fn, KIND, HANDLE)                                                                    \
    static void KIND##_trampoline(HANDLE *h, int *code, ...) {                                                      \
        MPI_Errhandler eh;                                                                                          \
        PMPI_##KIND##_get_errhandler(*h, &eh);                                                                      \
        user_fn user = lookup(eh);                                                                                  \
        PMPI_Errhandler_free(&eh);                                                                                  \
        noted(code);                                                                                                \
        va_list ap;                                                                                                 \
        va_start(ap, code);                                                                                         \
        void *a = va_arg(ap, void *), *b = va_arg(ap, void *);                                                      \
        va_end(ap);                                                                                                 \
        user(h, code, a, b);                                                                                        \
    }                                                                                                               \
    int echo_##fn(MPI_##KIND##_errhandler_function *f, MPI_Errhandler *errhandler) {                                \
        int rc = P##fn(KIND##_trampoline, errhandler);                                                              \
        if (rc == MPI_SUCCESS) remember(*errhandler, (user_fn)f);                                                   \
        return rc;                                                                                                  \
    }

ECHO_DEFINE_ERRHANDLER(MPI_Comm_create_errhandler, Comm, MPI_Comm)
ECHO_DEFINE_ERRHANDLER(MPI_Win_create_errhandler, Win, MPI_Win)
ECHO_DEFINE_ERRHANDLER(MPI_File_create_errhandler, File, MPI_File)
