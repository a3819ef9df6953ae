/* SDR mode, the core: sends that wait for acks, receives that ack, and the
 * progress that keeps acks flowing while a process waits in any call; the acks
 * and credits are echo_sdr_acks.c's, failures and substitutes
 * echo_sdr_failures.c's.  (The protocol: echo_sdr.h and docs/sdr.md.) */
#include "echo_sdr.h"
#include "echo_records.h"
#include "echo_sdr_state.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

sdr_state_t sdr;
int sdr_debug;
sdr_comm_t *sdr_comms;
MPI_Group sdr_world_group;

sdr_send_t *sdr_sends, **sdr_sends_tail = &sdr_sends;
sdr_send_t *sdr_posted; /* the sends whose real sends may still be under way (a copy waiting only for acks,
                         * say for an excluded replica that is far behind, costs the progress loop nothing) */
sdr_recv_t *sdr_recvs;

MPI_Request sdr_ack_req = MPI_REQUEST_NULL;

/* Switching senders while the old one lives (an excluded replica, or a substitute no longer needed): its
 * messages already on their way are taken out of the way before this process may take that replica's
 * messages again.  Per real rank: real messages posted to it, matched from it, and how many of its messages
 * it said it sent (MSG_DRAIN, its answer to MSG_UNSUB; unknown until it comes). */
long *sdr_sent_to, *sdr_matched, *sdr_due;
unsigned char *sdr_due_known;
int sdr_retarget_due; /* a sender to change: tried in the progress loop until it can be */

int sdr_is_ulfm_error(int rc) {
    int cls = rc;
    if (rc == MPI_SUCCESS) return 0;
    PMPI_Error_class(rc, &cls);
    return cls == MPIX_ERR_PROC_FAILED || cls == MPIX_ERR_PROC_FAILED_PENDING || cls == MPIX_ERR_REVOKED;
}

/* ---- communicators known to the layer ---- */

sdr_comm_t *sdr_comm_of(MPI_Comm app) {
    for (sdr_comm_t *c = sdr_comms; c; c = c->next)
        if (c->app == app) return c;
    return NULL;
}

sdr_comm_t *sdr_comm_by_id(int id) {
    for (sdr_comm_t *c = sdr_comms; c; c = c->next)
        if (c->id == id) return c;
    return NULL;
}

/* a communicator's Cartesian grid (echo_sdr_topo.c), copied with it by a dup; freed with it, above */
int *sdr_cart_copy(const int *cart) {
    if (!cart) return NULL;
    size_t n = (size_t)(1 + 2 * cart[0]);
    int *copy = malloc(sizeof(int) * n);
    memcpy(copy, cart, sizeof(int) * n);
    return copy;
}

void sdr_comm_add(sdr_comm_t *c) {
    c->next = sdr_comms;
    sdr_comms = c;
}

