/* MPI-4.1's buffers of buffered sends attached to a communicator, under cloning.
 *
 * A representative's MPI_Bsend goes out on the real communicator, so the buffer
 * is attached there; a copy sends nothing, and attaches the buffer to its own
 * handle (its stand-in, or its MPI_COMM_WORLD), where nothing ever uses it, so
 * that its detach answers with its own buffer as the representative's does.
 * Flushing waits for the representative's messages: a copy returns when its
 * representative's flush did, with its return code; a nonblocking flush is an
 * echo request completed as the representative's is.
 *
 * The process's buffer (MPI_Buffer_*) and a session's (MPI_Session_*_buffer)
 * are each process's own: their calls pass through (gen_wrappers.py's
 * LOCAL_WITH_HANDLES).  Local communicators (MPI_COMM_SELF and what derives
 * from it) pass through too (the generated dispatch). */
#include "echo_clone.h"

#if ECHO_DECLARES(MPI_Comm_attach_buffer)
/* the handle this process's MPI buffers the rank's sends on */
static MPI_Comm buffered_on(MPI_Comm comm, const char *fn) {
    echo_comm_t *c = echo_comm_get(comm, fn);
    return echo_is_rep() ? c->real : comm;
}

/* attach and detach (which blocks until the buffered messages are out: on a copy, until its representative's
 * are), in their int and large-count forms: each process on its own handle, with the representative's code */
#define ECHO_DEFINE_BUFFER_CALL(fn, SIZE)                                                        \
    int echo_##fn(MPI_Comm comm, void *buffer, SIZE size) {                                      \
        return echo_forward(NULL, 0, MPI_BYTE, P##fn(buffered_on(comm, #fn), buffer, size));     \
    }
ECHO_DEFINE_BUFFER_CALL(MPI_Comm_attach_buffer, int)
ECHO_DEFINE_BUFFER_CALL(MPI_Comm_detach_buffer, int *)
ECHO_DEFINE_BUFFER_CALL(MPI_Comm_attach_buffer_c, MPI_Count)
ECHO_DEFINE_BUFFER_CALL(MPI_Comm_detach_buffer_c, MPI_Count *)

int echo_MPI_Comm_flush_buffer(MPI_Comm comm) {
    MPI_Comm on = buffered_on(comm, "MPI_Comm_flush_buffer");
    return echo_forward(NULL, 0, MPI_BYTE, ECHO_REP(PMPI_Comm_flush_buffer(on)));
}

int echo_MPI_Comm_iflush_buffer(MPI_Comm comm, MPI_Request *request) {
    MPI_Comm on = buffered_on(comm, "MPI_Comm_iflush_buffer");
    MPI_Request real = MPI_REQUEST_NULL;
    int rc = ECHO_REP(PMPI_Comm_iflush_buffer(on, &real));
    rc = echo_forward(NULL, 0, MPI_BYTE, rc);
    if (rc == MPI_SUCCESS) *request = echo_request_new(real, 0, 0, NULL, 0, MPI_BYTE);
    return rc;
}
#endif
