/* SDR mode: acks and credits.  Every real message a process takes is acked to its sender's replica; an ack that
 * comes before the send it acks is kept as a credit; control messages (flush, unsubscribe, drain) switch whom a
 * rank's messages are taken from, and what a switched-away sender still sent is taken out of the way.  The
 * progress loop (echo_sdr_core.c) polls them. */
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

/* an ack that came before this process made the send it acks (its replica world is ahead) */
typedef struct credit {
    int cid, chan, dst, tag, replica, n;
    struct credit *next;
} credit_t;
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
static int drains_due;   /* some replica's stale messages are still to be taken out of the way */

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
void sdr_ack_message(sdr_comm_t *c, int chan, int i, int j, int tag) {
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

int sdr_take_credit(int cid, int chan, int dst, int tag, int replica) {
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

void sdr_post_send(sdr_send_t *s, int replica) {
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
        sdr_sent_to[sdr_real_rank(s->c->members[s->dst], replica)]++;
        if (!s->in_posted) s->next_posted = sdr_posted, sdr_posted = s, s->in_posted = 1;
    } else {
        DEBUG("send to %d failed (%d)\n", to, rc);
        *req = MPI_REQUEST_NULL;
        if (!sdr_is_ulfm_error(rc) && !s->err) s->err = rc; /* the application's mistake: its call fails */
    }
}

/* replica q_j acked a message of ours on (cid, chan, tag): the oldest send it can be for */
static void on_ack(int from, int cid, int chan, int tag) {
    sdr_comm_t *c = sdr_comm_by_id(cid);
    if (!c) return; /* freed since: every send on it had completed */
    int q = from % sdr.n, j = from / sdr.n, dst = c->index_of[q];
    if (dst < 0) return;
    for (sdr_send_t *s = sdr_sends; s; s = s->next)
        if (s->c == c && s->chan == chan && s->dst == dst && s->tag == tag && (s->mask & (1u << j))) {
            s->mask &= ~(1u << j);
            sdr_settle(s);
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
    if (sdr_debug) sdr_debug_dump();
    for (sdr_send_t *s = sdr_sends; s; s = s->next, listed++)
        if (s->c->members[s->dst] == q && (s->mask & (1u << j))) {
            if (!sdr.self_acks) s->mask &= ~(1u << j); /* with self-acks: done when it acks this one */
            sdr_post_send(s, j);
            resent++;
        }
    DEBUG("flush from %d: sent again %d of %d pending sends\n", from, resent, listed);
}

/* it takes our rank's messages from another replica now: our sends to it wait for its acks instead, and it
 * learns how many real messages we sent it, to take those still on their way out of the way */
static void on_unsub(int from) {
    sdr.feeds[from] = 0;
    DEBUG("%d takes our messages from a sibling now (we sent it %ld)\n", from, sdr_sent_to[from]);
    sdr_control(from, MSG_DRAIN, (int)(sdr_sent_to[from] & 0x3fffffff), (int)(sdr_sent_to[from] >> 30), 0);
}

static void on_drain(int from, long count) {
    sdr_due[from] = count, sdr_due_known[from] = 1;
    sdr_retarget_due = drains_due = 1;
}

/* a real message from `source` (its rank in one of c's channels) was matched, whatever becomes of it */
void sdr_count_match(const sdr_comm_t *c, int source) {
    int who = c->who[source];
    sdr_matched[sdr_real_rank(c->members[who / sdr.R], who % sdr.R)]++;
}

int sdr_drained(int w) { return sdr_due_known[w] && sdr_matched[w] >= sdr_due[w]; }

/* a matched message nobody takes (a stale one): received into scratch space, and counted */
void sdr_discard(const sdr_comm_t *c, MPI_Message *m, const MPI_Status *st) {
    static char *scratch;
    static int scratch_size;
    int bytes = 0;
    PMPI_Get_count(st, MPI_BYTE, &bytes);
    if (bytes > scratch_size) scratch = realloc(scratch, (size_t)(scratch_size = bytes));
    PMPI_Mrecv(scratch, bytes, MPI_BYTE, m, MPI_STATUS_IGNORE);
    sdr_count_match(c, st->MPI_SOURCE);
}

int sdr_drain_due_in(const sdr_comm_t *c) {
    for (int i = 0; i < c->size; i++)
        for (int j = 0; j < sdr.R; j++) {
            int w = sdr_real_rank(c->members[i], j);
            if (!sdr.dead[w] && !sdr_drained(w)) return 1;
        }
    return 0;
}

/* take out of the way the messages of replicas this process no longer receives from that are still coming */
void sdr_drain_stale(void) {
    if (!drains_due) return;
    drains_due = 0;
    for (int w = 0; w < sdr.n * sdr.R; w++) {
        int a = w % sdr.n, j = w / sdr.n;
        if (!sdr_due_known[w] || sdr_matched[w] >= sdr_due[w] || sdr.dead[w]) continue;
        drains_due = 1;
        if (sdr.from[a] == j) continue;
        for (sdr_comm_t *c = sdr_comms; c && sdr_matched[w] < sdr_due[w]; c = c->next) {
            int i = c->index_of[a];
            if (i < 0 || c->real[i * sdr.R + j] < 0) continue;
            for (int chan = 0; chan < 2; chan++) {
                int flag = 1;
                while (flag && sdr_matched[w] < sdr_due[w]) {
                    MPI_Message m;
                    MPI_Status st;
                    if (PMPI_Improbe(c->real[i * sdr.R + j], MPI_ANY_TAG, c->chan[chan], &flag, &m, &st) != MPI_SUCCESS)
                        break;
                    if (flag) sdr_discard(c, &m, &st);
                }
            }
        }
        if (sdr_matched[w] >= sdr_due[w]) sdr_retarget_due = 1;
    }
    if (!drains_due)
        for (sdr_comm_t *c = sdr_comms, *next; c; c = next) { /* freed ones kept for their stale messages */
            next = c->next;
            if (c->freed) sdr_comm_destroy_if_unused(c);
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
int sdr_take_back(MPI_Comm comm, MPI_Request *req, MPI_Status *st) {
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
int sdr_interrupted(MPI_Comm comm, MPI_Request *req, MPI_Status *st) {
    int n;
    sdr_learn_failures();
    PMPIX_Comm_ack_failed(comm, sdr.n * sdr.R, &n);
    return sdr_take_back(comm, req, st);
}

void sdr_poll_acks(void) {
    for (;;) {
        int flag = 0;
        MPI_Status st;
        if (sdr_ack_req == MPI_REQUEST_NULL)
            PMPI_Irecv(ack_in, 4, MPI_INT, MPI_ANY_SOURCE, ACK_TAG, sdr.acks, &sdr_ack_req);
        int rc = PMPI_Test(&sdr_ack_req, &flag, &st);
        if (rc != MPI_SUCCESS) {
            if (sdr_interrupted(sdr.acks, &sdr_ack_req, &st)) continue;
            flag = 1; /* it matched an ack meanwhile */
        }
        if (!flag) return;
        sdr_ack_req = MPI_REQUEST_NULL;
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

