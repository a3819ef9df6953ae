/* Nonblocking and persistent point-to-point and collectives under cloning.
 *
 * With clones, every request the application holds is an echo request: a
 * handle to an echo_req_t that, on a representative, wraps the real request.
 * Completion is decided by the representative alone: after its real Wait/Test
 * call it forwards which requests completed (indices, flags) and then, for each
 * completed request in order, what the request delivered (data and status of a
 * receive, output buffers of a collective).  Copies make the same call at the
 * same point of the program and apply exactly that outcome, so they see the
 * same completion order, indices and statuses as their representative.
 *
 * Local requests (on MPI_COMM_SELF or a communicator made from it, generalized
 * requests) are each copy's own, and may be completed in one call together
 * with echo requests: the representative's call decides for all of them, and a
 * copy completes each local request its representative found complete by
 * waiting for its own: the same operation of the same program, which completes
 * on the copy too (a generalized request once the program completes it). */
#include "echo_clone.h"
#include "echo_records.h"

#include <stdlib.h>
#include <string.h>

enum { REQ_SEND, REQ_RECV, REQ_COLL };
#define REQ_MAGIC 0x6563686fu

typedef struct echo_req {
    unsigned magic;
    int kind;
    int persistent, active, cancelled;
    MPI_Request real;  /* the representative's request; MPI_REQUEST_NULL on copies */
    /* what completion delivers: a receive's buffer, or a collective's output */
    void *buf;
    int count;
    MPI_Datatype dt;
    int owns_dt;       /* dt was built for this request: freed with it */
    int partitions;    /* > 0: partitioned communication (echo_partitioned.c) */
    int whole;         /* deliver all `count` elements whatever the status says: MPICH 5 and Intel MPI leave
                        * MPI_Isendrecv's status unset, so a copy would get part of the message */
    int source, rtag;  /* a receive's named source and tag (else MPI_ANY_*): a message from itself is known by
                        * them where the status is unset (MPICH's MPI_Isendrecv) */
    int ready;         /* a partitioned send's partitions marked ready since its start */
    int32_t comm_id, peer; /* a persistent send's, for the SDC check at each start */
    int (*done)(void *arg, int rc); /* run on every side when a Wait/Test retires the request */
    void *arg;
    echo_own_t *own;   /* a copy's own block of a collective's result (echo_own.c), kept at each start */
    int owns_stype, owns_rtype;
    int self;          /* a receive's (or send's) rank in its communicator: messages to itself (echo_own.c) */
    int tag;           /* a persistent send's, for a message to itself */
    MPI_Comm comm;
} echo_req_t;

/* Requests on process-local communicators (MPI_COMM_SELF) and generalized
 * requests are real MPI requests each copy completes itself; all others are
 * echo requests. */
static int is_echo(MPI_Request h) {
    echo_req_t *r = echo_handle_state(h);
    return r && r->magic == REQ_MAGIC;
}

static echo_req_t *req_of(MPI_Request h) {
    echo_req_t *r = echo_handle_state(h);
    if (!is_echo(h)) echo_fatal("echo took a process-local request for a replicated one (an echo bug)");
    return r;
}

/* 1: no echo request among them: the call passes through */
static int none_echo(int n, const MPI_Request *reqs) {
    for (int i = 0; i < n; i++)
        if (is_echo(reqs[i])) return 0;
    return 1;
}

static MPI_Request new_req(int kind, int persistent, MPI_Request real, void *buf, int count, MPI_Datatype dt) {
    echo_req_t *r = calloc(1, sizeof *r);
    r->self = -1;
    r->source = MPI_ANY_SOURCE;
    r->rtag = MPI_ANY_TAG;
    r->magic = REQ_MAGIC;
    r->kind = kind;
    r->persistent = persistent;
    r->active = !persistent;
    r->real = real;
    r->buf = buf;
    r->count = count;
    r->dt = dt;
    if (kind != REQ_SEND || persistent) r->owns_dt = echo_type_keep(dt, &r->dt); /* a send's data went at start */
    return echo_handle_new(r);
}

static int is_null(MPI_Request h) { return h == MPI_REQUEST_NULL; }

void echo_request_own(MPI_Request h, const echo_own_t *o) {
    if (!o->on || !is_echo(h)) return;
    echo_req_t *r = req_of(h);
    r->own = malloc(sizeof *r->own);
    *r->own = *o;
    r->owns_stype = echo_type_keep(o->stype, &r->own->stype); /* the program may free its types first */
    r->owns_rtype = echo_type_keep(o->rtype, &r->own->rtype);
    if (!r->persistent) echo_own_keep(r->own);
}

static void free_own(echo_req_t *r) {
    if (!r->own) return;
    if (r->owns_stype) PMPI_Type_free(&r->own->stype);
    if (r->owns_rtype) PMPI_Type_free(&r->own->rtype);
    free(r->own->bytes);
    free(r->own);
    r->own = NULL;
}

/* What the representative's MPI call completes: the real request of an active
 * echo request, MPI_REQUEST_NULL for an inactive one (as MPI treats an inactive
 * request), local requests as they are. */
static MPI_Request *reals(int n, MPI_Request *reqs, MPI_Request *small) {
    MPI_Request *out = n <= 16 ? small : malloc(sizeof *out * (size_t)n);
    for (int i = 0; i < n; i++) {
        echo_req_t *r = is_echo(reqs[i]) ? req_of(reqs[i]) : NULL;
        out[i] = !r ? reqs[i] : r->active ? r->real : MPI_REQUEST_NULL;
    }
    return out;
}

