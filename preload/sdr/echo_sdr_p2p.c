/* SDR mode: the application's point-to-point calls and its requests.
 *
 * A request the application holds on a replicated communicator is an SDR
 * request (a send, a receive or a collective's schedule behind the handle);
 * requests on MPI_COMM_SELF and generalized requests stay real.  Every
 * completion call may mix both: it looks at each without retiring it
 * (MPI_Request_get_status for real ones), spins the SDR progress while
 * waiting, and retires exactly the requests the call's semantics complete. */
#include "echo_sdr.h"

#include <stdlib.h>
#include <string.h>

enum { REQ_SEND, REQ_RECV, REQ_COLL, REQ_DONE, REQ_POLL };
#define SDR_REQ_MAGIC 0x53445252u

typedef struct sdr_req {
    unsigned magic;
    int kind, persistent, active, bsend, mode;
    sdr_comm_t *c; /* a persistent request's arguments, to start it again */
    void *buf;
    int count, peer, tag;
    MPI_Datatype dt;
    int owns_dt; /* dt is echo's duplicate of the caller's (echo_type_keep) */
    sdr_send_t *send;
    sdr_recv_t *recv;
    sdr_sched_t *sched;
    int proc_null; /* its peer is MPI_PROC_NULL: complete at once */
    int cancelled; /* a receive cancelled before it matched: complete, with a cancelled status */
    MPI_Status done_status; /* REQ_DONE: complete from the start (MPI_Imrecv), with this status */
    sdr_send_t *pair;       /* MPI_Isendrecv: the send that goes with this receive */
    int (*poll)(void *);    /* REQ_POLL: whether it is complete (sdr_request_of_poll); its end, giving its code */
    int (*finish)(void *);
    void *poll_arg;
} sdr_req_t;

int sdr_is_request(MPI_Request h) {
    sdr_req_t *r = echo_handle_state(h);
    return r && r->magic == SDR_REQ_MAGIC;
}

static sdr_req_t *req_of(MPI_Request h) { return echo_handle_state(h); }

static MPI_Request handle_of(sdr_req_t *r) { return echo_handle_new(r); }

static void empty_status(MPI_Status *st, int source) {
    MPI_Status empty;
    memset(&empty, 0, sizeof empty);
    empty.MPI_SOURCE = source;
    empty.MPI_TAG = MPI_ANY_TAG;
    PMPI_Status_set_elements(&empty, MPI_BYTE, 0);
    echo_set_status(st, &empty);
}

/* ---- starting operations ---- */

static int check_peer(sdr_comm_t *c, int peer, int any_ok) {
    int size = c->inter ? c->rsize : c->size; /* an intercommunicator's peers are the other group's */
    if (peer == MPI_PROC_NULL || (any_ok && peer == MPI_ANY_SOURCE) || (peer >= 0 && peer < size))
        return MPI_SUCCESS;
    return MPI_ERR_RANK;
}

static int start(sdr_req_t *r) {
    r->active = 1;
    if (r->proc_null) return MPI_SUCCESS;
    if (r->kind == REQ_COLL) {
        sdr_sched_start(r->sched);
        return MPI_SUCCESS;
    }
    int rc = MPI_SUCCESS;
    if (r->kind == REQ_SEND) {
        /* a buffered send, or a small one (MPI would buffer a standard one eagerly: programs count on that; a
         * synchronous one completes when matched, as natively, and its copy waits for the acks) */
        int copy = r->bsend || sdr_send_copies(r->c, r->peer, r->count, r->dt);
        r->send = sdr_send_start(r->c, SDR_DATA, r->buf, r->count, r->dt, r->peer, r->tag, r->mode, copy);
        rc = sdr_send_error(r->send);
    } else {
        r->recv = sdr_recv_start(r->c, SDR_DATA, r->buf, r->count, r->dt, r->peer, r->tag);
        rc = sdr_recv_error(r->recv);
    }
    return rc;
}

static sdr_req_t *new_req(int kind, int persistent, sdr_comm_t *c, const void *buf, int count, MPI_Datatype dt,
                          int peer, int tag, int mode, int bsend) {
    sdr_req_t *r = calloc(1, sizeof *r);
    *r = (sdr_req_t){.magic = SDR_REQ_MAGIC, .kind = kind, .persistent = persistent, .bsend = bsend, .mode = mode,
                     .c = c, .buf = (void *)buf, .count = count, .peer = peer, .tag = tag, .dt = dt,
                     .proc_null = peer == MPI_PROC_NULL};
    if (persistent) r->owns_dt = echo_type_keep(dt, &r->dt); /* started again after the application freed it */
    return r;
}

