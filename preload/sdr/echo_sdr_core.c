/* SDR mode, the core: sends that wait for acks, receives that ack, failures
 * and substitutes, and the progress that keeps acks flowing while a process
 * waits in any call.  (The protocol: echo_sdr.h and docs/sdr.md.) */
#include "echo_sdr.h"
#include "echo_records.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

sdr_state_t sdr;
static sdr_comm_t *comms;
/* ECHO_SDR_DEBUG=1: the layer says on stderr what failures it saw and what it sent again */
static int debug;
#define DEBUG(...) (debug ? fprintf(stderr, "[sdr %d] ", echo.real_rank), fprintf(stderr, __VA_ARGS__) : 0)
static MPI_Group world_group;

#define ACK_TAG 0

struct sdr_send {
    sdr_comm_t *c;
    int chan, dst, tag, mode;
    const void *buf;
    int count;
    MPI_Datatype dt;
    unsigned mask; /* replicas of dst whose acks are still due */
    MPI_Request reqs[2 * SDR_MAX_REPLICAS]; /* a replica taken back may be sent one again */
    int nreqs, err;
    void *owned; /* the copy it sends from, if any (take_copy) */
    long owned_bytes;
    int released; /* its owner is done with it: freed once complete */
    double sent_at; /* when its real sends were first seen done while acks were due (late_copy), or 0 */
    int owns_dt;  /* dt is echo's duplicate of the caller's (echo_type_keep) */
    sdr_send_t *next; /* every send not yet complete and released, in the order they started */
    sdr_send_t *next_posted; /* those with real sends under way: the progress loop tests only these */
    int in_posted;
};

struct sdr_recv {
    sdr_comm_t *c;
    int chan;
    void *buf;
    int count;
    MPI_Datatype dt;
    int src, tag;
    MPI_Request req;
    int posted_to; /* replica of src the real receive names (-1: any source) */
    int complete, err;
    int owns_dt; /* dt is echo's duplicate of the caller's (echo_type_keep) */
    MPI_Status status;
    sdr_recv_t *next; /* receives not yet complete */
};

/* an ack that came before this process made the send it acks (its replica world is ahead) */
typedef struct credit {
    int cid, chan, dst, tag, replica, n;
    struct credit *next;
} credit_t;

static sdr_send_t *sends, **sends_tail = &sends;
static sdr_send_t *posted; /* the sends whose real sends may still be under way (a copy waiting only for acks,
                            * say for an excluded replica that is far behind, costs the progress loop nothing) */
static void settle(sdr_send_t *s);
static sdr_recv_t *recvs;
static void debug_dump(void);
#define CREDIT_BUCKETS 1024 /* a replica far behind holds many (a collective's tag is used once) */
static credit_t *credits[CREDIT_BUCKETS];

/* acks go out nonblocking; a slot is reused once its send completed */
typedef struct {
    int msg[4];
    MPI_Request req;
} ack_slot_t;
static ack_slot_t **ack_slots; /* each allocated once: a growing table must not move a buffer MPI may still be
                                * sending from (over TCP a send queued behind others is read later: the receiver
                                * got stray acks and flushes, the stray acks became credits that swallowed real
                                * sends, issue #22) */
static int nack_slots;
static int ack_in[4];
static MPI_Request ack_req = MPI_REQUEST_NULL;

/* Switching senders while the old one lives (an excluded replica, or a substitute no longer needed): its
 * messages already on their way are taken out of the way before this process may take that replica's
 * messages again.  Per real rank: real messages posted to it, matched from it, and how many of its messages
 * it said it sent (MSG_DRAIN, its answer to MSG_UNSUB; unknown until it comes). */
static long *sent_to, *matched, *due;
static unsigned char *due_known;
static int retarget_due; /* a sender to change: tried in the progress loop until it can be */
static int drains_due;   /* some replica's stale messages are still to be taken out of the way */
static void retarget(void);

int sdr_is_ulfm_error(int rc) {
    int cls = rc;
    if (rc == MPI_SUCCESS) return 0;
    PMPI_Error_class(rc, &cls);
    return cls == MPIX_ERR_PROC_FAILED || cls == MPIX_ERR_PROC_FAILED_PENDING || cls == MPIX_ERR_REVOKED;
}

/* ---- communicators known to the layer ---- */