/* After the representative's call: what MPI left of request i (freed, or a
 * persistent one made inactive) */
static void keep_real(MPI_Request reqs[], const MPI_Request *real, int i) {
    if (!is_echo(reqs[i])) reqs[i] = real[i];
    else if (req_of(reqs[i])->active) req_of(reqs[i])->real = real[i];
}

static void empty_status(MPI_Status *status) {
    if (status != MPI_STATUS_IGNORE) PMPI_Wait(&(MPI_Request){MPI_REQUEST_NULL}, status);
}

/* Apply one completion on both sides: forward what the request delivered, then
 * retire it (free a one-shot request, deactivate a persistent one). */
static int finish(MPI_Request *h, MPI_Status *status, int rc) {
    echo_req_t *r = req_of(*h);
    MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
    if (r->kind == REQ_RECV) {
        rc = r->whole ? echo_forward_status_whole(r->buf, r->count, r->dt, st, rc)
                      : echo_forward_status(r->buf, r->count, r->dt, st, rc);
        MPI_Status from = *st;
        if (r->source != MPI_ANY_SOURCE) from.MPI_SOURCE = r->source;
        if (r->rtag != MPI_ANY_TAG) from.MPI_TAG = r->rtag;
        echo_self_receive(r->buf, r->count, r->dt, &from, r->comm_id, r->self, rc);
    } else if (r->kind == REQ_COLL) {
        rc = echo_forward(r->buf, r->count, r->dt, rc);
        if (r->own) rc = echo_own_put(r->own, rc);
        if (!echo_is_rep() && status != MPI_STATUS_IGNORE) memset(status, 0, sizeof *status);
    } else if (r->cancelled) {
        rc = echo_forward_status(NULL, 0, MPI_BYTE, st, rc); /* whether the cancel won */
    } else if (!echo_is_rep() && status != MPI_STATUS_IGNORE) {
        memset(status, 0, sizeof *status); /* a send's status carries nothing copies could differ on */
    }
    r->cancelled = 0;
    if (r->done) rc = r->done(r->arg, rc);
    if (r->persistent) {
        r->active = 0;
    } else {
        if (r->owns_dt) PMPI_Type_free(&r->dt);
        free_own(r);
        r->magic = 0;
        echo_handle_free(*h);
        free(r);
        *h = MPI_REQUEST_NULL;
    }
    return rc;
}

/* Apply the representative's decision that request *h completed: an echo
 * request is finished; a local one was completed by the representative's own
 * call, and a copy waits for its own. */
static int complete(MPI_Request *h, MPI_Status *status, int rc) {
    if (is_echo(*h)) return finish(h, status, rc);
    return echo_is_rep() ? rc : PMPI_Wait(h, status);
}

/* A copy's part of a completion its representative decided for every request
 * (Waitall, a Testall that succeeded): it waits for its own local requests;
 * null and inactive entries get the empty status MPI gives them. */
static int wait_local(int count, MPI_Request reqs[], MPI_Status statuses[]) {
    MPI_Request small[16], *loc = count <= 16 ? small : malloc(sizeof *loc * (size_t)count);
    for (int i = 0; i < count; i++) loc[i] = is_echo(reqs[i]) ? MPI_REQUEST_NULL : reqs[i];
    int rc = PMPI_Waitall(count, loc, statuses);
    for (int i = 0; i < count; i++)
        if (!is_echo(reqs[i])) reqs[i] = loc[i];
    if (loc != small) free(loc);
    return rc;
}

/* ---- generalized requests: how often MPI asks their query function ----
 * A copy's generalized request is its own (the program completes it), but a call that mixes it with echo
 * requests is decided by the representative's MPI alone; MPICH 5 and Intel MPI call a complete generalized
 * request's query function at every Testall that does not complete them all, so the representative's count
 * depends on its polls, and a copy's MPI (which makes no call at such a poll) would count fewer.  Every query
 * function is reached through echo's, which counts its calls; in a mixed call the representative forwards how
 * often its MPI called each one, and a copy calls its own function that many more times, before its MPI
 * completes the request (and frees the program's state: the copy's own completion asks once more, as the
 * representative's did). */
typedef struct echo_greq {
    MPI_Grequest_query_function *query;
    MPI_Grequest_free_function *free_fn;
    MPI_Grequest_cancel_function *cancel;
    void *extra;
    MPI_Request req;
    int queried, before; /* calls of query: all, and before the current mixed call */
    int in_call, freed;  /* MPI freed it during a mixed call: kept until the call ends */
    struct echo_greq *next;
} echo_greq_t;

static echo_greq_t *greqs;

static int greq_query(void *state, MPI_Status *status) {
    echo_greq_t *g = state;
    g->queried++;
    return g->query(g->extra, status);
}

static int greq_free(void *state) {
    echo_greq_t *g = state;
    int rc = g->free_fn(g->extra);
    for (echo_greq_t **p = &greqs; *p; p = &(*p)->next)
        if (*p == g) {
            *p = g->next;
            break;
        }
    if (g->in_call) g->freed = 1;
    else free(g);
    return rc;
}

static int greq_cancel(void *state, int complete) {
    echo_greq_t *g = state;
    return g->cancel(g->extra, complete);
}