static void free_req(sdr_req_t *r) {
    if (r->owns_dt) PMPI_Type_free(&r->dt);
    free(r);
}

MPI_Request sdr_request_of_sched(sdr_sched_t *s, int persistent) {
    sdr_req_t *r = new_req(REQ_COLL, persistent, NULL, NULL, 0, MPI_DATATYPE_NULL, 0, 0, 0, 0);
    r->sched = s;
    r->active = !persistent;
    return handle_of(r);
}

MPI_Request sdr_request_of_poll(int (*poll)(void *), int (*finish)(void *), void *arg) {
    sdr_req_t *r = new_req(REQ_POLL, 0, NULL, NULL, 0, MPI_DATATYPE_NULL, 0, 0, 0, 0);
    r->poll = poll, r->finish = finish, r->poll_arg = arg;
    r->active = 1;
    return handle_of(r);
}

/* ---- looking at a request, and retiring it ---- */

/* complete (without retiring)?  An inactive persistent request is complete with an empty status. */
/* a send is complete for the application: a copied one at once (synchronous: once matched), else once acked */
static int send_ready(sdr_send_t *s, int mode) {
    return sdr_send_copied(s) ? mode == 0 || sdr_send_sent(s) : sdr_send_done(s);
}

static int req_ready(sdr_req_t *r) {
    if (r->pair && !send_ready(r->pair, 0)) return 0;
    if (!r->active || r->proc_null || r->cancelled || r->kind == REQ_DONE) return 1;
    if (r->kind == REQ_POLL) return r->poll(r->poll_arg);
    if (r->kind == REQ_SEND) return send_ready(r->send, r->mode);
    if (r->kind == REQ_RECV) return sdr_recv_done(r->recv, MPI_STATUS_IGNORE);
    return sdr_sched_done(r->sched);
}

/* retire a complete request: its status and error; the handle is freed unless persistent */
static int req_retire(MPI_Request *h, MPI_Status *st) {
    sdr_req_t *r = req_of(*h);
    int rc = MPI_SUCCESS;
    if (!r->active) empty_status(st, MPI_ANY_SOURCE);
    else if (r->cancelled) {
        empty_status(st, MPI_ANY_SOURCE);
        if (st != MPI_STATUS_IGNORE) PMPI_Status_set_cancelled(st, 1);
        r->cancelled = 0;
    } else if (r->kind == REQ_DONE) {
        echo_set_status(st, &r->done_status);
        rc = r->done_status.MPI_ERROR;
    } else if (r->proc_null) empty_status(st, r->kind == REQ_RECV ? MPI_PROC_NULL : MPI_ANY_SOURCE);
    else if (r->kind == REQ_POLL) {
        rc = r->finish(r->poll_arg);
        r->active = 0; /* finished once: MPI_Request_free's retire keeps the struct */
        empty_status(st, MPI_ANY_SOURCE);
    } else if (r->kind == REQ_SEND) {
        rc = sdr_send_error(r->send);
        empty_status(st, MPI_ANY_SOURCE);
        sdr_send_free(r->send);
    } else if (r->kind == REQ_RECV) {
        rc = sdr_recv_error(r->recv);
        if (st != MPI_STATUS_IGNORE) sdr_recv_done(r->recv, st);
        sdr_recv_free(r->recv);
    } else {
        empty_status(st, MPI_ANY_SOURCE);
        if (!r->persistent) sdr_sched_free(r->sched), r->sched = NULL; /* a persistent one starts again */
    }
    if (r->pair) {
        if (rc == MPI_SUCCESS) rc = sdr_send_error(r->pair);
        sdr_send_free(r->pair);
        r->pair = NULL;
    }
    r->send = NULL, r->recv = NULL;
    r->active = 0;
    if (!r->persistent) {
        echo_handle_free(*h);
        free_req(r);
        *h = MPI_REQUEST_NULL;
    }
    if (st != MPI_STATUS_IGNORE && rc != MPI_SUCCESS) st->MPI_ERROR = rc; /* else as the application set it */
    return rc;
}

