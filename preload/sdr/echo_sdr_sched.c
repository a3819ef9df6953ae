/* SDR mode: collectives as schedules.  A schedule is a list of steps in
 * rounds; a round posts its sends and receives (on the communicator's
 * collective channel, through the replicated point-to-point layer, so a
 * replica's death mid-collective is survived like any other), and once they
 * are all complete runs its local steps (reductions, copies) in order.
 * Every schedule in flight advances in sdr_progress(), so a nonblocking
 * collective moves while its process waits in any other call.  A schedule
 * owns copies of everything it needs (counts are resolved into steps when it
 * is built), so the caller's arrays may go right after the call. */
#include "echo_sdr.h"

#include <stdlib.h>
#include <string.h>

enum { STEP_SEND, STEP_RECV, STEP_REDUCE, STEP_COPY };

typedef struct step {
    int kind, round;
    const void *in;
    void *out;
    int count, rcount, peer;
    MPI_Datatype dt, rdt;
    MPI_Op op;
} step_t;

struct sdr_sched {
    sdr_comm_t *c;
    int tag;
    int persistent, id, starts; /* a persistent collective: its number among the communicator's, its starts */
    step_t *steps;
    int nsteps, cap;
    int round, last_round, posted, started, done;
    sdr_send_t **sends;
    sdr_recv_t **recvs;
    void **tmp;
    int ntmp;
    MPI_Datatype *types;
    MPI_Datatype *kept_from; /* types[i] is echo's duplicate of the application's kept_from[i] (else NULL) */
    int ntypes;
    sdr_sched_t *next_active;
};

static sdr_sched_t *active;

sdr_sched_t *sdr_sched_new(sdr_comm_t *c) {
    sdr_sched_t *s = calloc(1, sizeof *s);
    s->c = c;
    return s;
}

sdr_comm_t *sdr_sched_comm(sdr_sched_t *s) { return s->c; }

static step_t *add(sdr_sched_t *s, int kind, int round) {
    if (s->nsteps == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->steps = realloc(s->steps, sizeof *s->steps * (size_t)s->cap);
    }
    step_t *t = &s->steps[s->nsteps++];
    memset(t, 0, sizeof *t);
    t->kind = kind, t->round = round;
    if (round > s->last_round) s->last_round = round;
    return t;
}

static MPI_Datatype keep(sdr_sched_t *s, MPI_Datatype dt);

void sdr_sched_send(sdr_sched_t *s, int round, const void *buf, int count, MPI_Datatype dt, int peer) {
    step_t *t = add(s, STEP_SEND, round);
    t->in = buf, t->count = count, t->dt = keep(s, dt), t->peer = peer;
}

void sdr_sched_recv(sdr_sched_t *s, int round, void *buf, int count, MPI_Datatype dt, int peer) {
    step_t *t = add(s, STEP_RECV, round);
    t->out = buf, t->count = count, t->dt = keep(s, dt), t->peer = peer;
}

void sdr_sched_reduce(sdr_sched_t *s, int round, const void *in, void *inout, int count, MPI_Datatype dt,
                      MPI_Op op) {
    step_t *t = add(s, STEP_REDUCE, round);
    t->in = in, t->out = inout, t->count = count, t->dt = keep(s, dt), t->op = op;
}

void sdr_sched_copy(sdr_sched_t *s, int round, const void *src, int scount, MPI_Datatype stype, void *dst,
                    int rcount, MPI_Datatype rtype) {
    step_t *t = add(s, STEP_COPY, round);
    t->in = src, t->count = scount, t->dt = keep(s, stype), t->out = dst, t->rcount = rcount, t->rdt = keep(s, rtype);
}

void *sdr_sched_tmp(sdr_sched_t *s, int count, MPI_Datatype dt) {
    MPI_Aint lb, extent, true_lb, true_extent;
    PMPI_Type_get_extent(dt, &lb, &extent);
    PMPI_Type_get_true_extent(dt, &true_lb, &true_extent);
    size_t bytes = count > 0 ? (size_t)(true_extent + (MPI_Aint)(count - 1) * extent) : 1;
    char *mem = malloc(bytes ? bytes : 1);
    s->tmp = realloc(s->tmp, sizeof *s->tmp * (size_t)(s->ntmp + 1));
    s->tmp[s->ntmp++] = mem;
    return mem - true_lb; /* element 0 where the type's data starts in the block */
}

static void own_type(sdr_sched_t *s, MPI_Datatype dt, MPI_Datatype from) {
    s->types = realloc(s->types, sizeof *s->types * (size_t)(s->ntypes + 1));
    s->kept_from = realloc(s->kept_from, sizeof *s->kept_from * (size_t)(s->ntypes + 1));
    s->kept_from[s->ntypes] = from;
    s->types[s->ntypes++] = dt;
}

void sdr_sched_own_type(sdr_sched_t *s, MPI_Datatype dt) { own_type(s, dt, MPI_DATATYPE_NULL); }

/* the application's datatype, as the schedule's later steps use it: a duplicate (one per type and schedule),
 * since the application may free its own once the collective started (echo_type_keep) */