int echo_MPI_Grequest_start(MPI_Grequest_query_function *query_fn, MPI_Grequest_free_function *free_fn,
                            MPI_Grequest_cancel_function *cancel_fn, void *extra_state, MPI_Request *request) {
    echo_greq_t *g = calloc(1, sizeof *g);
    *g = (echo_greq_t){.query = query_fn, .free_fn = free_fn, .cancel = cancel_fn, .extra = extra_state};
    int rc = PMPI_Grequest_start(greq_query, greq_free, greq_cancel, g, request);
    if (rc != MPI_SUCCESS) {
        free(g);
        return rc;
    }
    g->req = *request;
    g->next = greqs;
    greqs = g;
    return rc;
}

/* The generalized requests of one mixed call, by index (NULL: none there). */
typedef struct {
    int n, found;
    echo_greq_t **g, *small[16];
} greq_call_t;

static void queries_start(greq_call_t *q, int n, const MPI_Request reqs[]) {
    q->n = n;
    q->found = 0;
    q->g = n <= 16 ? q->small : calloc((size_t)n, sizeof *q->g);
    for (int i = 0; i < n; i++) {
        q->g[i] = NULL;
        if (is_null(reqs[i]) || is_echo(reqs[i])) continue;
        for (echo_greq_t *g = greqs; g; g = g->next)
            if (g->req == reqs[i]) {
                g->before = g->queried;
                g->in_call = 1;
                q->g[i] = g;
                q->found++;
                break;
            }
    }
}

/* After the representative's decision, before a copy completes its own requests: `done(i, arg)` says whether
 * request i completes in this call (its completion asks the query function once on the copy too). */
static void queries_replay(greq_call_t *q, int (*done)(int i, const void *arg), const void *arg) {
    if (!q->found || !echo_has_copies()) return;
    int small[16], *calls = q->n <= 16 ? small : malloc(sizeof *calls * (size_t)q->n);
    for (int i = 0; i < q->n; i++) calls[i] = q->g[i] ? q->g[i]->queried - q->g[i]->before : 0;
    echo_forward(calls, q->n, MPI_INT, MPI_SUCCESS);
    for (int i = 0; i < q->n && !echo_is_rep(); i++) {
        echo_greq_t *g = q->g[i];
        if (!g) continue;
        MPI_Status scratch;
        for (int k = calls[i] - (done(i, arg) ? 1 : 0) - (g->queried - g->before); k > 0; k--) greq_query(g, &scratch);
    }
    if (calls != small) free(calls);
}

static void queries_end(greq_call_t *q) {
    for (int i = 0; i < q->n; i++) {
        echo_greq_t *g = q->g[i];
        if (!g) continue;
        g->in_call = 0;
        if (g->freed) free(g);
    }
    if (q->g != q->small) free(q->g);
}

static int done_all(int i, const void *arg) {
    (void)i;
    return *(const int *)arg;
}

static int done_one(int i, const void *arg) { return i == *(const int *)arg; }

typedef struct { int n; const int *idx; } done_some_t;

static int done_some(int i, const void *arg) {
    const done_some_t *d = arg;
    for (int k = 0; k < d->n; k++)
        if (d->idx[k] == i) return 1;
    return 0;
}

/* ---- creating requests ---- */

#define ECHO_DEFINE_ISEND(fn, persistent)                                                                    \
    int echo_##fn(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm, \
                  MPI_Request *request) {                                                        \
        echo_comm_t *c = echo_comm_get(comm, #fn);                                               \
        MPI_Request real = MPI_REQUEST_NULL;                                                     \
        if (!persistent) echo_outgoing(#fn, 0, buf, count, datatype, echo_comm_id(comm), echo_peer(dest)); \
        int rc = echo_is_rep() ? P##fn(buf, count, datatype, dest, tag, c->real, &real)          \
                               : echo_check_send(buf, count, datatype, dest, tag, echo_comm_peers(c)); \
        if (rc != MPI_SUCCESS) return rc; /* a misused call: MPI made no request */              \
        if (!persistent) echo_self_send(buf, count, datatype, dest, tag, comm);                  \
        *request = new_req(REQ_SEND, persistent, real, (void *)buf, count, datatype);            \
        req_of(*request)->comm_id = echo_comm_id(comm);                                          \
        req_of(*request)->peer = echo_peer(dest);                                                \
        req_of(*request)->self = dest;                                                           \
        req_of(*request)->tag = tag;                                                             \
        req_of(*request)->comm = comm;                                                           \
        return rc;                                                                               \
    }
ECHO_DEFINE_ISEND(MPI_Isend, 0)
ECHO_DEFINE_ISEND(MPI_Issend, 0)
ECHO_DEFINE_ISEND(MPI_Irsend, 0)
ECHO_DEFINE_ISEND(MPI_Ibsend, 0)
ECHO_DEFINE_ISEND(MPI_Send_init, 1)
ECHO_DEFINE_ISEND(MPI_Ssend_init, 1)
ECHO_DEFINE_ISEND(MPI_Rsend_init, 1)
ECHO_DEFINE_ISEND(MPI_Bsend_init, 1)

int echo_MPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                   MPI_Request *request) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Irecv");
    MPI_Request real = MPI_REQUEST_NULL;
    int rc = echo_is_rep() ? PMPI_Irecv(buf, count, datatype, source, tag, c->real, &real)
                           : echo_check_recv(buf, count, datatype, source, tag, echo_comm_peers(c));
    if (rc != MPI_SUCCESS) return rc;
    *request = new_req(REQ_RECV, 0, real, buf, count, datatype);
    req_of(*request)->comm_id = echo_comm_id(comm);
    req_of(*request)->self = echo_self_rank(comm);
    return rc;
}