sdr_comm_t *sdr_comm_of(MPI_Comm app) {
    for (sdr_comm_t *c = comms; c; c = c->next)
        if (c->app == app) return c;
    return NULL;
}

static sdr_comm_t *comm_by_id(int id) {
    for (sdr_comm_t *c = comms; c; c = c->next)
        if (c->id == id) return c;
    return NULL;
}

void sdr_comm_add(sdr_comm_t *c) {
    c->next = comms;
    comms = c;
}

static int drain_due_in(const sdr_comm_t *c);

static void comm_destroy_if_unused(sdr_comm_t *c) {
    if (drain_due_in(c)) return; /* stale messages of a member's replica may still come on it */
    for (sdr_send_t *s = sends; s; s = s->next)
        if (s->c == c) return;
    for (sdr_recv_t *r = recvs; r; r = r->next)
        if (r->c == c) return;
    for (sdr_comm_t **p = &comms; *p; p = &(*p)->next)
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
    comm_destroy_if_unused(c);
}

/* ---- acks ---- */

void sdr_control(int to, int type, int a, int b, int cc) {
    static int next_slot;
    int slot = -1;
    for (int k = 0; k < nack_slots && slot < 0; k++) {
        int i = (next_slot + k) % nack_slots, done = 1;
        if (ack_slots[i]->req != MPI_REQUEST_NULL &&
            PMPI_Test(&ack_slots[i]->req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            ack_slots[i]->req = MPI_REQUEST_NULL, done = 1; /* its destination died: nothing to wait for */
        if (done) slot = i;
    }
    if (slot < 0) {
        slot = nack_slots;
        nack_slots = nack_slots ? 2 * nack_slots : 64;
        ack_slots = realloc(ack_slots, sizeof *ack_slots * (size_t)nack_slots);
        for (int i = slot; i < nack_slots; i++) {
            ack_slots[i] = malloc(sizeof **ack_slots);
            ack_slots[i]->req = MPI_REQUEST_NULL;
        }
    }
    next_slot = (slot + 1) % nack_slots;
    ack_slot_t *s = ack_slots[slot];
    s->msg[0] = type, s->msg[1] = a, s->msg[2] = b, s->msg[3] = cc;
    if (PMPI_Isend(s->msg, 4, MPI_INT, to, ACK_TAG, sdr.acks, &s->req) != MPI_SUCCESS) s->req = MPI_REQUEST_NULL;
}

/* Every control message this process posted has left.  Before a real call that makes no MPI progress while it
 * blocks (MPI_Comm_create_from_group waits in PMIx): an ack still queued here would never leave, and the sender
 * waiting for it would never join that call (echo_sdr_comm.c's group_create).  A process such a call waits for is
 * never owed one: its own send completed only once this process's ack had reached it. */
void sdr_control_flush(void) {
    int spins = 0;
    for (int i = 0; i < nack_slots; i++)
        while (ack_slots[i]->req != MPI_REQUEST_NULL) {
            int done = 0;
            if (PMPI_Test(&ack_slots[i]->req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) ack_slots[i]->req = MPI_REQUEST_NULL;
            if (!done) sdr_spin(&spins);
        }
}

/* a message of member i's replica j was accepted: every other live replica of i learns it (j too, with
 * self-acks) */
static void ack_message(sdr_comm_t *c, int chan, int i, int j, int tag) {
    for (int r = 0; r < sdr.R; r++) {
        int w = sdr_real_rank(c->members[i], r);
        if ((r != j || sdr.self_acks) && !sdr.dead[w]) sdr_control(w, MSG_ACK, c->id, chan, tag);
    }
}

static credit_t **credit_bucket(int cid, int chan, int dst, int tag, int replica) {
    unsigned h = (unsigned)cid * 2654435761u ^ (unsigned)tag * 40503u ^ (unsigned)dst * 977u ^
                 (unsigned)(chan * SDR_MAX_REPLICAS + replica);
    return &credits[h % CREDIT_BUCKETS];
}

static int take_credit(int cid, int chan, int dst, int tag, int replica) {
    for (credit_t **p = credit_bucket(cid, chan, dst, tag, replica); *p; p = &(*p)->next) {
        credit_t *cr = *p;
        if (cr->cid == cid && cr->chan == chan && cr->dst == dst && cr->tag == tag && cr->replica == replica) {
            if (--cr->n == 0) {
                *p = cr->next;
                free(cr);
            }
            return 1;
        }
    }
    return 0;
}

static void add_credit(int cid, int chan, int dst, int tag, int replica) {
    credit_t **bucket = credit_bucket(cid, chan, dst, tag, replica);
    for (credit_t *cr = *bucket; cr; cr = cr->next)
        if (cr->cid == cid && cr->chan == chan && cr->dst == dst && cr->tag == tag && cr->replica == replica) {
            cr->n++;
            return;
        }
    credit_t *cr = malloc(sizeof *cr);
    *cr = (credit_t){cid, chan, dst, tag, replica, 1, *bucket};
    *bucket = cr;
}

static void post_send(sdr_send_t *s, int replica) {
    int to = s->c->real[s->dst * sdr.R + replica];
    if (to < 0) return;
    if (s->nreqs == 2 * SDR_MAX_REPLICAS) { /* keep the ones still going */
        int n = 0;
        for (int i = 0; i < s->nreqs; i++)
            if (s->reqs[i] != MPI_REQUEST_NULL) s->reqs[n++] = s->reqs[i];
        s->nreqs = n;
        if (n == 2 * SDR_MAX_REPLICAS) PMPI_Waitall(n, s->reqs, MPI_STATUSES_IGNORE), s->nreqs = 0;
    }
    MPI_Request *req = &s->reqs[s->nreqs++];
    int rc = s->mode ? PMPI_Issend(s->buf, s->count, s->dt, to, s->tag, s->c->chan[s->chan], req)
                     : PMPI_Isend(s->buf, s->count, s->dt, to, s->tag, s->c->chan[s->chan], req);
    if (rc == MPI_SUCCESS) {
        sent_to[sdr_real_rank(s->c->members[s->dst], replica)]++;
        if (!s->in_posted) s->next_posted = posted, posted = s, s->in_posted = 1;
    } else {
        DEBUG("send to %d failed (%d)\n", to, rc);
        *req = MPI_REQUEST_NULL;
        if (!sdr_is_ulfm_error(rc) && !s->err) s->err = rc; /* the application's mistake: its call fails */
    }
}

/* replica q_j acked a message of ours on (cid, chan, tag): the oldest send it can be for */
static void on_ack(int from, int cid, int chan, int tag) {
    sdr_comm_t *c = comm_by_id(cid);
    if (!c) return; /* freed since: every send on it had completed */
    int q = from % sdr.n, j = from / sdr.n, dst = c->index_of[q];
    if (dst < 0) return;
    for (sdr_send_t *s = sends; s; s = s->next)
        if (s->c == c && s->chan == chan && s->dst == dst && s->tag == tag && (s->mask & (1u << j))) {
            s->mask &= ~(1u << j);
            settle(s);
            return;
        }
    add_credit(cid, chan, dst, tag, j);
}

/* replica q_j now receives our rank's messages from us: send it what it has not acked, and all that follows */
static void on_flush(int from) {
    int q = from % sdr.n, j = from / sdr.n;
    if (sdr.dead[from]) return;
    sdr.feeds[from] = 1;
    int resent = 0, listed = 0;
    if (debug) debug_dump();
    for (sdr_send_t *s = sends; s; s = s->next, listed++)
        if (s->c->members[s->dst] == q && (s->mask & (1u << j))) {
            if (!sdr.self_acks) s->mask &= ~(1u << j); /* with self-acks: done when it acks this one */
            post_send(s, j);
            resent++;
        }
    DEBUG("flush from %d: sent again %d of %d pending sends\n", from, resent, listed);
}

/* it takes our rank's messages from another replica now: our sends to it wait for its acks instead, and it
 * learns how many real messages we sent it, to take those still on their way out of the way */
static void on_unsub(int from) {
    sdr.feeds[from] = 0;
    DEBUG("%d takes our messages from a sibling now (we sent it %ld)\n", from, sent_to[from]);
    sdr_control(from, MSG_DRAIN, (int)(sent_to[from] & 0x3fffffff), (int)(sent_to[from] >> 30), 0);
}

static void on_drain(int from, long count) {
    due[from] = count, due_known[from] = 1;
    retarget_due = drains_due = 1;
}

/* a real message from `source` (its rank in one of c's channels) was matched, whatever becomes of it */
static void count_match(const sdr_comm_t *c, int source) {
    int who = c->who[source];
    matched[sdr_real_rank(c->members[who / sdr.R], who % sdr.R)]++;
}

static int drained(int w) { return due_known[w] && matched[w] >= due[w]; }

/* a matched message nobody takes (a stale one): received into scratch space, and counted */
static void discard(const sdr_comm_t *c, MPI_Message *m, const MPI_Status *st) {
    static char *scratch;
    static int scratch_size;
    int bytes = 0;
    PMPI_Get_count(st, MPI_BYTE, &bytes);
    if (bytes > scratch_size) scratch = realloc(scratch, (size_t)(scratch_size = bytes));
    PMPI_Mrecv(scratch, bytes, MPI_BYTE, m, MPI_STATUS_IGNORE);
    count_match(c, st->MPI_SOURCE);
}

static int drain_due_in(const sdr_comm_t *c) {
    for (int i = 0; i < c->size; i++)
        for (int j = 0; j < sdr.R; j++) {
            int w = sdr_real_rank(c->members[i], j);
            if (!sdr.dead[w] && !drained(w)) return 1;
        }
    return 0;
}

/* take out of the way the messages of replicas this process no longer receives from that are still coming */
static void drain_stale(void) {
    if (!drains_due) return;
    drains_due = 0;
    for (int w = 0; w < sdr.n * sdr.R; w++) {
        int a = w % sdr.n, j = w / sdr.n;
        if (!due_known[w] || matched[w] >= due[w] || sdr.dead[w]) continue;
        drains_due = 1;
        if (sdr.from[a] == j) continue;
        for (sdr_comm_t *c = comms; c && matched[w] < due[w]; c = c->next) {
            int i = c->index_of[a];
            if (i < 0 || c->real[i * sdr.R + j] < 0) continue;
            for (int chan = 0; chan < 2; chan++) {
                int flag = 1;
                while (flag && matched[w] < due[w]) {
                    MPI_Message m;
                    MPI_Status st;
                    if (PMPI_Improbe(c->real[i * sdr.R + j], MPI_ANY_TAG, c->chan[chan], &flag, &m, &st) != MPI_SUCCESS)
                        break;
                    if (flag) discard(c, &m, &st);
                }
            }
        }
        if (matched[w] >= due[w]) retarget_due = 1;
    }
    if (!drains_due)
        for (sdr_comm_t *c = comms, *next; c; c = next) { /* freed ones kept for their stale messages */
            next = c->next;
            if (c->freed) comm_destroy_if_unused(c);
        }
}

/* Take back a posted receive (Cancel, then Wait): 1 if it was cancelled, 0 if it matched a message first (its
 * status in *st).  Under ULFM an any-source receive that a failure interrupted keeps MPI_ERR_PROC_FAILED_PENDING
 * in its status: if it matches a message before the Wait, Open MPI 5 completes it and Wait still returns that
 * error (it clears it only while the receive is unfinished), and a receive still unfinished when another failure
 * comes is left pending.  Either way the request is no lost cause: it is asked whether it finished, and if not,
 * the failures are acknowledged and it is waited for again.  (Counted as cancelled, a receive that had matched
 * would lose its message, and the receive posted again would wait for it forever.)  One MPI cannot finish
 * otherwise (its sender died in mid-message) counts as cancelled. */
static int take_back(MPI_Comm comm, MPI_Request *req, MPI_Status *st) {
    int cancelled = 1, done = 0, n, cls = 0;
    if (*req == MPI_REQUEST_NULL) return 1;
    PMPI_Cancel(req);
    for (;;) {
        int rc = PMPI_Wait(req, st);
        if (rc == MPI_SUCCESS) {
            PMPI_Test_cancelled(st, &cancelled);
            break;
        }
        PMPI_Error_class(rc, &cls);
        if (cls != MPIX_ERR_PROC_FAILED_PENDING || *req == MPI_REQUEST_NULL) break;
        PMPI_Request_get_status(*req, &done, st);
        if (done) { /* it finished: the error is the interruption's, not its own */
            PMPI_Test_cancelled(st, &cancelled);
            PMPI_Request_free(req);
            break;
        }
        sdr_learn_failures();
        PMPIX_Comm_ack_failed(comm, sdr.n * sdr.R, &n);
    }
    *req = MPI_REQUEST_NULL;
    return cancelled;
}

/* A failure interrupted an any-source receive on `comm`: learn of it and acknowledge it (so any-source
 * receives go on), then take the receive back to post it again (Open MPI 5.0.11 keeps reporting the failure on
 * the old one).  0 if it had matched a message meanwhile (its status in *st). */
static int interrupted(MPI_Comm comm, MPI_Request *req, MPI_Status *st) {
    int n;
    sdr_learn_failures();
    PMPIX_Comm_ack_failed(comm, sdr.n * sdr.R, &n);
    return take_back(comm, req, st);
}

static void poll_acks(void) {
    for (;;) {
        int flag = 0;
        MPI_Status st;
        if (ack_req == MPI_REQUEST_NULL)
            PMPI_Irecv(ack_in, 4, MPI_INT, MPI_ANY_SOURCE, ACK_TAG, sdr.acks, &ack_req);
        int rc = PMPI_Test(&ack_req, &flag, &st);
        if (rc != MPI_SUCCESS) {
            if (interrupted(sdr.acks, &ack_req, &st)) continue;
            flag = 1; /* it matched an ack meanwhile */
        }
        if (!flag) return;
        ack_req = MPI_REQUEST_NULL;
        int from = st.MPI_SOURCE;
        switch (ack_in[0]) {
        case MSG_ACK: on_ack(from, ack_in[1], ack_in[2], ack_in[3]); break;
        case MSG_FLUSH: on_flush(from); break;
        case MSG_UNSUB: on_unsub(from); break;
        case MSG_DRAIN: on_drain(from, (long)ack_in[1] | ((long)ack_in[2] << 30)); break;
        case MSG_OUT: /* from a leader since dead: a later one decides */
            if (!sdr.dead[from]) sdr_set_out(ack_in[1], 1);
            break;
        case MSG_IN:
            if (!sdr.dead[from]) sdr_set_out(ack_in[1], 0);
            break;
        default: sdr_slow_message(from, ack_in); /* rounds, proposals, stop */
        }
    }
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
    *sends_tail = s; /* in start order: acks and re-sends take the oldest first */
    sends_tail = &s->next;
    int q = c->members[dst];
    for (int j = 0; j < sdr.R; j++) {
        int w = sdr_real_rank(q, j);
        if (sdr.dead[w] || c->real[dst * sdr.R + j] < 0) continue;
        if (take_credit(c->id, chan, dst, tag, j)) continue; /* it has the message already (acked early) */
        if (sdr.feeds[w]) post_send(s, j); /* it takes our rank's messages from us */
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
    for (sdr_send_t **p = &sends; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            if (sends_tail == &s->next) sends_tail = p;
            break;
        }
    for (sdr_send_t **p = &posted; s->in_posted && *p; p = &(*p)->next_posted)
        if (*p == s) {
            *p = s->next_posted;
            break;
        }
    copies_bytes -= s->owned_bytes;
    sdr_comm_t *c = s->c;
    if (s->owns_dt) PMPI_Type_free(&s->dt);
    free(s->owned);
    free(s);
    if (c->freed) comm_destroy_if_unused(c);
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
static void settle(sdr_send_t *s) {
    if (s->released && s->mask == 0 && !s->in_posted) unlink_send(s);
}

/* ---- receives ---- */

static void unlink_recv(sdr_recv_t *r) {
    for (sdr_recv_t **p = &recvs; *p; p = &(*p)->next)
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
                      .req = MPI_REQUEST_NULL, .next = recvs};
    r->owns_dt = echo_type_keep(dt, &r->dt);
    recvs = r;
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
    ack_message(r->c, r->chan, i, j, st->MPI_TAG);
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
        if (interrupted(r->c->chan[r->chan], &r->req, &st)) return 0; /* posted again next time */
        flag = 1, rc = MPI_SUCCESS; /* it matched a message meanwhile: take it below */
    }
    int i, j, cls = 0;
    if (rc != MPI_SUCCESS) PMPI_Error_class(rc, &cls);
    if (cls == MPI_ERR_TRUNCATE && r->posted_to < 0 && st.MPI_SOURCE >= 0 && st.MPI_SOURCE < r->c->size * sdr.R &&
        !from_sender(r->c, st.MPI_SOURCE, &i, &j)) { /* a stale message, longer than this receive: dropped */
        count_match(r->c, st.MPI_SOURCE);
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
    count_match(r->c, st.MPI_SOURCE);
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
    if (!take_back(r->c->chan[r->chan], &r->req, &st)) {
        count_match(r->c, st.MPI_SOURCE);
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
            if (got) discard(c, &m, &st);
            continue;
        }
        if (message) {
            count_match(c, st.MPI_SOURCE);
            ack_message(c, SDR_DATA, i, j, st.MPI_TAG);
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

/* ---- failures and excluded replicas: whom to take each rank's messages from ---- */

static int lowest_live(int app) {
    for (int j = 0; j < sdr.R; j++)
        if (!sdr.dead[sdr_real_rank(app, j)]) return j;
    return -1;
}

int sdr_lowest_in(int app) {
    for (int j = 0; j < sdr.R; j++)
        if (!sdr.dead[sdr_real_rank(app, j)] && !sdr.out[sdr_real_rank(app, j)]) return j;
    return -1;
}

/* our own world's replica of the rank while it lives and is not excluded, else its lowest such sibling (a
 * rank whose live replicas are all excluded is taken from anyway) */
static int wanted_sender(int app) {
    int own = sdr_real_rank(app, sdr.k);
    if (app == echo.app_rank || (!sdr.dead[own] && !sdr.out[own])) return sdr.k;
    int j = sdr_lowest_in(app);
    return j >= 0 ? j : lowest_live(app);
}

/* The rank's messages are lost: the job ends.  The first process to see it
 * leaves a note for echorun (which says it once, whichever processes mpirun
 * stops before they see it too). */
static void every_replica_dead(int app) {
    char path[1200];
    snprintf(path, sizeof path, "%s/sdr.lost", echo.run_dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
        char text[64];
        int n = snprintf(text, sizeof text, "%d %d\n", app, sdr.R);
        if (write(fd, text, (size_t)n) < 0) n = 0;
        close(fd);
    }
    fflush(NULL);
    _exit(75); /* not MPI_Abort: under ULFM it can wait forever for failed processes */
}

/* The application's own MPI_Abort (after its file operation failed, say) in one replica: the job ends with its
 * code, as it does natively.  Under ULFM Open MPI's abort ends this process but not always the others: its
 * siblings went on without it, as after a failure, and waited for ever for what it would have sent.  So the
 * code is recorded as this process's exit status (the application's status, sdr.py), and the note that echo
 * stopped the job makes echorun end what is left (jobstop.py) if mpirun does not. */
void echo_sdr_aborts(int errorcode) {
    echo_record_exit_status(errorcode);
    char path[1200], text[256];
    snprintf(path, sizeof path, "%s/echo.stopped", echo.run_dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
        int n = snprintf(text, sizeof text, "echo: SDR: application rank %d replica %d called MPI_Abort with error "
                         "code %d: the job ends with it\n", echo.app_rank, sdr.k, errorcode);
        if (write(fd, text, (size_t)n) < 0) n = 0;
        close(fd);
    }
    fflush(NULL);
}

/* Take rank a's messages from its replica j from now on.  Receives that named the old sender are posted again
 * to the new one (one that matched meanwhile is dropped by recv_test: nothing of it was acked, so the new
 * sender sends it again).  The new sender learns it with a flush, after every ack we sent it (same channel, in
 * order): it sends what we did not ack, and all that follows.  A live old sender is told to stop, and answers
 * with how many messages it sent us. */
static void switch_sender(int a, int j) {
    int old = sdr.from[a], was = sdr_real_rank(a, old);
    DEBUG("rank %d: messages from replica %d now (was %d)\n", a, j, old);
    sdr.from[a] = j;
    for (sdr_comm_t *c = comms; c; c = c->next) {
        int i = c->index_of[a];
        if (i >= 0 && c->real[i * sdr.R + j] >= 0) c->sender[i] = j;
    }
    for (sdr_recv_t *r = recvs; r; r = r->next)
        if (r->posted_to == old && r->src != MPI_ANY_SOURCE && r->c->members[r->src] == a) {
            MPI_Status st;
            if (!take_back(r->c->chan[r->chan], &r->req, &st)) count_match(r->c, st.MPI_SOURCE);
        }
    if (!sdr.dead[was]) {
        due_known[was] = 0;
        sdr_control(was, MSG_UNSUB, 0, 0, 0);
    }
    sdr_control(sdr_real_rank(a, j), MSG_FLUSH, 0, 0, 0);
}

/* every rank's sender as it should be now; one whose messages still on their way are not out of the way yet
 * waits (tried again from the progress loop) */
static int ending; /* in MPI_Finalize: this process needs no one's messages any more */

static void retarget(void) {
    retarget_due = 0;
    for (int a = 0; a < sdr.n; a++) {
        int j = wanted_sender(a);
        /* in MPI_Finalize a rank's replicas that ended after their own MPI_Finalize look failed (under ULFM an
         * exit is a failure): whether a rank was lost is echorun's verdict then, from how each process ended */
        if (j < 0 && ending) continue;
        if (j < 0) every_replica_dead(a);
        if (j == sdr.from[a]) continue;
        if (drained(sdr_real_rank(a, j))) switch_sender(a, j);
        else retarget_due = 1;
    }
}

static void on_dead(int w) {
    DEBUG("process %d failed\n", w);
    sdr.dead[w] = 1;
    sdr.feeds[w] = 0;
    due_known[w] = 1, due[w] = 0; /* nothing of it comes any more */
    int a = w % sdr.n, j = w / sdr.n;
    for (sdr_send_t *s = sends, *next; s; s = next) { /* the dead send no acks */
        next = s->next;
        if (s->c->members[s->dst] == a) s->mask &= ~(1u << j), settle(s);
    }
    int back = lowest_live(a);
    if (sdr_lowest_in(a) < 0 && back >= 0) { /* its last sibling in the job died: an excluded one is all it has */
        DEBUG("replica %d of rank %d taken back: no other is left\n", back, a);
        sdr.out[sdr_real_rank(a, back)] = 0;
        if (a == echo.app_rank && back == sdr.k) sdr_slow_log("in");
    }
    retarget();
}

/* Every process is told when a replica is excluded as slow or taken back (echo_sdr_slow.c decides).  Sends
 * to its rank are copied from then on, so none waits for its acks; its world's processes take its rank's
 * messages from a sibling, or from it again. */
int sdr_set_out(int w, int out) {
    if (sdr.dead[w] || sdr.out[w] == out) return 0;
    sdr.out[w] = (unsigned char)out;
    if (out && sdr_lowest_in(w % sdr.n) < 0) { /* never a rank's last replica in the job */
        sdr.out[w] = 0;
        return 0;
    }
    DEBUG("replica %d of rank %d %s\n", w / sdr.n, w % sdr.n, out ? "excluded as slow" : "taken back");
    retarget();
    return 1;
}

void sdr_learn_failures(void) {
    MPI_Group failed;
    if (PMPIX_Comm_get_failed(sdr.world, &failed) != MPI_SUCCESS) return;
    int nf = 0;
    PMPI_Group_size(failed, &nf);
    if (nf > 0) {
        int *idx = malloc(sizeof(int) * (size_t)nf), *ranks = malloc(sizeof(int) * (size_t)nf);
        for (int i = 0; i < nf; i++) idx[i] = i;
        PMPI_Group_translate_ranks(failed, nf, idx, world_group, ranks);
        for (int i = 0; i < nf; i++)
            if (ranks[i] >= 0 && !sdr.dead[ranks[i]]) on_dead(ranks[i]);
        free(idx);
        free(ranks);
    }
    PMPI_Group_free(&failed);
}

/* ---- progress ---- */

void sdr_progress(void) {
    static int busy;
    static unsigned polls;
    if (busy) return;
    busy = 1;
    poll_acks();
    for (sdr_send_t **p = &posted; *p;) {
        sdr_send_t *s = *p;
        if (!reqs_done(s)) {
            p = &s->next_posted;
            continue;
        }
        *p = s->next_posted, s->in_posted = 0;
        settle(s);
    }
    for (sdr_recv_t *r = recvs, *next; r; r = next) {
        next = r->next;
        recv_test(r);
    }
    sdr_sched_progress();
    sdr_idup_progress();
    drain_stale();
    if (retarget_due) retarget();
    sdr_slow_progress();
    if (++polls % 4096 == 0) sdr_learn_failures(); /* errors tell of most failures sooner */
    busy = 0;
}

static void debug_dump(void) {
    if (!debug) return;
    for (sdr_recv_t *r = recvs; r; r = r->next)
        fprintf(stderr, "[sdr %d] waiting recv comm %d chan %d src %d tag %d posted_to %d req %s\n", echo.real_rank,
                r->c->id, r->chan, r->src, r->tag, r->posted_to, r->req == MPI_REQUEST_NULL ? "null" : "set");
    for (sdr_send_t *s = sends; s; s = s->next)
        if (s->mask) fprintf(stderr, "[sdr %d] unacked send comm %d chan %d dst %d (rank %d) tag %d mask %x\n", echo.real_rank,
                             s->c->id, s->chan, s->dst, s->c->members[s->dst], s->tag, s->mask);
}

void sdr_spin(int *spins) {
    if (*spins == 300000 && debug) debug_dump(); /* waiting long: on what */
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

/* ---- the kill injector (echorun --inject kill:rank=R,replica=K,call=N|after=T) ---- */

static long kill_at_call = -1;
static long calls;

static void arm_kills(void) {
    for (int i = 0;; i++) {
        char key[32];
        snprintf(key, sizeof key, "sdr_kill_%d", i);
        const char *v = echo_plan_value(key);
        if (!v) return;
        int rank, replica;
        char what[16];
        double value;
        if (sscanf(v, "%d %d %15s %lf", &rank, &replica, what, &value) != 4) continue;
        if (rank != echo.app_rank || replica != sdr.k) continue;
        if (strcmp(what, "call") == 0) {
            if (kill_at_call < 0 || (long)value < kill_at_call) kill_at_call = (long)value; /* the first one */
        }
        else echo_kill_at(echo_epoch_now() + value);
    }
}

/* every application call: the kill injector counts them; control messages are read even by a process that
 * never waits (one behind its peers finds every message there: an excluded replica must still hear it is) */
void sdr_tick(int starts_communication) {
    calls++;
    /* call N is the record's number (echo_record_seq: what echorun and `mpiecho report` show), as bitflip's */
    if (kill_at_call >= 0 && (long)echo_record_seq() >= kill_at_call) echo_kill_now("at its planned call");
    sdr_slow_enter(starts_communication);
    if (sdr.self_acks && calls % 16 == 0) sdr_progress(); /* with exclusion on */
}

/* ---- setup and end ---- */

void echo_sdr_setup(void) {
    debug = getenv("ECHO_SDR_DEBUG") != NULL;
    sdr.n = echo.app_size;
    sdr.R = echo.ncopies;
    sdr.k = echo.copy;
    if (sdr.R > SDR_MAX_REPLICAS) echo_fatal("SDR supports at most %d replicas", SDR_MAX_REPLICAS);
    if (echo.real_rank != sdr_real_rank(echo.app_rank, sdr.k))
        echo_fatal("the SDR plan must place replica k of rank a at real rank k*N+a (an echorun bug)");
    echo_ft_dup(MPI_COMM_WORLD, &sdr.world);
    PMPI_Comm_set_errhandler(sdr.world, MPI_ERRORS_RETURN);
    PMPI_Comm_group(sdr.world, &world_group);
    echo_ft_dup(sdr.world, &sdr.acks);
    PMPI_Comm_set_errhandler(sdr.acks, MPI_ERRORS_RETURN);
    int nreal = sdr.n * sdr.R;
    sdr.dead = calloc((size_t)nreal, 1);
    sdr.out = calloc((size_t)nreal, 1);
    sdr.feeds = calloc((size_t)nreal, 1);
    for (int a = 0; a < sdr.n; a++) sdr.feeds[sdr_real_rank(a, sdr.k)] = 1; /* our own world */
    sdr.from = malloc(sizeof(int) * (size_t)sdr.n);
    for (int a = 0; a < sdr.n; a++) sdr.from[a] = sdr.k;
    sent_to = calloc((size_t)nreal, sizeof(long));
    matched = calloc((size_t)nreal, sizeof(long));
    due = calloc((size_t)nreal, sizeof(long));
    due_known = malloc((size_t)nreal);
    memset(due_known, 1, (size_t)nreal);
    sdr_comm_add(sdr_comm_world());
    arm_kills();
    sdr_slow_setup();
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
    ending = 1;
    int stopped = sdr_slow_finalize(); /* it ends during the agreement below: count it dead already */
    sdr_learn_failures();
    int none_dead = !stopped;
    for (int w = 0; w < sdr.n * sdr.R; w++) none_dead &= !sdr.dead[w];
    skip_finalize = sdr_meet(sdr.world, &none_dead) != MPI_SUCCESS || !none_dead;
    if (ack_req != MPI_REQUEST_NULL) {
        PMPI_Cancel(&ack_req);
        PMPI_Wait(&ack_req, MPI_STATUS_IGNORE);
    }
    PMPIX_Comm_ack_failed(sdr.world, sdr.n * sdr.R, &n);
}