void sdr_comm_destroy_if_unused(sdr_comm_t *c) {
    if (sdr_drain_due_in(c)) return; /* stale messages of a member's replica may still come on it */
    for (sdr_send_t *s = sdr_sends; s; s = s->next)
        if (s->c == c) return;
    for (sdr_recv_t *r = sdr_recvs; r; r = r->next)
        if (r->c == c) return;
    for (sdr_comm_t **p = &sdr_comms; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    PMPI_Comm_free(&c->chan[SDR_DATA]);
    PMPI_Comm_free(&c->chan[SDR_COLL]);
    PMPI_Comm_free(&c->build);
    free(c->members);
    free(c->index_of);
    free(c->real);
    free(c->who);
    free(c->sender);
    free(c->cart);
    free(c);
}

/* sends still waiting for acks (copies of small messages) keep it: its acks name it */
void sdr_comm_release(sdr_comm_t *c) {
    c->freed = 1;
    c->app = MPI_COMM_NULL;
    sdr_comm_destroy_if_unused(c);
}

/* ---- sends ---- */

/* Copies of small messages wait for their acks here, within a bound: past it, sends wait for acks instead */
#define EAGER_MAX_BYTES 65536
#define COPIES_MAX_BYTES (256L << 20)
static long copies_bytes;

/* the send goes (and goes again) from a copy of its buffer from now on, and every replica of its destination
 * receives what a native send delivers, padding included (Open MPI 5's MPI_Pack, and its receive of packed bytes
 * into a strided MPI_LONG_DOUBLE, copy only the 10 value bytes of each 16).  So the copy is the memory the data
 * lies in, sent with the caller's type, when that is not much more than the data; a sparse type's copy is packed,
 * by a send (echo_pack_as_sent), and a receive of it into such a type in this very process gets the 10 bytes. */
static void take_copy(sdr_send_t *s) {
    int size = 0, pos = 0;
    MPI_Comm comm = s->c->chan[s->chan];
    PMPI_Pack_size(s->count, s->dt, comm, &size);
    MPI_Aint tlb;
    size_t span = echo_type_span(s->count, s->dt, size, &tlb);
    if (s->buf != NULL && span > 0 && /* NULL: MPI_BOTTOM */
        echo_span_readable((const char *)s->buf + tlb, span)) { /* its holes may lie on pages never mapped */
        if (!s->owns_dt) s->owns_dt = echo_type_keep(s->dt, &s->dt);
        s->owned = malloc(span);
        memcpy(s->owned, (const char *)s->buf + tlb, span);
        s->buf = (char *)s->owned - tlb, s->owned_bytes = (long)span;
        copies_bytes += (long)span;
        return;
    }
    s->owned = malloc(size > 0 ? (size_t)size : 1);
    if (echo_pack_as_sent(s->buf, s->count, s->dt, s->owned, size, &pos) != MPI_SUCCESS) pos = 0;
    if (s->owns_dt) PMPI_Type_free(&s->dt);
    s->owns_dt = 0;
    s->buf = s->owned, s->count = pos, s->dt = MPI_PACKED, s->owned_bytes = size;
    copies_bytes += size;
}

int sdr_send_copies(sdr_comm_t *c, int dst, int count, MPI_Datatype dt) {
    int size = 0, excluded = 0;
    dst = sdr_peer_in(c, dst);
    PMPI_Type_size(dt, &size);
    long bytes = (long)count * size;
    if (dst >= 0 && dst < c->size)
        for (int j = 0; j < sdr.R; j++) excluded |= sdr.out[sdr_real_rank(c->members[dst], j)];
    return (bytes <= EAGER_MAX_BYTES || excluded) && copies_bytes + bytes <= COPIES_MAX_BYTES;
}

sdr_send_t *sdr_send_start(sdr_comm_t *c, int chan, const void *buf, int count, MPI_Datatype dt, int dst, int tag,
                           int mode, int copy) {
    sdr_send_t *s = calloc(1, sizeof *s);
    dst = sdr_peer_in(c, dst);
    *s = (sdr_send_t){.c = c, .chan = chan, .dst = dst, .tag = tag, .mode = mode, .buf = buf, .count = count,
                      .dt = dt};
    if (copy) take_copy(s); /* the caller may reuse its buffer at once: the copy is what goes, and goes again */
    else s->owns_dt = echo_type_keep(dt, &s->dt);
    *sdr_sends_tail = s; /* in start order: acks and re-sends take the oldest first */
    sdr_sends_tail = &s->next;
    int q = c->members[dst];
    for (int j = 0; j < sdr.R; j++) {
        int w = sdr_real_rank(q, j);
        if (sdr.dead[w] || c->real[dst * sdr.R + j] < 0) continue;
        if (sdr_take_credit(c->id, chan, dst, tag, j)) continue; /* it has the message already (acked early) */
        if (sdr.feeds[w]) sdr_post_send(s, j); /* it takes our rank's messages from us */
        if (!sdr.feeds[w] || sdr.self_acks) s->mask |= 1u << j;
    }
    return s;
}

/* its real sends are all done (tested now) */
static int reqs_done(sdr_send_t *s) {
    int pending = 0;
    for (int i = 0; i < s->nreqs; i++) {
        if (s->reqs[i] == MPI_REQUEST_NULL) continue;
        int flag = 0;
        if (PMPI_Test(&s->reqs[i], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) { /* the receiver died */
            if (s->reqs[i] != MPI_REQUEST_NULL) PMPI_Request_free(&s->reqs[i]);
            s->reqs[i] = MPI_REQUEST_NULL;
            sdr_learn_failures();
        } else if (!flag) pending = 1;
    }
    return !pending;
}

static int send_test(sdr_send_t *s) { return reqs_done(s) && s->mask == 0; }

static void unlink_send(sdr_send_t *s) {
    for (sdr_send_t **p = &sdr_sends; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            if (sdr_sends_tail == &s->next) sdr_sends_tail = p;
            break;
        }
    for (sdr_send_t **p = &sdr_posted; s->in_posted && *p; p = &(*p)->next_posted)
        if (*p == s) {
            *p = s->next_posted;
            break;
        }
    copies_bytes -= s->owned_bytes;
    sdr_comm_t *c = s->c;
    if (s->owns_dt) PMPI_Type_free(&s->dt);
    free(s->owned);
    free(s);
    if (c->freed) sdr_comm_destroy_if_unused(c);
}

double sdr_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A large send is not copied when it starts (the copy would cost about what the send costs): it completes once
 * its acks are in.  But the replica worlds need not order their sends to different ranks alike: a rank that
 * answers whichever rank asked first (an MPI_ANY_SOURCE receive) answers rank 1 first in one world and rank 2 in
 * the other, and each world's send then waits for an ack the other world gives only after its own wait (MPICH's
 * pt2pt/probe_unexp hung so).  So a send whose real sends are done but whose acks are not in by the time a copy
 * would take is copied and completes, within the copies' bound: a wait never costs more than about twice the
 * cheaper of waiting and copying, and worlds that order their sends differently go on. */
#define COPY_SECONDS_PER_BYTE 2.5e-10 /* 4 GB/s: a copy on a busy core */
#define LATE_COPY_MIN_SECONDS 20e-6

/* s's real sends are done and its acks due */
static int late_copy(sdr_send_t *s) {
    if (s->owned || s->released) return 0;
    int size = 0;
    PMPI_Pack_size(s->count, s->dt, s->c->chan[s->chan], &size);
    if (copies_bytes + size > COPIES_MAX_BYTES) return 0; /* past the bound, sends wait for their acks */
    double now = sdr_seconds();
    if (s->sent_at == 0) s->sent_at = now;
    if (now - s->sent_at < LATE_COPY_MIN_SECONDS + COPY_SECONDS_PER_BYTE * size) return 0;
    take_copy(s);
    return 1;
}

int sdr_send_done(sdr_send_t *s) {
    if (s->err) return 1;
    if (!reqs_done(s)) return 0; /* tested once: its real sends' requests */
    return s->mask == 0 || late_copy(s);
}

int sdr_send_error(sdr_send_t *s) { return s->err; }

int sdr_send_copied(sdr_send_t *s) { return s->owned != NULL; }

/* its real sends are complete (a synchronous one: matched), acks or not */
int sdr_send_sent(sdr_send_t *s) { return reqs_done(s); }

void sdr_send_free(sdr_send_t *s) {
    s->released = 1;
    if (s->err || send_test(s)) unlink_send(s);
}

/* an ack or a death cleared acks it waited for: a released send with no real send under way may go now (one
 * with real sends under way goes from the progress loop) */
void sdr_settle(sdr_send_t *s) {
    if (s->released && s->mask == 0 && !s->in_posted) unlink_send(s);
}

/* ---- receives ---- */

static void unlink_recv(sdr_recv_t *r) {
    for (sdr_recv_t **p = &sdr_recvs; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            return;
        }
}

static void recv_post(sdr_recv_t *r) {
    sdr_comm_t *c = r->c;
    r->posted_to = r->src == MPI_ANY_SOURCE ? -1 : c->sender[r->src];
    int from = r->src == MPI_ANY_SOURCE ? MPI_ANY_SOURCE : c->real[r->src * sdr.R + r->posted_to];
    int rc = PMPI_Irecv(r->buf, r->count, r->dt, from, r->tag, c->chan[r->chan], &r->req);
    if (rc != MPI_SUCCESS) {
        r->req = MPI_REQUEST_NULL;
        if (!sdr_is_ulfm_error(rc)) r->err = rc, r->complete = 1, unlink_recv(r);
    }
}

sdr_recv_t *sdr_recv_start(sdr_comm_t *c, int chan, void *buf, int count, MPI_Datatype dt, int src, int tag) {
    sdr_recv_t *r = calloc(1, sizeof *r);
    src = sdr_peer_in(c, src);
    *r = (sdr_recv_t){.c = c, .chan = chan, .buf = buf, .count = count, .dt = dt, .src = src, .tag = tag,
                      .req = MPI_REQUEST_NULL, .next = sdr_recvs};
    r->owns_dt = echo_type_keep(dt, &r->dt);
    sdr_recvs = r;
    recv_post(r);
    return r;
}

/* Which member (*i) and replica (*j) a message came from (its source's rank in
 * the channel); 1 if j is the replica this process takes i's messages from.  A
 * message from a sender it has since declared dead is dropped: it is not acked,
 * so the substitute sends it again. */
static int from_sender(const sdr_comm_t *c, int source, int *i, int *j) {
    int who = c->who[source];
    *i = who / sdr.R, *j = who % sdr.R;
    return *j == c->sender[*i];
}

/* the receive got its message from member i's replica j: ack it to j's siblings, the application sees member i */
static void accept(sdr_recv_t *r, const MPI_Status *st, int i, int j) {
    sdr_ack_message(r->c, r->chan, i, j, st->MPI_TAG);
    r->status = *st;
    r->status.MPI_SOURCE = sdr_peer_out(r->c, i);
    r->complete = 1;
    unlink_recv(r);
}

static int recv_test(sdr_recv_t *r) {
    if (r->complete) return 1;
    if (r->req == MPI_REQUEST_NULL) recv_post(r);
    if (r->complete) return 1;
    int flag = 0;
    MPI_Status st;
    int rc = PMPI_Test(&r->req, &flag, &st);
    if (rc != MPI_SUCCESS) DEBUG("receive from %d tag %d: error %d\n", r->src, r->tag, rc);
    if (rc != MPI_SUCCESS && r->req != MPI_REQUEST_NULL) { /* any source, still posted */
        if (sdr_interrupted(r->c->chan[r->chan], &r->req, &st)) return 0; /* posted again next time */
        flag = 1, rc = MPI_SUCCESS; /* it matched a message meanwhile: take it below */
    }
    int i, j, cls = 0;
    if (rc != MPI_SUCCESS) PMPI_Error_class(rc, &cls);
    if (cls == MPI_ERR_TRUNCATE && r->posted_to < 0 && st.MPI_SOURCE >= 0 && st.MPI_SOURCE < r->c->size * sdr.R &&
        !from_sender(r->c, st.MPI_SOURCE, &i, &j)) { /* a stale message, longer than this receive: dropped */
        sdr_count_match(r->c, st.MPI_SOURCE);
        r->req = MPI_REQUEST_NULL;
        return 0;
    }
    if (rc != MPI_SUCCESS) {
        if (!sdr_is_ulfm_error(rc)) {
            r->err = rc, r->complete = 1;
            unlink_recv(r);
            return 1;
        }
        r->req = MPI_REQUEST_NULL; /* its sender died: post again to the substitute */
        sdr_learn_failures();
        return 0;
    }
    if (!flag) return 0;
    sdr_count_match(r->c, st.MPI_SOURCE);
    if (!from_sender(r->c, st.MPI_SOURCE, &i, &j)) {
        DEBUG("dropped a message of member %d replica %d (tag %d)\n", i, j, st.MPI_TAG);
        r->req = MPI_REQUEST_NULL;
        return 0;
    }
    accept(r, &st, i, j);
    return 1;
}

int sdr_recv_done(sdr_recv_t *r, MPI_Status *status) {
    if (!recv_test(r)) return 0;
    echo_set_status(status, &r->status);
    return 1;
}

int sdr_recv_error(sdr_recv_t *r) { return r->err; }

int sdr_recv_cancel(sdr_recv_t *r) {
    if (recv_test(r)) return 0;
    MPI_Status st;
    int i, j;
    if (!sdr_take_back(r->c->chan[r->chan], &r->req, &st)) {
        sdr_count_match(r->c, st.MPI_SOURCE);
        if (from_sender(r->c, st.MPI_SOURCE, &i, &j)) {
            accept(r, &st, i, j); /* it matched first: delivered as received */
            return 0;
        }
    }
    r->complete = 1;
    unlink_recv(r);
    return 1;
}

void sdr_recv_free(sdr_recv_t *r) {
    if (!r->complete) sdr_recv_cancel(r);
    if (r->owns_dt) PMPI_Type_free(&r->dt);
    free(r);
}

/* Probes for the application.  A message from a sender declared dead is taken out of the way (dropped: its
 * substitute sends it again) and the probe looks again.  With `message`, a matched probe: the message is the
 * caller's, and counts as received now (acked), as a receive's would at matching. */
static int probe(sdr_comm_t *c, int src, int tag, int *flag, MPI_Message *message, MPI_Status *status) {
    MPI_Comm chan = c->chan[SDR_DATA];
    src = sdr_peer_in(c, src);
    for (;;) {
        sdr_progress();
        MPI_Status st;
        MPI_Message m = MPI_MESSAGE_NULL;
        int from = src == MPI_ANY_SOURCE ? MPI_ANY_SOURCE : c->real[src * sdr.R + c->sender[src]];
        int rc = message ? PMPI_Improbe(from, tag, chan, flag, &m, &st) : PMPI_Iprobe(from, tag, chan, flag, &st);
        if (rc != MPI_SUCCESS) {
            if (!sdr_is_ulfm_error(rc)) return rc;
            int n;
            sdr_learn_failures();
            PMPIX_Comm_ack_failed(chan, sdr.n * sdr.R, &n);
            continue;
        }
        if (!*flag) return MPI_SUCCESS;
        int i, j;
        if (!from_sender(c, st.MPI_SOURCE, &i, &j)) {
            int got = 1;
            if (!message) PMPI_Improbe(st.MPI_SOURCE, st.MPI_TAG, chan, &got, &m, MPI_STATUS_IGNORE);
            if (got) sdr_discard(c, &m, &st);
            continue;
        }
        if (message) {
            sdr_count_match(c, st.MPI_SOURCE);
            sdr_ack_message(c, SDR_DATA, i, j, st.MPI_TAG);
            *message = m;
        }
        st.MPI_SOURCE = sdr_peer_out(c, i);
        echo_set_status(status, &st);
        return MPI_SUCCESS;
    }
}

int sdr_probe(sdr_comm_t *c, int src, int tag, int *flag, MPI_Status *status) {
    return probe(c, src, tag, flag, NULL, status);
}

int sdr_improbe(sdr_comm_t *c, int src, int tag, int *flag, MPI_Message *message, MPI_Status *status) {
    return probe(c, src, tag, flag, message, status);
}

/* ---- progress ---- */

void sdr_progress(void) {
    static int busy;
    static unsigned polls;
    if (busy) return;
    busy = 1;
    sdr_poll_acks();
    for (sdr_send_t **p = &sdr_posted; *p;) {
        sdr_send_t *s = *p;
        if (!reqs_done(s)) {
            p = &s->next_posted;
            continue;
        }
        *p = s->next_posted, s->in_posted = 0;
        sdr_settle(s);
    }
    for (sdr_recv_t *r = sdr_recvs, *next; r; r = next) {
        next = r->next;
        recv_test(r);
    }
    sdr_sched_progress();
    sdr_idup_progress();
    sdr_drain_stale();
    if (sdr_retarget_due) sdr_retarget();
    sdr_slow_progress();
    if (++polls % 4096 == 0) sdr_learn_failures(); /* errors tell of most failures sooner */
    busy = 0;
    sdr_win_progress(); /* passive targets apply what they were sent: it waits and communicates, so not while busy */
}

void sdr_debug_dump(void) {
    if (!sdr_debug) return;
    for (sdr_recv_t *r = sdr_recvs; r; r = r->next)
        fprintf(stderr, "[sdr %d] waiting recv comm %d chan %d src %d tag %d posted_to %d req %s\n", echo.real_rank,
                r->c->id, r->chan, r->src, r->tag, r->posted_to, r->req == MPI_REQUEST_NULL ? "null" : "set");
    for (sdr_send_t *s = sdr_sends; s; s = s->next)
        if (s->mask) fprintf(stderr, "[sdr %d] unacked send comm %d chan %d dst %d (rank %d) tag %d mask %x\n", echo.real_rank,
                             s->c->id, s->chan, s->dst, s->c->members[s->dst], s->tag, s->mask);
}

void sdr_spin(int *spins) {
    if (*spins == 300000 && sdr_debug) sdr_debug_dump(); /* waiting long: on what */
    sdr_progress();
    if (++*spins > 64) sched_yield(); /* replicas share cores with their siblings: let them run */
}

/* Wait until every live process of `base` is here, serving the SDR layer meanwhile.  The real calls that
 * follow block without it, and the replica worlds run at their own pace: one still on its way here may need
 * this process (its acks, or its sends as a substitute) to arrive.  ULFM's agreement is the barrier that a
 * failure does not break. */
int sdr_meet(MPI_Comm base, int *flag) {
    int done = 0, spins = 0, n;
    MPI_Request req;
    int rc = PMPIX_Comm_iagree(base, flag, &req);
    while (rc == MPI_SUCCESS && !done) {
        rc = PMPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS && !done) sdr_spin(&spins);
    }
    if (rc != MPI_SUCCESS) { /* done, with a failure among them */
        PMPIX_Comm_ack_failed(base, sdr.n * sdr.R, &n);
        sdr_learn_failures();
    }
    return rc;
}