int echo_MPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                       MPI_Request *request) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Recv_init");
    MPI_Request real = MPI_REQUEST_NULL;
    int rc = echo_is_rep() ? PMPI_Recv_init(buf, count, datatype, source, tag, c->real, &real)
                           : echo_check_recv(buf, count, datatype, source, tag, echo_comm_peers(c));
    if (rc != MPI_SUCCESS) return rc;
    *request = new_req(REQ_RECV, 1, real, buf, count, datatype);
    req_of(*request)->comm_id = echo_comm_id(comm);
    req_of(*request)->self = echo_self_rank(comm);
    return rc;
}

int echo_MPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Request *request) {
    int32_t comm_id;
    int self;
    if (!echo_message_take(*message, &comm_id, &self))
        return PMPI_Imrecv(buf, count, datatype, message, request); /* local */
    MPI_Request real = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
    if (echo_is_rep()) rc = PMPI_Imrecv(buf, count, datatype, message, &real);
    else *message = MPI_MESSAGE_NULL;
    *request = new_req(REQ_RECV, 0, real, buf, count, datatype);
    req_of(*request)->comm_id = comm_id; /* a message the copy sent itself is its own (finish) */
    req_of(*request)->self = self;
    return rc;
}

int echo_MPI_Start(MPI_Request *request) {
    if (!is_echo(*request)) return PMPI_Start(request);
    echo_req_t *r = req_of(*request);
    /* a partitioned send's data is checked partition by partition, at MPI_Pready */
    if (r->kind == REQ_SEND && !r->partitions) echo_outgoing("MPI_Start", 0, r->buf, r->count, r->dt, r->comm_id, r->peer);
    if (r->kind == REQ_SEND && !r->partitions) echo_self_send(r->buf, r->count, r->dt, r->self, r->tag, r->comm);
    if (r->own) echo_own_keep(r->own);
    r->ready = 0;
    int rc = echo_is_rep() ? PMPI_Start(&r->real) : MPI_SUCCESS;
    r->active = 1;
    return rc;
}

int echo_MPI_Startall(int count, MPI_Request array_of_requests[]) {
    if (none_echo(count, array_of_requests)) return PMPI_Startall(count, array_of_requests);
    int rc = MPI_SUCCESS;
    for (int i = 0; i < count && rc == MPI_SUCCESS; i++) rc = echo_MPI_Start(&array_of_requests[i]);
    return rc;
}

int echo_MPI_Request_free(MPI_Request *request) {
    if (!is_echo(*request)) return PMPI_Request_free(request);
    echo_req_t *r = req_of(*request);
    int rc = echo_is_rep() && r->real != MPI_REQUEST_NULL ? PMPI_Request_free(&r->real) : MPI_SUCCESS;
    if (r->owns_dt) PMPI_Type_free(&r->dt);
    free_own(r);
    r->magic = 0;
    echo_handle_free(*request);
    free(r);
    *request = MPI_REQUEST_NULL;
    return rc;
}

int echo_MPI_Cancel(MPI_Request *request) {
    if (!is_echo(*request)) return PMPI_Cancel(request);
    echo_req_t *r = req_of(*request);
    r->cancelled = 1;
    return echo_is_rep() ? PMPI_Cancel(&r->real) : MPI_SUCCESS;
}

/* ---- completing requests ---- */

int echo_MPI_Wait(MPI_Request *request, MPI_Status *status) {
    if (!is_null(*request) && !is_echo(*request)) return PMPI_Wait(request, status);
    if (is_null(*request) || !req_of(*request)->active) {
        empty_status(status);
        return MPI_SUCCESS;
    }
    echo_req_t *r = req_of(*request);
    MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
    int rc = echo_is_rep() ? PMPI_Wait(&r->real, st) : MPI_SUCCESS;
    return finish(request, st, rc);
}

int echo_MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
    if (!is_null(*request) && !is_echo(*request)) return PMPI_Test(request, flag, status);
    if (is_null(*request) || !req_of(*request)->active) {
        *flag = 1;
        return echo_MPI_Wait(request, status);
    }
    echo_req_t *r = req_of(*request);
    MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
    int rc = echo_is_rep() ? PMPI_Test(&r->real, flag, st) : MPI_SUCCESS;
    rc = echo_forward(flag, 1, MPI_INT, rc);
    return *flag ? finish(request, st, rc) : rc;
}

int echo_MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status) {
    /* it does not retire the request; what it delivers is forwarded when a
     * Wait or Test retires it (copies cannot look at the buffer before that
     * without racing their representative anyway) */
    if (!is_null(request) && !is_echo(request)) return PMPI_Request_get_status(request, flag, status);
    int rc = MPI_SUCCESS;
    MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
    if (echo_is_rep()) {
        echo_req_t *r = is_null(request) ? NULL : req_of(request);
        rc = PMPI_Request_get_status(r && r->active ? r->real : MPI_REQUEST_NULL, flag, st);
    }
    struct { int flag; MPI_Status st; } m = {*flag, *st};
    rc = echo_forward_bytes(&m, sizeof m, rc);
    *flag = m.flag;
    *st = m.st;
    return rc;
}

/* MPI-4.1's get_status over many requests: as MPI_Request_get_status, nothing is retired and nothing delivered
 * (a Wait or Test that retires a request delivers it); the representative's answer (flags, index, statuses) is
 * every copy's.  A local request among them is answered by the representative's MPI too: the same operation of
 * the same program, which a copy's own Wait completes later. */
