/* MPI-4.1's buffer and status calls (MPICH 5 and Intel MPI declare them; Open MPI 5.0 does not): buffers of
 * buffered sends attached to a communicator (int and large-count forms, and MPI_BUFFER_AUTOMATIC), to a
 * session and to the process, flushed blocking and nonblocking; MPI_Request_get_status_all/any/some on
 * requests of a ring, mixed with an MPI_COMM_SELF request, which they must not retire; and the status
 * accessors MPI_Status_set/get_source, _tag, _error.  Against an mpi.h without them (Open MPI 5.0, 4.1) it says so
 * and does nothing else. */
#include "battery.h"
#include <stdlib.h>
#include <string.h>

#ifdef MPI_BUFFER_AUTOMATIC /* MPI-4.1's */

static int right, left;

/* one buffered message around the ring on comm, received and said */
static void bsend_ring(MPI_Comm comm, const char *what, int tag) {
    int out = rank * 100 + tag, in = -1;
    MPI_Bsend(&out, 1, MPI_INT, right, tag, comm);
    MPI_Recv(&in, 1, MPI_INT, left, tag, comm, MPI_STATUS_IGNORE);
    SAY("%s: bsend ring got %d", what, in);
}

static void comm_buffers(void) {
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int bytes = 4096 + MPI_BSEND_OVERHEAD, size = -1;
    char *buf = malloc((size_t)bytes);
    void *back = NULL;
    MPI_Comm_attach_buffer(dup, buf, bytes);
    bsend_ring(dup, "comm", 1);
    MPI_Comm_flush_buffer(dup);
    bsend_ring(dup, "comm flushed", 2);
    MPI_Request r;
    MPI_Comm_iflush_buffer(dup, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    SAY("comm iflush done, request null %d", r == MPI_REQUEST_NULL);
    MPI_Comm_detach_buffer(dup, &back, &size);
    SAY("comm detach: own buffer %d size %d", back == buf, size);

    MPI_Count csize = -1;
    MPI_Comm_attach_buffer_c(MPI_COMM_WORLD, buf, (MPI_Count)bytes);
    bsend_ring(MPI_COMM_WORLD, "world _c", 3);
    MPI_Comm_detach_buffer_c(MPI_COMM_WORLD, &back, &csize);
    SAY("world detach_c: own buffer %d size %lld", back == buf, (long long)csize);

    MPI_Comm_attach_buffer(dup, MPI_BUFFER_AUTOMATIC, 0);
    bsend_ring(dup, "comm automatic", 4);
    MPI_Comm_detach_buffer(dup, &back, &size);
    SAY("comm automatic detach: automatic %d", back == MPI_BUFFER_AUTOMATIC);

    /* a second attach on the same communicator is an error MPI reports */
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    MPI_Comm_attach_buffer(dup, buf, bytes);
    int rc = MPI_Comm_attach_buffer(dup, buf, bytes), cls = -1;
    MPI_Error_class(rc, &cls);
    SAY("comm attach twice: error class %d", cls);
    MPI_Comm_detach_buffer(dup, &back, &size);
    MPI_Comm_free(&dup);
    free(buf);
}

static void session_and_process_buffers(void) {
    int bytes = 4096 + MPI_BSEND_OVERHEAD, size = -1;
    char *buf = malloc((size_t)bytes);
    void *back = NULL;
    MPI_Session s;
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s);
    MPI_Session_attach_buffer(s, buf, bytes);
    MPI_Group g;
    MPI_Comm sc;
    MPI_Group_from_session_pset(s, "mpi://WORLD", &g);
    MPI_Comm_create_from_group(g, "mpi41", MPI_INFO_NULL, MPI_ERRORS_RETURN, &sc);
    MPI_Group_free(&g);
    bsend_ring(sc, "session", 7);
    MPI_Session_flush_buffer(s);
    MPI_Request r;
    MPI_Session_iflush_buffer(s, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Session_detach_buffer(s, &back, &size);
    SAY("session detach: own buffer %d size %d", back == buf, size);
    MPI_Comm_free(&sc);
    MPI_Session_finalize(&s);

    MPI_Buffer_attach(buf, bytes);
    bsend_ring(MPI_COMM_WORLD, "process", 5);
    MPI_Buffer_flush();
    bsend_ring(MPI_COMM_WORLD, "process flushed", 6);
    MPI_Buffer_iflush(&r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    MPI_Buffer_detach(&back, &size);
    SAY("process detach: own buffer %d size %d", back == buf, size);
    free(buf);
}

static void say_statuses(const char *what, const MPI_Status *st, int n) {
    for (int i = 0; i < n; i++) {
        int count;
        MPI_Get_count(&st[i], MPI_INT, &count);
        SAY("%s %d: source %d tag %d count %d", what, i, st[i].MPI_SOURCE, st[i].MPI_TAG, count);
    }
}

static void get_status(void) {
    /* reqs: 0 and 1 receive from the left (tags 11 and 12), 2 a receive on MPI_COMM_SELF of this rank's own
     * message, 3 null */
    int in[2] = {-1, -1}, self_in = -1, self_out = 40 + rank, out[2] = {rank * 10 + 1, rank * 10 + 2};
    MPI_Request reqs[4];
    MPI_Status st[4];
    MPI_Irecv(&in[0], 1, MPI_INT, left, 11, MPI_COMM_WORLD, &reqs[0]);
    MPI_Irecv(&in[1], 1, MPI_INT, left, 12, MPI_COMM_WORLD, &reqs[1]);
    MPI_Irecv(&self_in, 1, MPI_INT, 0, 13, MPI_COMM_SELF, &reqs[2]);
    reqs[3] = MPI_REQUEST_NULL;
    MPI_Send(&out[0], 1, MPI_INT, right, 11, MPI_COMM_WORLD);

    /* only request 0 can be complete: the others wait for messages not sent yet */
    int index = -1, flag = 0, count = 0, indices[4];
    while (!flag) MPI_Request_get_status_any(2, reqs, &index, &flag, &st[0]);
    SAY("get_status_any: index %d flag %d", index, flag);
    say_statuses("get_status_any", st, 1);
    MPI_Request_get_status_some(4, reqs, &count, indices, st);
    SAY("get_status_some: %d done, first %d", count, count > 0 ? indices[0] : -1);
    MPI_Request_get_status_all(4, reqs, &flag, st);
    SAY("get_status_all before the last messages: flag %d", flag);
    MPI_Barrier(MPI_COMM_WORLD); /* no rank sends tag 12 before every rank looked: else its neighbour may see it */

    MPI_Send(&self_out, 1, MPI_INT, 0, 13, MPI_COMM_SELF);
    MPI_Send(&out[1], 1, MPI_INT, right, 12, MPI_COMM_WORLD);
    flag = 0;
    while (!flag) MPI_Request_get_status_all(4, reqs, &flag, st);
    SAY("get_status_all: flag %d", flag);
    say_statuses("get_status_all", st, 2);
    MPI_Request_get_status_all(4, reqs, &flag, MPI_STATUSES_IGNORE);
    MPI_Request_get_status_some(4, reqs, &count, indices, MPI_STATUSES_IGNORE);
    SAY("get_status_some after: %d done", count);

    /* nothing was retired: the requests still hold their messages */
    SAY("still pending %d %d %d", reqs[0] != MPI_REQUEST_NULL, reqs[1] != MPI_REQUEST_NULL,
        reqs[2] != MPI_REQUEST_NULL);
    MPI_Waitall(4, reqs, st);
    SAY("waitall got %d %d self %d", in[0], in[1], self_in);

    MPI_Request none[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Request_get_status_any(2, none, &index, &flag, MPI_STATUS_IGNORE);
    SAY("get_status_any of nulls: index undefined %d flag %d", index == MPI_UNDEFINED, flag);
    MPI_Request_get_status_some(2, none, &count, indices, MPI_STATUSES_IGNORE);
    SAY("get_status_some of nulls: undefined %d", count == MPI_UNDEFINED);
}

static void status_accessors(void) {
    MPI_Status st;
    memset(&st, 0, sizeof st);
    MPI_Status_set_source(&st, left);
    MPI_Status_set_tag(&st, 77);
    MPI_Status_set_error(&st, MPI_ERR_TAG);
    MPI_Status_set_elements(&st, MPI_INT, 5);
    int source, tag, error, count;
    MPI_Status_get_source(&st, &source);
    MPI_Status_get_tag(&st, &tag);
    MPI_Status_get_error(&st, &error);
    MPI_Get_count(&st, MPI_INT, &count);
    SAY("status set/get: source %d tag %d error is MPI_ERR_TAG %d count %d", source, tag, error == MPI_ERR_TAG,
        count);
}

#endif

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
#ifdef MPI_BUFFER_AUTOMATIC
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    comm_buffers();
    session_and_process_buffers();
    get_status();
    status_accessors();
#else
    SAY("this mpi.h declares no MPI-4.1 buffer or status calls");
#endif
    SAY("done");
    MPI_Finalize();
    return 0;
}