/* 1 if the request is complete, or null / inactive (`*inactive` says which) */
static int ready(MPI_Request h, int *inactive) {
    *inactive = h == MPI_REQUEST_NULL || (sdr_is_request(h) && !req_of(h)->active);
    if (*inactive) return 1;
    if (sdr_is_request(h)) return req_ready(req_of(h));
    int flag = 0;
    PMPI_Request_get_status(h, &flag, MPI_STATUS_IGNORE);
    return flag;
}

static int retire(MPI_Request *h, MPI_Status *st) {
    if (*h == MPI_REQUEST_NULL) {
        empty_status(st, MPI_ANY_SOURCE);
        return MPI_SUCCESS;
    }
    if (sdr_is_request(*h)) return req_retire(h, st);
    return PMPI_Wait(h, st);
}

static MPI_Status *nth(MPI_Status *statuses, int i) {
    return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
}

/* ---- the completion calls ---- */

int echo_sdr_MPI_Wait(MPI_Request *request, MPI_Status *status) {
    int spins = 0, inactive;
    while (!ready(*request, &inactive)) sdr_spin(&spins);
    return retire(request, status);
}

int echo_sdr_MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
    int inactive;
    sdr_progress();
    *flag = ready(*request, &inactive);
    return *flag ? retire(request, status) : MPI_SUCCESS;
}

static int all_ready(int n, MPI_Request reqs[]) {
    for (int i = 0; i < n; i++) {
        int inactive;
        if (!ready(reqs[i], &inactive)) return 0;
    }
    return 1;
}

/* a multiple-completion call's status carries each operation's error (MPI_ERR_IN_STATUS) */
static int retire_nth(MPI_Request *h, MPI_Status *st) {
    int rc = retire(h, st);
    if (st != MPI_STATUS_IGNORE) st->MPI_ERROR = rc;
    return rc;
}

static int retire_all(int n, MPI_Request reqs[], MPI_Status statuses[]) {
    int failed = 0;
    for (int i = 0; i < n; i++)
        if (retire_nth(&reqs[i], nth(statuses, i)) != MPI_SUCCESS) failed = 1;
    return failed ? MPI_ERR_IN_STATUS : MPI_SUCCESS;
}

int echo_sdr_MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[]) {
    int spins = 0;
    while (!all_ready(count, array_of_requests)) sdr_spin(&spins);
    return retire_all(count, array_of_requests, array_of_statuses);
}

int echo_sdr_MPI_Testall(int count, MPI_Request array_of_requests[], int *flag, MPI_Status array_of_statuses[]) {
    sdr_progress();
    *flag = all_ready(count, array_of_requests);
    return *flag ? retire_all(count, array_of_requests, array_of_statuses) : MPI_SUCCESS;
}

/* the first complete active request's index; MPI_UNDEFINED if none is active, -1 if none is complete yet */
static int first_ready(int n, MPI_Request reqs[]) {
    int any_active = 0;
    for (int i = 0; i < n; i++) {
        int inactive;
        int done = ready(reqs[i], &inactive);
        if (inactive) continue;
        any_active = 1;
        if (done) return i;
    }
    return any_active ? -1 : MPI_UNDEFINED;
}

int echo_sdr_MPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status) {
    int spins = 0;
    while ((*index = first_ready(count, array_of_requests)) == -1) sdr_spin(&spins);
    if (*index == MPI_UNDEFINED) {
        empty_status(status, MPI_ANY_SOURCE);
        return MPI_SUCCESS;
    }
    return retire(&array_of_requests[*index], status);
}

int echo_sdr_MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag, MPI_Status *status) {
    sdr_progress();
    *index = first_ready(count, array_of_requests);
    *flag = *index != -1;
    if (*index == -1) *index = MPI_UNDEFINED;
    if (*index == MPI_UNDEFINED) {
        if (*flag) empty_status(status, MPI_ANY_SOURCE);
        return MPI_SUCCESS;
    }
    return retire(&array_of_requests[*index], status);
}

/* every complete active request; *outcount MPI_UNDEFINED if none is active */
static int some(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[]) {
    int any_active = 0, failed = 0;
    *outcount = 0;
    for (int i = 0; i < n; i++) {
        int inactive;
        int done = ready(reqs[i], &inactive);
        if (inactive) continue;
        any_active = 1;
        if (!done) continue;
        if (retire_nth(&reqs[i], nth(statuses, *outcount)) != MPI_SUCCESS) failed = 1;
        indices[(*outcount)++] = i;
    }
    if (!any_active) *outcount = MPI_UNDEFINED;
    return failed ? MPI_ERR_IN_STATUS : MPI_SUCCESS;
}