#if ECHO_DECLARES(MPI_Request_get_status_all)
int echo_MPI_Request_get_status_all(int count, const MPI_Request array_of_requests[], int *flag,
                                    MPI_Status array_of_statuses[]) {
    if (none_echo(count, array_of_requests))
        return PMPI_Request_get_status_all(count, array_of_requests, flag, array_of_statuses);
    int rc = MPI_SUCCESS;
    if (echo_is_rep()) {
        MPI_Request small[16], *real = reals(count, (MPI_Request *)array_of_requests, small);
        rc = PMPI_Request_get_status_all(count, real, flag, array_of_statuses);
        if (real != small) free(real);
    }
    rc = echo_forward(flag, 1, MPI_INT, rc);
    /* MPI writes the statuses when all are complete, or when one failed (MPI_ERR_IN_STATUS) */
    if ((*flag || rc == MPI_ERR_IN_STATUS) && array_of_statuses != MPI_STATUSES_IGNORE)
        echo_forward_bytes(array_of_statuses, sizeof *array_of_statuses * (size_t)count, rc);
    return rc;
}

int echo_MPI_Request_get_status_any(int count, const MPI_Request array_of_requests[], int *indx, int *flag,
                                    MPI_Status *status) {
    if (none_echo(count, array_of_requests))
        return PMPI_Request_get_status_any(count, array_of_requests, indx, flag, status);
    struct { int index, flag; MPI_Status st; } m = {MPI_UNDEFINED, 0, {0}};
    int rc = MPI_SUCCESS;
    if (echo_is_rep()) {
        MPI_Request small[16], *real = reals(count, (MPI_Request *)array_of_requests, small);
        rc = PMPI_Request_get_status_any(count, real, &m.index, &m.flag, &m.st);
        if (real != small) free(real);
    }
    rc = echo_forward_bytes(&m, sizeof m, rc);
    *indx = m.index;
    *flag = m.flag;
    if (m.flag && status != MPI_STATUS_IGNORE) *status = m.st;
    return rc;
}

int echo_MPI_Request_get_status_some(int incount, const MPI_Request array_of_requests[], int *outcount,
                                     int array_of_indices[], MPI_Status array_of_statuses[]) {
    if (none_echo(incount, array_of_requests))
        return PMPI_Request_get_status_some(incount, array_of_requests, outcount, array_of_indices,
                                            array_of_statuses);
    int rc = MPI_SUCCESS;
    if (echo_is_rep()) {
        MPI_Request small[16], *real = reals(incount, (MPI_Request *)array_of_requests, small);
        rc = PMPI_Request_get_status_some(incount, real, outcount, array_of_indices, array_of_statuses);
        if (real != small) free(real);
    }
    rc = echo_forward(outcount, 1, MPI_INT, rc);
    if (*outcount != MPI_UNDEFINED && *outcount > 0) {
        echo_forward(array_of_indices, *outcount, MPI_INT, rc);
        if (array_of_statuses != MPI_STATUSES_IGNORE)
            echo_forward_bytes(array_of_statuses, sizeof *array_of_statuses * (size_t)*outcount, rc);
    }
    return rc;
}
#endif

/* Statuses for a call on many requests: the application's, or ours if it
 * ignores them, since the representative forwards every completed receive's
 * status (its element count says how much data goes to copies). */
static MPI_Status *statuses_for(int n, MPI_Status *statuses, MPI_Status *small) {
    if (statuses != MPI_STATUSES_IGNORE) return statuses;
    return n <= 16 ? small : malloc(sizeof *small * (size_t)n);
}

static void statuses_done(MPI_Status *sts, const MPI_Status *statuses, const MPI_Status *small) {
    if (sts != statuses && sts != small) free(sts);
}

int echo_MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[]) {
    if (none_echo(count, array_of_requests)) return PMPI_Waitall(count, array_of_requests, array_of_statuses);
    int rc = MPI_SUCCESS, all = 1;
    MPI_Status small_st[16], *sts = statuses_for(count, array_of_statuses, small_st);
    greq_call_t q;
    queries_start(&q, count, array_of_requests);
    if (echo_is_rep()) {
        MPI_Request small[16], *real = reals(count, array_of_requests, small);
        rc = PMPI_Waitall(count, real, sts);
        for (int i = 0; i < count; i++) keep_real(array_of_requests, real, i);
        if (real != small) free(real);
    }
    queries_replay(&q, done_all, &all);
    if (!echo_is_rep()) rc = wait_local(count, array_of_requests, sts);
    for (int i = 0; i < count; i++) {
        if (!is_echo(array_of_requests[i]) || !req_of(array_of_requests[i])->active) continue;
        int one = finish(&array_of_requests[i], &sts[i], rc == MPI_ERR_IN_STATUS ? sts[i].MPI_ERROR : rc);
        if (!echo_is_rep() && one != MPI_SUCCESS) rc = MPI_ERR_IN_STATUS;
    }
    queries_end(&q);
    statuses_done(sts, array_of_statuses, small_st);
    return rc;
}