static long calls;

/* every application call: the kill injector looks at its number; control messages are read even by a process that
 * never waits (one behind its peers finds every message there: an excluded replica must still hear it is) */
void sdr_tick(int starts_communication) {
    calls++;
    echo_kill_at_planned_call(); /* --inject kill:...,call=N (core/echo_kills.c) */
    sdr_slow_enter(starts_communication);
    if (sdr.self_acks && calls % 16 == 0) sdr_progress(); /* with exclusion on */
}

/* ---- setup and end ---- */

void echo_sdr_setup(void) {
    sdr_debug = getenv("ECHO_SDR_DEBUG") != NULL;
    sdr.n = echo.app_size;
    sdr.R = echo.ncopies;
    sdr.k = echo.copy;
    if (sdr.R > SDR_MAX_REPLICAS) echo_fatal("SDR supports at most %d replicas", SDR_MAX_REPLICAS);
    if (echo.real_rank != sdr_real_rank(echo.app_rank, sdr.k))
        echo_fatal("the SDR plan must place replica k of rank a at real rank k*N+a (an echorun bug)");
    echo_ft_dup(MPI_COMM_WORLD, &sdr.world);
    PMPI_Comm_set_errhandler(sdr.world, MPI_ERRORS_RETURN);
    PMPI_Comm_group(sdr.world, &sdr_world_group);
    echo_ft_dup(sdr.world, &sdr.acks);
    PMPI_Comm_set_errhandler(sdr.acks, MPI_ERRORS_RETURN);
    int nreal = sdr.n * sdr.R;
    sdr.dead = calloc((size_t)nreal, 1);
    sdr.out = calloc((size_t)nreal, 1);
    sdr.feeds = calloc((size_t)nreal, 1);
    for (int a = 0; a < sdr.n; a++) sdr.feeds[sdr_real_rank(a, sdr.k)] = 1; /* our own world */
    sdr.from = malloc(sizeof(int) * (size_t)sdr.n);
    for (int a = 0; a < sdr.n; a++) sdr.from[a] = sdr.k;
    sdr_sent_to = calloc((size_t)nreal, sizeof(long));
    sdr_matched = calloc((size_t)nreal, sizeof(long));
    sdr_due = calloc((size_t)nreal, sizeof(long));
    sdr_due_known = malloc((size_t)nreal);
    memset(sdr_due_known, 1, (size_t)nreal);
}

/* MPI_Finalize, in Open MPI's ULFM, agrees with every live process without
 * serving the SDR layer: first wait here until every process of every replica
 * world is here (a slower world may still need this one's acks or substitute
 * sends), then nothing more is asked of anyone.  After a failure Open MPI
 * 5.0's closing fence waits forever for the dead, so then no process makes
 * the real call (the agreement says whether anyone knows of a death). */
static int skip_finalize;

int echo_sdr_skips_finalize(void) { return skip_finalize; }

void echo_sdr_finalize(void) {
    int n;
    sdr_ending = 1;
    int stopped = sdr_slow_finalize(); /* it ends during the agreement below: count it dead already */
    sdr_learn_failures();
    int none_dead = !stopped;
    for (int w = 0; w < sdr.n * sdr.R; w++) none_dead &= !sdr.dead[w];
    skip_finalize = sdr_meet(sdr.world, &none_dead) != MPI_SUCCESS || !none_dead;
    if (sdr_ack_req != MPI_REQUEST_NULL) {
        PMPI_Cancel(&sdr_ack_req);
        PMPI_Wait(&sdr_ack_req, MPI_STATUS_IGNORE);
    }
    PMPIX_Comm_ack_failed(sdr.world, sdr.n * sdr.R, &n);
}