static MPI_Datatype keep(sdr_sched_t *s, MPI_Datatype dt) {
    for (int i = 0; i < s->ntypes; i++)
        if (s->kept_from[i] == dt && dt != MPI_DATATYPE_NULL) return s->types[i];
    MPI_Datatype kept;
    if (echo_type_keep(dt, &kept)) own_type(s, kept, dt);
    return kept;
}

/* data from one typed buffer to another (any two matching type signatures): as MPI's own transfer copies it, so
 * the padding of long doubles arrives as in the native collective (MPI_Pack and MPI_Unpack drop it: echo_pack.c) */
static void copy_typed(const step_t *t) { echo_copy_as_sent(t->in, t->count, t->dt, t->out, t->rcount, t->rdt); }

static void post_round(sdr_sched_t *s) {
    for (int i = 0; i < s->nsteps; i++) {
        step_t *t = &s->steps[i];
        if (t->round != s->round) continue;
        if (t->kind == STEP_SEND)
            s->sends[i] = sdr_send_start(s->c, SDR_COLL, t->in, t->count, t->dt, t->peer, s->tag, 0,
                                         sdr_send_copies(s->c, t->peer, t->count, t->dt));
        else if (t->kind == STEP_RECV)
            s->recvs[i] = sdr_recv_start(s->c, SDR_COLL, t->out, t->count, t->dt, t->peer, s->tag);
    }
    s->posted = 1;
}

/* advance as far as it goes now; 1 when done */
static int advance(sdr_sched_t *s) {
    while (!s->done) {
        if (!s->posted) post_round(s);
        for (int i = 0; i < s->nsteps; i++) {
            step_t *t = &s->steps[i];
            if (t->round != s->round) continue;
            if (t->kind == STEP_SEND && s->sends[i]) { /* a copied send is done for the schedule once posted */
                if (!sdr_send_copied(s->sends[i]) && !sdr_send_done(s->sends[i])) return 0;
                sdr_send_free(s->sends[i]);
                s->sends[i] = NULL;
            } else if (t->kind == STEP_RECV && s->recvs[i]) {
                if (!sdr_recv_done(s->recvs[i], MPI_STATUS_IGNORE)) return 0;
                sdr_recv_free(s->recvs[i]);
                s->recvs[i] = NULL;
            }
        }
        for (int i = 0; i < s->nsteps; i++) {
            step_t *t = &s->steps[i];
            if (t->round != s->round) continue;
            if (t->kind == STEP_REDUCE) PMPI_Reduce_local(t->in, t->out, t->count, t->dt, t->op);
            else if (t->kind == STEP_COPY) copy_typed(t);
        }
        s->posted = 0;
        if (++s->round > s->last_round) s->done = 1;
    }
    return 1;
}

/* A persistent collective is numbered when it is made: members create them in the same order, but may start
 * them in any (MPI-4; MPICH's coll/p_order starts a Bcast_init and a Barrier_init in opposite orders on two
 * ranks, and tags taken at the start matched one's messages with the other's, a hang).  Its starts use tags of
 * their own (bit 29 set): its number (mod 4096) and its start count (mod 131072); the others count below. */
void sdr_sched_persist(sdr_sched_t *s) {
    s->persistent = 1;
    s->id = s->c->coll_seq++;
}

/* (again, for a persistent collective: the same steps, the next tag) */
void sdr_sched_start(sdr_sched_t *s) {
    if (s->persistent) s->tag = 0x20000000 | (s->id & 0xfff) << 17 | (s->starts++ & 0x1ffff);
    else s->tag = s->c->coll_seq++ & 0x1fffffff; /* every member starts its collectives in the same order */
    if (!s->sends) {
        s->sends = calloc((size_t)s->nsteps + 1, sizeof *s->sends);
        s->recvs = calloc((size_t)s->nsteps + 1, sizeof *s->recvs);
    }
    s->round = 0, s->posted = 0, s->done = 0;
    s->started = 1;
    if (!advance(s)) {
        s->next_active = active;
        active = s;
    }
}

int sdr_sched_done(sdr_sched_t *s) {
    if (!s->done) sdr_progress();
    return s->done;
}

void sdr_sched_progress(void) {
    for (sdr_sched_t **p = &active; *p;) {
        sdr_sched_t *s = *p;
        if (advance(s)) *p = s->next_active;
        else p = &s->next_active;
    }
}

void sdr_sched_free(sdr_sched_t *s) {
    for (sdr_sched_t **p = &active; *p; p = &(*p)->next_active)
        if (*p == s) {
            *p = s->next_active;
            break;
        }
    for (int i = 0; i < s->ntmp; i++) free(s->tmp[i]);
    for (int i = 0; i < s->ntypes; i++) PMPI_Type_free(&s->types[i]);
    free(s->tmp);
    free(s->types);
    free(s->kept_from);
    free(s->sends);
    free(s->recvs);
    free(s->steps);
    free(s);
}

int sdr_sched_run(sdr_sched_t *s) {
    sdr_sched_start(s);
    int spins = 0;
    while (!s->done) sdr_spin(&spins);
    sdr_sched_free(s);
    return MPI_SUCCESS;
}