int echo_MPI_Testall(int count, MPI_Request array_of_requests[], int *flag, MPI_Status array_of_statuses[]) {
    if (none_echo(count, array_of_requests))
        return PMPI_Testall(count, array_of_requests, flag, array_of_statuses);
    int rc = MPI_SUCCESS;
    MPI_Status small_st[16], *sts = statuses_for(count, array_of_statuses, small_st);
    greq_call_t q;
    queries_start(&q, count, array_of_requests);
    if (echo_is_rep()) {
        MPI_Request small[16], *real = reals(count, array_of_requests, small);
        rc = PMPI_Testall(count, real, flag, sts);
        if (*flag)
            for (int i = 0; i < count; i++) keep_real(array_of_requests, real, i);
        if (real != small) free(real);
    }
    rc = echo_forward(flag, 1, MPI_INT, rc);
    queries_replay(&q, done_all, flag);
    if (*flag) {
        if (!echo_is_rep()) wait_local(count, array_of_requests, sts); /* rc is the representative's */
        for (int i = 0; i < count; i++)
            if (is_echo(array_of_requests[i]) && req_of(array_of_requests[i])->active)
                finish(&array_of_requests[i], &sts[i], rc);
    }
    queries_end(&q);
    statuses_done(sts, array_of_statuses, small_st);
    return rc;
}

/* Waitany/Testany/Waitsome/Testsome: the representative's choice is forwarded
 * first, then each chosen request is completed in order.
 *
 * A copy trusts that choice only as far as its own call agrees with it: a copy whose path parted from its
 * representative's (it took a different branch on something of its own: a random token, its clocks once they
 * parted) makes another call here, with fewer requests or other ones, and an index taken blindly read past its
 * array (CP2K's copy died of SIGSEGV in MPI_Testany).  So the representative forwards, with each index, what
 * the request there is (`what_is`), and a copy checks that the index is one of its own call's and that its
 * request there is the same kind; where not, its path parted, and it ends as a parted copy does. */
enum { AT_NOTHING, AT_INACTIVE, AT_LOCAL, AT_SEND, AT_RECV, AT_COLL };

static int what_is(MPI_Request h) {
    if (is_null(h)) return AT_NOTHING;
    if (!is_echo(h)) return AT_LOCAL;
    echo_req_t *r = req_of(h);
    if (!r->active) return AT_INACTIVE;
    return r->kind == REQ_SEND ? AT_SEND : r->kind == REQ_RECV ? AT_RECV : AT_COLL;
}

static const char *what_name(int what) {
    static const char *names[] = {"a null request", "an inactive request", "a process-local request",
                                  "a send", "a receive", "a collective's or another call's request"};
    return what >= 0 && what <= AT_COLL ? names[what] : "no request echo knows";
}

/* on a copy: the representative completed request `index` (of `what` kind) of its call; is that this call's? */
static void check_chosen(const char *fn, int count, const MPI_Request reqs[], int index, int what) {
    if (echo_is_rep()) return;
    char why[200];
    if (index < 0 || index >= count) {
        snprintf(why, sizeof why, "%s: its representative completed request %d, and this copy's call has %d", fn,
                 index, count);
        echo_copy_parted(why);
    }
    int mine = what_is(reqs[index]);
    if (mine != what) {
        snprintf(why, sizeof why, "%s: its representative completed %s at index %d, where this copy has %s", fn,
                 what_name(what), index, what_name(mine));
        echo_copy_parted(why);
    }
}

/* on a copy: how many requests the representative completed (MPI_UNDEFINED: none active); fits this call? */
static void check_outcount(const char *fn, int count, int outcount) {
    if (echo_is_rep() || outcount == MPI_UNDEFINED || (outcount >= 0 && outcount <= count)) return;
    char why[200];
    snprintf(why, sizeof why, "%s: its representative completed %d requests, and this copy's call has %d", fn,
             outcount, count);
    echo_copy_parted(why);
}

int echo_MPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status) {
    if (none_echo(count, array_of_requests)) return PMPI_Waitany(count, array_of_requests, index, status);
    int rc = MPI_SUCCESS, m[2] = {MPI_UNDEFINED, AT_NOTHING}; /* the index, and what the request there is */
    MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
    greq_call_t q;
    queries_start(&q, count, array_of_requests);
    if (echo_is_rep()) {
        MPI_Request small[16], *real = reals(count, array_of_requests, small);
        rc = PMPI_Waitany(count, real, &m[0], st);
        if (m[0] != MPI_UNDEFINED) {
            m[1] = what_is(array_of_requests[m[0]]);
            keep_real(array_of_requests, real, m[0]);
        }
        if (real != small) free(real);
    }
    rc = echo_forward(m, 2, MPI_INT, rc);
    if (m[0] != MPI_UNDEFINED) check_chosen("MPI_Waitany", count, array_of_requests, m[0], m[1]);
    *index = m[0];
    queries_replay(&q, done_one, index);
    if (*index != MPI_UNDEFINED) rc = complete(&array_of_requests[*index], st, rc);
    else if (!echo_is_rep()) empty_status(status); /* no active request */
    queries_end(&q);
    return rc;
}

int echo_MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag, MPI_Status *status) {
    if (none_echo(count, array_of_requests)) return PMPI_Testany(count, array_of_requests, index, flag, status);
    int rc = MPI_SUCCESS, m[3] = {0, MPI_UNDEFINED, AT_NOTHING}; /* flag, index, what the request there is */
    MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
    greq_call_t q;
    queries_start(&q, count, array_of_requests);
    if (echo_is_rep()) {
        MPI_Request small[16], *real = reals(count, array_of_requests, small);
        rc = PMPI_Testany(count, real, &m[1], &m[0], st);
        if (m[0] && m[1] != MPI_UNDEFINED) {
            m[2] = what_is(array_of_requests[m[1]]);
            keep_real(array_of_requests, real, m[1]);
        }
        if (real != small) free(real);
    }
    rc = echo_forward(m, 3, MPI_INT, rc);
    if (m[0] && m[1] != MPI_UNDEFINED) check_chosen("MPI_Testany", count, array_of_requests, m[1], m[2]);
    *flag = m[0];
    *index = m[1];
    int chosen = *flag ? *index : MPI_UNDEFINED;
    queries_replay(&q, done_one, &chosen);
    if (*flag && *index != MPI_UNDEFINED) rc = complete(&array_of_requests[*index], st, rc);
    else if (*flag && !echo_is_rep()) empty_status(status); /* no active request */
    queries_end(&q);
    return rc;
}