int echo_sdr_MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                          MPI_Status array_of_statuses[]) {
    int spins = 0, rc;
    while ((rc = some(incount, array_of_requests, outcount, array_of_indices, array_of_statuses)) == MPI_SUCCESS &&
           *outcount == 0)
        sdr_spin(&spins);
    return rc;
}

int echo_sdr_MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                          MPI_Status array_of_statuses[]) {
    sdr_progress();
    return some(incount, array_of_requests, outcount, array_of_indices, array_of_statuses);
}

int echo_sdr_MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status) {
    if (!sdr_is_request(request)) return PMPI_Request_get_status(request, flag, status);
    sdr_req_t *r = req_of(request);
    sdr_progress();
    *flag = req_ready(r);
    if (!*flag) return MPI_SUCCESS;
    if (r->active && r->kind == REQ_RECV && !r->proc_null && status != MPI_STATUS_IGNORE)
        sdr_recv_done(r->recv, status);
    else empty_status(status, r->proc_null && r->kind == REQ_RECV ? MPI_PROC_NULL : MPI_ANY_SOURCE);
    return MPI_SUCCESS;
}

/* a receive not yet matched is cancelled; a send or collective cannot be (MPI lets a cancel fail): it
 * completes normally, as its replicas' do */
int echo_sdr_MPI_Cancel(MPI_Request *request) {
    if (!sdr_is_request(*request)) return PMPI_Cancel(request);
    sdr_req_t *r = req_of(*request);
    if (r->active && r->kind == REQ_RECV && !r->proc_null && !r->cancelled && sdr_recv_cancel(r->recv)) {
        sdr_recv_free(r->recv);
        r->recv = NULL;
        r->cancelled = 1;
    }
    return MPI_SUCCESS;
}

/* A send goes on without its handle (the layer keeps it until acked); a receive or collective is waited
 * for here, so that what it delivers still arrives */
int echo_sdr_MPI_Request_free(MPI_Request *request) {
    if (!sdr_is_request(*request)) return PMPI_Request_free(request);
    sdr_req_t *r = req_of(*request);
    if (r->active && r->kind == REQ_SEND && r->send) {
        sdr_send_free(r->send);
        r->send = NULL;
        r->active = 0;
    } else if (r->active) {
        int spins = 0;
        while (!req_ready(r)) sdr_spin(&spins);
        r->persistent = 1; /* retire it, keep the struct: freed below */
        req_retire(request, MPI_STATUS_IGNORE);
    }
    if (r->sched) sdr_sched_free(r->sched);
    echo_handle_free(*request);
    free_req(r);
    *request = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}

int echo_sdr_MPI_Start(MPI_Request *request) {
    if (!sdr_is_request(*request)) return PMPI_Start(request);
    return start(req_of(*request));
}

int echo_sdr_MPI_Startall(int count, MPI_Request array_of_requests[]) {
    for (int i = 0; i < count; i++) {
        int rc = echo_sdr_MPI_Start(&array_of_requests[i]);
        if (rc != MPI_SUCCESS) return rc;
    }
    return MPI_SUCCESS;
}

/* ---- sends and receives ---- */

static int isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, int mode, int bsend,
                 int persistent, MPI_Request *request) {
    sdr_comm_t *c = sdr_comm_of(comm);
    int rc = check_peer(c, dest, 0);
    if (rc != MPI_SUCCESS) return rc;
    sdr_req_t *r = new_req(REQ_SEND, persistent, c, buf, count, dt, dest, tag, mode, bsend);
    *request = handle_of(r);
    if (persistent) return MPI_SUCCESS;
    rc = start(r);
    if (rc != MPI_SUCCESS) retire(request, MPI_STATUS_IGNORE), *request = MPI_REQUEST_NULL;
    return rc;
}

static int irecv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, int persistent,
                 MPI_Request *request) {
    sdr_comm_t *c = sdr_comm_of(comm);
    int rc = check_peer(c, source, 1);
    if (rc != MPI_SUCCESS) return rc;
    sdr_req_t *r = new_req(REQ_RECV, persistent, c, buf, count, dt, source, tag, 0, 0);
    *request = handle_of(r);
    if (persistent) return MPI_SUCCESS;
    rc = start(r);
    if (rc != MPI_SUCCESS) retire(request, MPI_STATUS_IGNORE), *request = MPI_REQUEST_NULL;
    return rc;
}

/* a copied send completes at once; the layer keeps the copy until the acks are in */
static int blocking_send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, int mode,
                         int bsend) {
    MPI_Request req;
    int rc = isend(buf, count, dt, dest, tag, comm, mode, bsend, 0, &req);
    if (rc != MPI_SUCCESS) return rc;
    return echo_sdr_MPI_Wait(&req, MPI_STATUS_IGNORE);
}

/* The send modes: synchronous (1) or standard; buffered (copied at once); persistent (`_init`).  Ready mode is a
 * promise about the receiver: a standard send keeps it. */
#define SDR_BLOCKING_SEND(name, mode, bsend)                                                                     \
    int echo_sdr_##name(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {    \
        return blocking_send(buf, count, datatype, dest, tag, comm, mode, bsend);                                 \
    }
#define SDR_NONBLOCKING_SEND(name, mode, bsend, persistent)                                                      \
    int echo_sdr_##name(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,      \
                        MPI_Request *request) {                                                                   \
        return isend(buf, count, datatype, dest, tag, comm, mode, bsend, persistent, request);                    \
    }
SDR_BLOCKING_SEND(MPI_Send, 0, 0)
SDR_BLOCKING_SEND(MPI_Ssend, 1, 0)
SDR_BLOCKING_SEND(MPI_Rsend, 0, 0)
SDR_BLOCKING_SEND(MPI_Bsend, 0, 1)
SDR_NONBLOCKING_SEND(MPI_Isend, 0, 0, 0)
SDR_NONBLOCKING_SEND(MPI_Issend, 1, 0, 0)
SDR_NONBLOCKING_SEND(MPI_Irsend, 0, 0, 0)
SDR_NONBLOCKING_SEND(MPI_Ibsend, 0, 1, 0)
SDR_NONBLOCKING_SEND(MPI_Send_init, 0, 0, 1)
SDR_NONBLOCKING_SEND(MPI_Ssend_init, 1, 0, 1)
SDR_NONBLOCKING_SEND(MPI_Rsend_init, 0, 0, 1)
SDR_NONBLOCKING_SEND(MPI_Bsend_init, 0, 1, 1)

int echo_sdr_MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                       MPI_Request *request) {
    return irecv(buf, count, datatype, source, tag, comm, 0, request);
}
int echo_sdr_MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                           MPI_Request *request) {
    return irecv(buf, count, datatype, source, tag, comm, 1, request);
}
int echo_sdr_MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                      MPI_Status *status) {
    MPI_Request req;
    int rc = irecv(buf, count, datatype, source, tag, comm, 0, &req);
    return rc != MPI_SUCCESS ? rc : echo_sdr_MPI_Wait(&req, status);
}

int echo_sdr_MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status) {
    sdr_comm_t *c = sdr_comm_of(comm);
    int rc = check_peer(c, source, 1);
    if (rc != MPI_SUCCESS) return rc;
    if (source == MPI_PROC_NULL) {
        *flag = 1;
        empty_status(status, MPI_PROC_NULL);
        return MPI_SUCCESS;
    }
    return sdr_probe(c, source, tag, flag, status);
}

int echo_sdr_MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status) {
    int flag = 0, spins = 0, rc;
    while ((rc = echo_sdr_MPI_Iprobe(source, tag, comm, &flag, status)) == MPI_SUCCESS && !flag) sdr_spin(&spins);
    return rc;
}

/* ---- matched probes: the message handle wraps the real one and what the application is told ---- */

#define SDR_MSG_MAGIC 0x53444d47u
typedef struct sdr_msg {
    unsigned magic;
    MPI_Message real;
    int source; /* the sender's rank in the communicator */
} sdr_msg_t;

static int is_sdr_msg(MPI_Message m) {
    sdr_msg_t *x;
    memcpy(&x, &m, sizeof x);
    return m != MPI_MESSAGE_NULL && m != MPI_MESSAGE_NO_PROC && x->magic == SDR_MSG_MAGIC;
}