static int some(int count, MPI_Request reqs[], int *outcount, int indices[], MPI_Status statuses[], int wait) {
    if (none_echo(count, reqs))
        return wait ? PMPI_Waitsome(count, reqs, outcount, indices, statuses)
                    : PMPI_Testsome(count, reqs, outcount, indices, statuses);
    const char *fn = wait ? "MPI_Waitsome" : "MPI_Testsome";
    int rc = MPI_SUCCESS;
    MPI_Status small_st[16], *sts = statuses_for(count, statuses, small_st);
    /* each completed request's index and what the request is, forwarded as one message */
    int small_chosen[32], *chosen = count <= 16 ? small_chosen : malloc(sizeof *chosen * 2 * (size_t)count);
    greq_call_t q;
    queries_start(&q, count, reqs);
    if (echo_is_rep()) {
        MPI_Request small[16], *real = reals(count, reqs, small);
        rc = wait ? PMPI_Waitsome(count, real, outcount, indices, sts)
                  : PMPI_Testsome(count, real, outcount, indices, sts);
        for (int k = 0; *outcount != MPI_UNDEFINED && k < *outcount; k++) {
            chosen[2 * k] = indices[k];
            chosen[2 * k + 1] = what_is(reqs[indices[k]]);
            keep_real(reqs, real, indices[k]);
        }
        if (real != small) free(real);
    }
    rc = echo_forward(outcount, 1, MPI_INT, rc);
    check_outcount(fn, count, *outcount);
    done_some_t done = {0, indices};
    if (*outcount != MPI_UNDEFINED && *outcount > 0) {
        rc = echo_forward(chosen, 2 * *outcount, MPI_INT, rc);
        for (int k = 0; k < *outcount; k++) {
            check_chosen(fn, count, reqs, chosen[2 * k], chosen[2 * k + 1]);
            indices[k] = chosen[2 * k];
        }
        done.n = *outcount;
    }
    if (chosen != small_chosen) free(chosen);
    queries_replay(&q, done_some, &done);
    for (int k = 0; k < done.n; k++) complete(&reqs[indices[k]], &sts[k], rc);
    queries_end(&q);
    statuses_done(sts, statuses, small_st);
    return rc;
}

int echo_MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                      MPI_Status array_of_statuses[]) {
    return some(incount, array_of_requests, outcount, array_of_indices, array_of_statuses, 1);
}

int echo_MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                      MPI_Status array_of_statuses[]) {
    return some(incount, array_of_requests, outcount, array_of_indices, array_of_statuses, 0);
}

/* ---- requests of other calls (nonblocking collectives, MPI-IO, one-sided...) ---- */

MPI_Request echo_request_new(MPI_Request real, int persistent, int with_status, void *buf, int count,
                             MPI_Datatype dt) {
    return new_req(with_status ? REQ_RECV : REQ_COLL, persistent, real, buf, count, dt);
}

MPI_Request echo_request_new_blocks(MPI_Request real, int persistent, void *buf, int n, const int *counts,
                                    const int *displs, MPI_Datatype dt, const MPI_Datatype *types) {
    /* the layout is taken now: programs (mpi4py among them) may free the count
     * and displacement arrays before completion, as Open MPI lets them */
    MPI_Datatype t = echo_has_copies() || echo_hooks.delivered
                         ? echo_blocks_type(buf, n, counts, displs, dt, types) : MPI_DATATYPE_NULL;
    if (t == MPI_DATATYPE_NULL) return new_req(REQ_COLL, persistent, real, NULL, 0, MPI_BYTE);
    return echo_request_new_typed(real, persistent, buf, t);
}

MPI_Request echo_request_new_typed(MPI_Request real, int persistent, void *buf, MPI_Datatype owned) {
    MPI_Request h = new_req(REQ_COLL, persistent, real, buf, 1, MPI_BYTE);
    req_of(h)->dt = owned;
    req_of(h)->owns_dt = 1;
    return h;
}

MPI_Request echo_request_then(MPI_Request real, int (*done)(void *arg, int rc), void *arg) {
    MPI_Request h = new_req(REQ_COLL, 0, real, NULL, 0, MPI_BYTE);
    req_of(h)->done = done;
    req_of(h)->arg = arg;
    return h;
}

/* ---- MPI-4 nonblocking send-receive: a receive request that also sends ----
 * A message it sends to itself is the copy's own, as for MPI_Sendrecv: kept at the call, taken when the receive
 * completes from itself (finish). */

static MPI_Request isendrecv_req(MPI_Request real, void *buf, int count, MPI_Datatype dt, int source, int rtag,
                                 MPI_Comm comm) {
    MPI_Request h = new_req(REQ_RECV, 0, real, buf, count, dt);
    echo_req_t *r = req_of(h);
    r->whole = 1;
    r->source = source;
    r->rtag = rtag;
    r->comm_id = echo_comm_id(comm);
    r->self = echo_self_rank(comm);
    return h;
}