int echo_sdr_MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *status) {
    sdr_comm_t *c = sdr_comm_of(comm);
    int rc = check_peer(c, source, 1);
    if (rc != MPI_SUCCESS) return rc;
    if (source == MPI_PROC_NULL) {
        *flag = 1;
        *message = MPI_MESSAGE_NO_PROC;
        empty_status(status, MPI_PROC_NULL);
        return MPI_SUCCESS;
    }
    MPI_Message real;
    MPI_Status st;
    rc = sdr_improbe(c, source, tag, flag, &real, &st);
    if (rc != MPI_SUCCESS || !*flag) return rc;
    echo_set_status(status, &st);
    sdr_msg_t *m = malloc(sizeof *m);
    *m = (sdr_msg_t){SDR_MSG_MAGIC, real, st.MPI_SOURCE};
    memcpy(message, &m, sizeof m);
    return MPI_SUCCESS;
}

int echo_sdr_MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status) {
    int flag = 0, spins = 0, rc;
    while ((rc = echo_sdr_MPI_Improbe(source, tag, comm, &flag, message, status)) == MPI_SUCCESS && !flag)
        sdr_spin(&spins);
    return rc;
}

int echo_sdr_MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status) {
    if (!is_sdr_msg(*message)) return PMPI_Mrecv(buf, count, datatype, message, status);
    sdr_msg_t *m;
    memcpy(&m, message, sizeof m);
    MPI_Status st;
    int rc = PMPI_Mrecv(buf, count, datatype, &m->real, &st);
    st.MPI_SOURCE = m->source;
    free(m);
    *message = MPI_MESSAGE_NULL;
    echo_set_status(status, &st);
    return rc;
}

/* the message is matched already: receiving it waits only for its data, which its sender is sending */
int echo_sdr_MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Request *request) {
    if (!is_sdr_msg(*message)) return PMPI_Imrecv(buf, count, datatype, message, request);
    sdr_req_t *r = new_req(REQ_DONE, 0, NULL, buf, count, datatype, 0, 0, 0, 0);
    r->active = 1;
    int rc = echo_sdr_MPI_Mrecv(buf, count, datatype, message, &r->done_status);
    r->done_status.MPI_ERROR = rc;
    *request = handle_of(r);
    return rc;
}

/* ---- MPI-4 Isendrecv: a receive request that also carries its send ---- */

static int isendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf,
                     int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, int replace,
                     MPI_Request *request) {
    sdr_comm_t *c = sdr_comm_of(comm);
    int rc = check_peer(c, dest, 0);
    if (rc == MPI_SUCCESS) rc = check_peer(c, source, 1); /* both before anything goes out */
    if (rc != MPI_SUCCESS) return rc;
    sdr_send_t *pair = NULL;
    if (dest != MPI_PROC_NULL) { /* replace: the outgoing data is copied first, the receive may land on it */
        int copy = replace || sdr_send_copies(c, dest, sendcount, sendtype);
        pair = sdr_send_start(c, SDR_DATA, sendbuf, sendcount, sendtype, dest, sendtag, 0, copy);
        if ((rc = sdr_send_error(pair)) != MPI_SUCCESS) {
            sdr_send_free(pair);
            return rc;
        }
    }
    rc = irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, 0, request);
    if (rc != MPI_SUCCESS) {
        if (pair) sdr_send_free(pair);
        return rc;
    }
    req_of(*request)->pair = pair;
    return MPI_SUCCESS;
}

int echo_sdr_MPI_Isendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                           MPI_Request *request) {
    return isendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag, comm,
                     0, request);
}

int echo_sdr_MPI_Isendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source,
                                   int recvtag, MPI_Comm comm, MPI_Request *request) {
    return isendrecv(buf, count, datatype, dest, sendtag, buf, count, datatype, source, recvtag, comm, 1, request);
}

/* the blocking forms: an Isendrecv and its Wait */
int echo_sdr_MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                          MPI_Status *status) {
    MPI_Request req;
    int rc = isendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
                       comm, 0, &req);
    return rc != MPI_SUCCESS ? rc : echo_sdr_MPI_Wait(&req, status);
}

int echo_sdr_MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source,
                                  int recvtag, MPI_Comm comm, MPI_Status *status) {
    MPI_Request req;
    int rc = isendrecv(buf, count, datatype, dest, sendtag, buf, count, datatype, source, recvtag, comm, 1, &req);
    return rc != MPI_SUCCESS ? rc : echo_sdr_MPI_Wait(&req, status);
}