int echo_MPI_Isendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                       void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                       MPI_Request *request) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Isendrecv");
    echo_outgoing("MPI_Isendrecv", 0, sendbuf, sendcount, sendtype, echo_comm_id(comm), echo_peer(dest));
    MPI_Request real = MPI_REQUEST_NULL;
    int rc = echo_is_rep() ? PMPI_Isendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                                            recvtype, source, recvtag, c->real, &real)
                           : echo_check_sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                                                 recvtype, source, recvtag, echo_comm_peers(c));
    if (rc == MPI_SUCCESS) {
        echo_self_send(sendbuf, sendcount, sendtype, dest, sendtag, comm);
        *request = isendrecv_req(real, recvbuf, recvcount, recvtype, source, recvtag, comm);
    }
    return rc;
}

int echo_MPI_Isendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source,
                               int recvtag, MPI_Comm comm, MPI_Request *request) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Isendrecv_replace");
    echo_outgoing("MPI_Isendrecv_replace", 0, buf, count, datatype, echo_comm_id(comm), echo_peer(dest));
    MPI_Request real = MPI_REQUEST_NULL;
    int rc = echo_is_rep()
                 ? PMPI_Isendrecv_replace(buf, count, datatype, dest, sendtag, source, recvtag, c->real, &real)
                 : echo_check_sendrecv_replace(buf, count, datatype, dest, sendtag, source, recvtag,
                                               echo_comm_peers(c));
    if (rc == MPI_SUCCESS) {
        echo_self_send(buf, count, datatype, dest, sendtag, comm); /* before the receive replaces it */
        *request = isendrecv_req(real, buf, count, datatype, source, recvtag, comm);
    }
    return rc;
}

/* ---- partitioned requests: the parts echo_partitioned.c acts on ---- */

MPI_Request echo_request_new_partitioned(MPI_Request real, int send, void *buf, int partitions, int count,
                                         MPI_Datatype dt, int rank, int tag, MPI_Comm comm) {
    /* completion delivers the whole buffer, as for any persistent receive */
    MPI_Request h = new_req(send ? REQ_SEND : REQ_RECV, 1, real, buf, partitions * count, dt);
    echo_req_t *r = req_of(h);
    r->partitions = partitions;
    r->comm_id = echo_comm_id(comm);
    r->peer = echo_peer(rank);
    r->comm = comm;
    r->tag = tag;
    /* a message to itself (echo_own.c): a send's destination; a receive's own rank, and the source and tag it
     * names (a partitioned receive names both) */
    r->self = send ? rank : echo_self_rank(comm);
    if (!send) r->source = rank, r->rtag = tag;
    return h;
}

void echo_request_ready(MPI_Request h, int n) {
    echo_req_t *r = req_of(h);
    if (r->kind != REQ_SEND || !r->active) return;
    r->ready += n;
    if (r->ready == r->partitions) echo_self_send(r->buf, r->count, r->dt, r->self, r->tag, r->comm);
}

int echo_request_view(MPI_Request h, echo_request_view_t *v) {
    if (!is_echo(h)) return 0;
    echo_req_t *r = req_of(h);
    *v = (echo_request_view_t){.real = &r->real, .active = r->active, .partitions = r->partitions, .buf = r->buf,
                               .part_count = r->partitions ? r->count / r->partitions : r->count, .dt = r->dt,
                               .comm_id = r->comm_id, .peer = r->peer};
    return 1;
}

/* ---- Fortran handles of echo requests (mpi4py's Request.toint/fromint) ----
 * An echo request is no MPI object: its Fortran handle is an index into a table
 * of its own, above any handle Open MPI gives out. */
#define FORTRAN_BASE (1 << 29)
static MPI_Request *fortran;
static int nfortran, fortran_cap;

/* echo's requests (and SDR's) get Fortran handles of their own, above MPI's */
MPI_Fint echo_MPI_Request_c2f(MPI_Request request) {
    if (!is_echo(request) && !(echo_mode->owns_request && echo_mode->owns_request(request)))
        return PMPI_Request_c2f(request);
    for (int i = 0; i < nfortran; i++)
        if (fortran[i] == request) return FORTRAN_BASE + i;
    if (nfortran == fortran_cap) {
        fortran_cap = fortran_cap ? 2 * fortran_cap : 64;
        fortran = realloc(fortran, sizeof *fortran * (size_t)fortran_cap);
    }
    fortran[nfortran] = request;
    return FORTRAN_BASE + nfortran++;
}
MPI_Request echo_MPI_Request_f2c(MPI_Fint request) {
    if (request < FORTRAN_BASE || request - FORTRAN_BASE >= nfortran) return PMPI_Request_f2c(request);
    return fortran[request - FORTRAN_BASE];
}

/* MPI 5's integer handles (MPI_Request_toint/fromint: mpi4py's Request.toint on MPICH 5): echo's requests get the
 * same integers as their Fortran handles, MPI's own requests MPI's integers */
#if ECHO_DECLARES(MPI_Request_toint)
int echo_MPI_Request_toint(MPI_Request request) {
    if (!is_echo(request) && !(echo_mode->owns_request && echo_mode->owns_request(request)))
        return PMPI_Request_toint(request);
    return (int)echo_MPI_Request_c2f(request);
}
MPI_Request echo_MPI_Request_fromint(int request) {
    if (request < FORTRAN_BASE || request - FORTRAN_BASE >= nfortran) return PMPI_Request_fromint(request);
    return fortran[request - FORTRAN_BASE];
}
#endif
