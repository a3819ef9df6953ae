/* SDR mode: one-sided communication: fence epochs, general active target (PSCW) and passive target (locks and
 * flushes; its own part below says how a target's replicas apply its origins' operations in one order).
 *
 * A window of MPI_Win_create or MPI_Win_allocate is held as a hidden communicator of its members (a split of the
 * window's communicator, so it has the replicated layer's acks, kept copies and substitutes) and, for the
 * application's handle, a stand-in window over MPI_COMM_SELF on the same memory (its attributes, name, info and
 * error handler are the window's own).  Nothing is written into another process's memory by MPI: an origin sends
 * each operation to its target as messages on the hidden communicator (a header, then its data), and each target
 * applies what it was sent when it closes the epoch, at MPI_Win_fence: the members first tell each other how many
 * operations each sent to each (an Alltoall), then every target receives its operations origin by origin, in
 * rank order and in the order each origin issued them, applies the Puts and Accumulates to its memory and answers
 * the Gets, and finally every origin receives its answers.  A PSCW epoch sends the same messages; its target
 * applies them origin by origin, as each origin's MPI_Win_complete tells it how many it sent (below); a passive
 * target applies them from the progress loop, as each origin's flush or unlock tells it how many it sent.
 *
 * So every replica of a rank applies the same operations in the same order to the same memory: the replicas'
 * windows hold the same bytes (an Accumulate of doubles from several origins too), and a Put reaches every live
 * replica of its target, because the layer delivers every message of a rank to every live replica of its
 * destination, exactly once, whichever replicas of the sender die (a dead origin's operations come from its
 * substitute; a Get whose target replica died is answered by a sibling of the target).  A replica killed before,
 * between or inside an epoch is one more death of the layer.  docs/sdr.md says what is guaranteed and what is
 * refused. */
#include "echo_sdr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OP_PUT = 1, OP_GET, OP_ACC, OP_GET_ACC, OP_CAS };
/* on a window's hidden communicator (TAG_DONE: PSCW's counts; the passive target's events, operations and answers
 * have tags of their own, so they never match an active-target epoch's) */
enum { TAG_OP = 1, TAG_REPLY = 2, TAG_DONE = 3, TAG_EV = 4, TAG_POP = 5, TAG_PREPLY = 6 };
/* a passive-target event an origin sends its target: its lock (announced with its first operation; the process's own
 * at once), the end of a batch of operations (a flush), the end of its epoch; each carries a count of operations */
enum { EV_LOCK = 1, EV_FLUSH, EV_UNLOCK };
enum { HELD_SHARED = 1, HELD_EXCLUSIVE = 2 };
enum { H_KIND, H_DISP, H_LB, H_COUNT, H_TYPE, H_OP, H_LEN };

typedef struct reply {
    void *buf;
    int count;
    MPI_Datatype dt;
    int target;
    int passive;         /* of a passive-target epoch: received at the flush or unlock of its target */
} reply_t;

/* requests on their way out and the buffers they send from, freed when they complete */
typedef struct pending {
    MPI_Request *reqs;
    int *to;             /* each request's peer (member) */
    void **owned;
    int n, nowned, cap;
} pending_t;

typedef struct sdr_win {
    MPI_Win app;         /* the stand-in the application holds */
    sdr_comm_t *c;       /* the hidden communicator of the window's members */
    char *base;
    MPI_Aint size;
    int disp_unit;
    int *nops;           /* operations sent to each member in this epoch */
    pending_t sends;     /* this process's operations' data on their way out */
    pending_t answers;   /* answers to other processes' fetching operations on their way out */
    reply_t *replies;    /* the answers this process waits for, in the order it asked */
    int nreplies, cap_replies;
    /* general active target (PSCW): the access epoch's targets (MPI_Win_start's group) and the exposure epoch's
     * origins (MPI_Win_post's group), as members in rank order; an origin's operations are applied once its
     * MPI_Win_complete's count of them is in (done[i], received into ndone[i]), origin by origin */
    int *targets, ntargets, access;
    int *origins, norigins, served, exposure;
    int *ndone;
    MPI_Request *done;
    /* passive target, as an origin (per member): the lock held on it (HELD_*), whether its EV_LOCK went out, the
     * operations of the current batch */
    int *locked, *announced, *pops;
    /* passive target, as a target: each origin's events received and not yet applied (in arrival order), the
     * locks granted, and the order agreed among this rank's replicas (echo_sdr_win.c's passive part says how) */
    struct event *first, *last;
    int *holds, exclusive, nshared;
    long long seq;       /* events applied */
    int last_origin;     /* whose event was the seq-th (a new leader sends it again) */
    int leader;          /* the replica of this rank whose order this one applies (itself: it decides) */
    int *queue, nqueue, cap_queue; /* decided, not yet applied here: origins, in order */
    pending_t panswers;  /* answers and done-words to origins on their way out */
    struct sdr_win *next;
} sdr_win_t;

typedef struct event {
    int origin, kind, arg;
    struct event *next;
} event_t;

static sdr_win_t *wins;
static int announce(sdr_win_t *w, int target);
static int leader_now(void);

static int refuse(const char *call, const char *why) {
    char what[200];
    snprintf(what, sizeof what, "%s %s", call, why);
    echo_unsupported(what);
    return MPI_ERR_OTHER;
}

static sdr_win_t *win_of(MPI_Win win) {
    for (sdr_win_t *w = wins; w; w = w->next)
        if (w->app == win) return w;
    return NULL;
}

/* Datatypes and operations travel as their index here: handles are addresses, which differ between processes */
static MPI_Datatype named_type(int i) {
    const MPI_Datatype named[] = {
        MPI_BYTE, MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_WCHAR, MPI_SHORT, MPI_UNSIGNED_SHORT, MPI_INT,
        MPI_UNSIGNED, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG, MPI_UNSIGNED_LONG_LONG, MPI_FLOAT, MPI_DOUBLE,
        MPI_LONG_DOUBLE, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T,
        MPI_UINT64_T, MPI_C_BOOL, MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_AINT, MPI_OFFSET, MPI_COUNT,
        MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT, MPI_SHORT_INT, MPI_LONG_DOUBLE_INT, MPI_INTEGER,
        MPI_REAL, MPI_DOUBLE_PRECISION, MPI_LOGICAL, MPI_CHARACTER, MPI_COMPLEX, MPI_DOUBLE_COMPLEX, MPI_2INTEGER,
        MPI_2REAL, MPI_2DOUBLE_PRECISION};
    int n = (int)(sizeof named / sizeof named[0]);
    return i >= 0 && i < n ? named[i] : MPI_DATATYPE_NULL;
}

static int type_index(MPI_Datatype dt) {
    for (int i = 0;; i++) {
        MPI_Datatype t = named_type(i);
        if (t == MPI_DATATYPE_NULL) return -1;
        if (t == dt) return i;
    }
}

static MPI_Op named_op(int i) {
    const MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX,  MPI_MIN,    MPI_LAND,    MPI_LOR,     MPI_LXOR,
                          MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MAXLOC, MPI_MINLOC, MPI_REPLACE, MPI_NO_OP};
    return i >= 0 && i < (int)(sizeof ops / sizeof ops[0]) ? ops[i] : MPI_OP_NULL;
}

static int op_index(MPI_Op op) {
    for (int i = 0;; i++) {
        MPI_Op o = named_op(i);
        if (o == MPI_OP_NULL) return -1;
        if (o == op) return i;
    }
}

/* the one predefined type a datatype is made of (MPI_DATATYPE_NULL: several, or one this file does not name) */
static MPI_Datatype basic_of(MPI_Datatype dt) {
    int ni, na, nd, combiner;
    PMPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner);
    if (combiner == MPI_COMBINER_NAMED) return type_index(dt) >= 0 ? dt : MPI_DATATYPE_NULL;
    int *ints = malloc(sizeof(int) * (size_t)(ni + 1));
    MPI_Aint *aints = malloc(sizeof(MPI_Aint) * (size_t)(na + 1));
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)(nd + 1)), basic = MPI_DATATYPE_NULL;
    PMPI_Type_get_contents(dt, ni, na, nd, ints, aints, types);
    for (int i = 0; i < nd; i++) {
        MPI_Datatype b = basic_of(types[i]);
        basic = i == 0 ? b : (b == basic ? basic : MPI_DATATYPE_NULL);
        int tni, tna, tnd, tc;
        PMPI_Type_get_envelope(types[i], &tni, &tna, &tnd, &tc);
        if (tc != MPI_COMBINER_NAMED) PMPI_Type_free(&types[i]);
    }
    free(ints), free(aints), free(types);
    return basic;
}

static void push(pending_t *p, MPI_Request r, void *owned, int to) {
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 16;
        p->reqs = realloc(p->reqs, sizeof(MPI_Request) * (size_t)p->cap);
        p->to = realloc(p->to, sizeof(int) * (size_t)p->cap);
        p->owned = realloc(p->owned, sizeof(void *) * (size_t)p->cap);
    }
    p->to[p->n] = to;
    p->reqs[p->n++] = r;
    if (owned) p->owned[p->nowned++] = owned;
}

/* whether every request is complete (each test drives the layer); if so they are forgotten with their buffers */
static int pending_test(pending_t *p, int *rc) {
    int flag = 1;
    *rc = p->n ? echo_sdr_MPI_Testall(p->n, p->reqs, &flag, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
    if (!flag || *rc != MPI_SUCCESS) return flag && *rc == MPI_SUCCESS;
    for (int i = 0; i < p->nowned; i++) free(p->owned[i]);
    p->n = p->nowned = 0;
    return 1;
}

static int pending_wait(pending_t *p) {
    int rc = p->n ? echo_sdr_MPI_Waitall(p->n, p->reqs, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
    for (int i = 0; i < p->nowned; i++) free(p->owned[i]);
    p->n = p->nowned = 0;
    return rc;
}

/* the requests to member `to` complete (those own no buffer: the operations' sends); the others stay.  Waiting for
 * all of them could wait for a passive target that applies its operations only at its next event from here */
static int pending_wait_to(pending_t *p, int to) {
    int rc = MPI_SUCCESS, kept = 0;
    for (int i = 0; i < p->n; i++) {
        if (p->to[i] != to) {
            p->reqs[kept] = p->reqs[i], p->to[kept++] = p->to[i];
            continue;
        }
        int r = echo_sdr_MPI_Wait(&p->reqs[i], MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS) rc = r;
    }
    p->n = kept;
    return rc;
}

/* ---- creation and freeing ---- */

static int win_new(MPI_Comm comm, const char *call, void *base, MPI_Aint size, int disp_unit, MPI_Info info,
                   void *baseptr, MPI_Win *win) {
    sdr_comm_t *c = sdr_comm_of(comm);
    if (c->inter) return refuse(call, "over an intercommunicator");
    MPI_Comm hidden;
    int rc = sdr_comm_create(c, 0, c->rank, &hidden, 0);
    if (rc != MPI_SUCCESS) return rc;
    /* the stand-in: MPI_Win_allocate's memory is MPI's, as natively (its flavor attribute says so too) */
    rc = baseptr ? PMPI_Win_allocate(size, disp_unit, info, MPI_COMM_SELF, baseptr, win)
                 : PMPI_Win_create(base, size, disp_unit, info, MPI_COMM_SELF, win);
    if (rc != MPI_SUCCESS) {
        echo_sdr_MPI_Comm_free(&hidden);
        return rc;
    }
    sdr_win_t *w = calloc(1, sizeof *w);
    w->app = *win;
    w->c = sdr_comm_of(hidden);
    w->base = baseptr ? *(char **)baseptr : base;
    w->size = size;
    w->disp_unit = disp_unit;
    w->nops = calloc((size_t)w->c->size, sizeof(int));
    w->locked = calloc((size_t)w->c->size, sizeof(int));
    w->announced = calloc((size_t)w->c->size, sizeof(int));
    w->pops = calloc((size_t)w->c->size, sizeof(int));
    w->holds = calloc((size_t)w->c->size, sizeof(int));
    w->exclusive = -1;
    w->leader = leader_now();
    w->next = wins;
    wins = w;
    return MPI_SUCCESS;
}

int echo_sdr_MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win) {
    return win_new(comm, "MPI_Win_create", base, size, disp_unit, info, NULL, win);
}

int echo_sdr_MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                              MPI_Win *win) {
    return win_new(comm, "MPI_Win_allocate", NULL, size, disp_unit, info, baseptr, win);
}

int echo_sdr_MPI_Win_free(MPI_Win *win) {
    sdr_win_t *w = win_of(*win), **at = &wins;
    if (!w) return PMPI_Win_free(win);
    int open = w->sends.n || w->answers.n || w->nreplies || w->access || w->exposure;
    for (int t = 0; t < w->c->size; t++) open |= w->locked[t] != 0;
    if (open) return MPI_ERR_RMA_SYNC; /* an epoch still open: MPI requires it closed before the free */
    /* the free is collective: once every member is here, every passive-target epoch on the window has ended, so
     * this process applied every event sent it (it serves them while it waits here) */
    int rc = echo_sdr_MPI_Barrier(w->c->app);
    if (rc == MPI_SUCCESS) rc = pending_wait(&w->panswers);
    if (rc != MPI_SUCCESS) return rc;
    rc = PMPI_Win_free(win); /* the application's attribute delete callbacks run in it */
    while (*at != w) at = &(*at)->next;
    *at = w->next;
    MPI_Comm hidden = w->c->app;
    echo_sdr_MPI_Comm_free(&hidden);
    free(w->nops), free(w->sends.reqs), free(w->sends.owned), free(w->sends.to);
    free(w->answers.reqs), free(w->answers.owned), free(w->answers.to), free(w->panswers.to);
    free(w->replies), free(w->targets), free(w->origins), free(w->ndone), free(w->done);
    free(w->locked), free(w->announced), free(w->pops), free(w->holds), free(w->queue);
    free(w->panswers.reqs), free(w->panswers.owned);
    for (event_t *e = w->first, *next; e; e = next) next = e->next, free(e);
    free(w);
    return rc;
}

/* the window's group is its communicator's: this replica's processes, as a communicator's group is */
int echo_sdr_MPI_Win_get_group(MPI_Win win, MPI_Group *group) {
    sdr_win_t *w = win_of(win);
    return w ? echo_sdr_MPI_Comm_group(w->c->app, group) : PMPI_Win_get_group(win, group);
}

/* ---- operations: sent now, applied by the target when it closes the epoch ---- */

/* whether a datatype that covers one run of memory (its size is its true extent) takes its bytes in their order:
 * a transposing or reversing type covers one run too.  Predefined and contiguous types do; another is packed from
 * a run of bytes each of which tells its offset (a mix of its bits: a permutation that kept every byte's value
 * would have to map offsets to offsets of the same mix). */
static int in_order(MPI_Datatype dt, MPI_Aint tlb, int size) {
    int ni, na, nd, combiner;
    PMPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner);
    if (combiner == MPI_COMBINER_NAMED || size <= 1) return 1;
    unsigned char *run = malloc((size_t)size), *packed = malloc((size_t)size);
    for (int i = 0; i < size; i++) {
        unsigned v = (unsigned)i * 2654435761u;
        run[i] = (unsigned char)(v >> 24 ^ v >> 16 ^ (unsigned)i >> 8);
    }
    int pos = 0, same = PMPI_Pack(run - tlb, 1, dt, packed, size, &pos, MPI_COMM_SELF) == MPI_SUCCESS && pos == size &&
                        !memcmp(run, packed, (size_t)size);
    free(run), free(packed);
    return same;
}

/* An operation on member `target`: its header, then (but for a Get) its data; an answer (Get and the fetching
 * ones) is awaited into (rbuf, rcount, rtype).  The target's memory must be one contiguous run of one predefined
 * type (or bytes, for Put and Get): the target learns its layout as an offset and a count of that type. */
static int issue(sdr_win_t *w, const char *call, int kind, const void *obuf, int ocount, MPI_Datatype otype,
                 const void *cbuf, void *rbuf, int rcount, MPI_Datatype rtype, int target, MPI_Aint tdisp,
                 int tcount, MPI_Datatype ttype, MPI_Op op) {
    if (target == MPI_PROC_NULL) return MPI_SUCCESS;
    if (target < 0 || target >= w->c->size) return MPI_ERR_RANK;
    if (tcount < 0 || ocount < 0) return MPI_ERR_COUNT;
    int size, bsize;
    MPI_Aint lb, extent, tlb, textent;
    PMPI_Type_size(ttype, &size);
    PMPI_Type_get_extent(ttype, &lb, &extent);
    PMPI_Type_get_true_extent(ttype, &tlb, &textent);
    if ((MPI_Aint)size != textent || (tcount > 1 && extent != textent) || !in_order(ttype, tlb, size))
        return refuse(call, "with a non-contiguous target datatype (SDR's windows take a target's data as one run)");
    MPI_Datatype basic = basic_of(ttype);
    int plain = kind == OP_PUT || kind == OP_GET;
    if (basic == MPI_DATATYPE_NULL) {
        if (!plain) return refuse(call, "of a datatype SDR does not know as one predefined type");
        basic = MPI_BYTE;
    }
    int opi = op_index(op);
    if (opi < 0) return MPI_ERR_OP;
    PMPI_Type_size(basic, &bsize);
    long long header[H_LEN] = {kind, (long long)tdisp, (long long)tlb,
                               bsize ? (long long)size * tcount / bsize : 0, type_index(basic), opi};
    sdr_comm_t *c = w->c;
    int passive = w->locked[target] != 0, tag = passive ? TAG_POP : TAG_OP;
    int rc = passive ? announce(w, target) : MPI_SUCCESS;
    /* a small send is copied by the layer at once: the header on the stack is safe */
    if (rc == MPI_SUCCESS) rc = echo_sdr_MPI_Send(header, H_LEN, MPI_LONG_LONG, target, tag, c->app);
    if (rc == MPI_SUCCESS && kind != OP_GET && !(kind == OP_GET_ACC && op == MPI_NO_OP)) {
        MPI_Request r;
        rc = echo_sdr_MPI_Isend(obuf, ocount, otype, target, tag, c->app, &r);
        if (rc == MPI_SUCCESS) push(&w->sends, r, NULL, target);
        if (rc == MPI_SUCCESS && kind == OP_CAS) {
            rc = echo_sdr_MPI_Isend(cbuf, ocount, otype, target, tag, c->app, &r);
            if (rc == MPI_SUCCESS) push(&w->sends, r, NULL, target);
        }
    }
    if (rc != MPI_SUCCESS) return rc;
    if (passive)
        w->pops[target]++;
    else
        w->nops[target]++;
    if (kind == OP_GET || kind == OP_GET_ACC || kind == OP_CAS) {
        if (w->nreplies == w->cap_replies) {
            w->cap_replies = w->cap_replies ? 2 * w->cap_replies : 16;
            w->replies = realloc(w->replies, sizeof(reply_t) * (size_t)w->cap_replies);
        }
        w->replies[w->nreplies++] = (reply_t){rbuf, rcount, rtype, target, passive};
    }
    return MPI_SUCCESS;
}

int echo_sdr_MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                     MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win) {
    sdr_win_t *w = win_of(win);
    if (!w)
        return PMPI_Put(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                        target_datatype, win);
    return issue(w, "MPI_Put", OP_PUT, origin_addr, origin_count, origin_datatype, NULL, NULL, 0, MPI_DATATYPE_NULL,
                 target_rank, target_disp, target_count, target_datatype, MPI_REPLACE);
}

int echo_sdr_MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                     MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win) {
    sdr_win_t *w = win_of(win);
    if (!w)
        return PMPI_Get(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                        target_datatype, win);
    return issue(w, "MPI_Get", OP_GET, NULL, 0, MPI_DATATYPE_NULL, NULL, origin_addr, origin_count,
                 origin_datatype, target_rank, target_disp, target_count, target_datatype, MPI_NO_OP);
}

int echo_sdr_MPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                            int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
                            MPI_Op op, MPI_Win win) {
    sdr_win_t *w = win_of(win);
    if (!w)
        return PMPI_Accumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                               target_datatype, op, win);
    return issue(w, "MPI_Accumulate", OP_ACC, origin_addr, origin_count, origin_datatype, NULL, NULL, 0,
                 MPI_DATATYPE_NULL, target_rank, target_disp, target_count, target_datatype, op);
}

int echo_sdr_MPI_Get_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                                void *result_addr, int result_count, MPI_Datatype result_datatype, int target_rank,
                                MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op,
                                MPI_Win win) {
    sdr_win_t *w = win_of(win);
    if (!w)
        return PMPI_Get_accumulate(origin_addr, origin_count, origin_datatype, result_addr, result_count,
                                   result_datatype, target_rank, target_disp, target_count, target_datatype, op,
                                   win);
    return issue(w, "MPI_Get_accumulate", OP_GET_ACC, origin_addr, origin_count, origin_datatype, NULL, result_addr,
                 result_count, result_datatype, target_rank, target_disp, target_count, target_datatype, op);
}

int echo_sdr_MPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype, int target_rank,
                              MPI_Aint target_disp, MPI_Op op, MPI_Win win) {
    sdr_win_t *w = win_of(win);
    if (!w) return PMPI_Fetch_and_op(origin_addr, result_addr, datatype, target_rank, target_disp, op, win);
    return issue(w, "MPI_Fetch_and_op", OP_GET_ACC, origin_addr, 1, datatype, NULL, result_addr, 1, datatype,
                 target_rank, target_disp, 1, datatype, op);
}

int echo_sdr_MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
                                  MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Win win) {
    sdr_win_t *w = win_of(win);
    if (!w)
        return PMPI_Compare_and_swap(origin_addr, compare_addr, result_addr, datatype, target_rank, target_disp, win);
    return issue(w, "MPI_Compare_and_swap", OP_CAS, origin_addr, 1, datatype, compare_addr, result_addr, 1, datatype,
                 target_rank, target_disp, 1, datatype, MPI_REPLACE);
}

/* ---- the fence: every target applies what it was sent, in one order everywhere ---- */

/* an answer's data sent back to `origin`: from the window itself (a Get: nothing changes it before the epoch's
 * sends complete) or from a copy of what an accumulate is about to change */
static int answer(sdr_win_t *w, int origin, char *at, MPI_Aint bytes, int count, MPI_Datatype dt, int copy,
                  int passive) {
    void *owned = NULL;
    if (copy) {
        owned = malloc((size_t)bytes + 1);
        memcpy(owned, at, (size_t)bytes);
    }
    MPI_Request r;
    int rc = echo_sdr_MPI_Isend(owned ? owned : at, count, dt, origin, passive ? TAG_PREPLY : TAG_REPLY, w->c->app,
                                &r);
    if (rc == MPI_SUCCESS)
        push(passive ? &w->panswers : &w->answers, r, owned, origin);
    else
        free(owned);
    return rc;
}

/* receive one operation of `origin` and apply it (passive: one of a passive-target epoch, whose answer is sent
 * from a copy: the window may change before the send completes) */
static int apply_one(sdr_win_t *w, int origin, int passive) {
    MPI_Comm comm = w->c->app;
    long long h[H_LEN];
    int tag = passive ? TAG_POP : TAG_OP;
    int rc = echo_sdr_MPI_Recv(h, H_LEN, MPI_LONG_LONG, origin, tag, comm, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return rc;
    MPI_Datatype dt = named_type((int)h[H_TYPE]);
    MPI_Op op = named_op((int)h[H_OP]);
    int count = (int)h[H_COUNT], kind = (int)h[H_KIND], bsize;
    PMPI_Type_size(dt, &bsize);
    MPI_Aint off = (MPI_Aint)h[H_DISP] * w->disp_unit + (MPI_Aint)h[H_LB], bytes = (MPI_Aint)count * bsize;
    int inside = off >= 0 && off + bytes <= w->size;
    char *at = w->base + off;
    if (!inside) {
        fprintf(stderr, "echo: SDR: an RMA operation of rank %d outside rank %d's window (%lld bytes at %lld of %lld)"
                " was dropped\n", w->c->members[origin], echo.app_rank, (long long)bytes, (long long)off,
                (long long)w->size);
        at = NULL;
    }
    /* the data: straight into the window for a Put, else into a buffer applied with the operation */
    void *in = NULL, *cmp = NULL;
    if (kind == OP_PUT && inside)
        rc = echo_sdr_MPI_Recv(at, count, dt, origin, tag, comm, MPI_STATUS_IGNORE);
    else if (kind != OP_GET && !(kind == OP_GET_ACC && op == MPI_NO_OP)) {
        in = malloc((size_t)bytes + 1);
        rc = echo_sdr_MPI_Recv(in, count, dt, origin, tag, comm, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS && kind == OP_CAS) {
            cmp = malloc((size_t)bytes + 1);
            rc = echo_sdr_MPI_Recv(cmp, count, dt, origin, tag, comm, MPI_STATUS_IGNORE);
        }
    }
    if (rc == MPI_SUCCESS && (kind == OP_GET || kind == OP_GET_ACC || kind == OP_CAS)) {
        void *zero = NULL;
        if (!inside) at = zero = calloc(1, (size_t)bytes + 1); /* the origin still waits for an answer */
        rc = answer(w, origin, at, bytes, count, dt, kind != OP_GET || zero || passive, passive);
        free(zero);
        if (!inside) at = NULL;
    }
    if (rc == MPI_SUCCESS && inside && in) {
        if (kind == OP_CAS) {
            if (!memcmp(at, cmp, (size_t)bytes)) memcpy(at, in, (size_t)bytes);
        } else if (op == MPI_REPLACE)
            memcpy(at, in, (size_t)bytes);
        else if (op != MPI_NO_OP)
            rc = PMPI_Reduce_local(in, at, count, dt, op);
    }
    free(in), free(cmp);
    return rc;
}

int echo_sdr_MPI_Win_fence(int assert, MPI_Win win) {
    sdr_win_t *w = win_of(win);
    if (!w) return PMPI_Win_fence(assert, win);
    sdr_comm_t *c = w->c;
    int *incoming = malloc(sizeof(int) * (size_t)c->size);
    int rc = echo_sdr_MPI_Alltoall(w->nops, 1, MPI_INT, incoming, 1, MPI_INT, c->app);
    for (int o = 0; o < c->size && rc == MPI_SUCCESS; o++)
        for (int i = 0; i < incoming[o] && rc == MPI_SUCCESS; i++) rc = apply_one(w, o, 0);
    for (int i = 0; i < w->nreplies && rc == MPI_SUCCESS; i++) {
        reply_t *g = &w->replies[i];
        rc = echo_sdr_MPI_Recv(g->buf, g->count, g->dt, g->target, TAG_REPLY, c->app, MPI_STATUS_IGNORE);
    }
    if (rc == MPI_SUCCESS) rc = pending_wait(&w->sends);
    if (rc == MPI_SUCCESS) rc = pending_wait(&w->answers);
    memset(w->nops, 0, sizeof(int) * (size_t)c->size);
    w->nreplies = 0;
    free(incoming);
    return rc;
}

/* ---- general active target (PSCW): the same messages, an epoch closed origin by origin ----
 *
 * MPI_Win_start and MPI_Win_post only note their groups: an origin's operations travel as a fence epoch's do, and
 * its MPI_Win_complete tells each target of its start group how many it sent it (TAG_DONE).  A target applies an
 * origin's operations once that count is in, origins in rank order and each origin's in the order it made them,
 * so every replica of the target applies the same operations in the same order.  It does so in MPI_Win_wait and
 * MPI_Win_test, and also while it waits in its own MPI_Win_complete: in a ring every process is an origin waiting
 * for its Get's answer (or its Put's acks) while it is the target of another, and the answers come only from a
 * target that serves its exposure epoch.  Serving never waits for an origin whose count is not in, so origins
 * may complete in any order.  A dead origin's operations and count come from its substitute (the layer re-sends
 * what was not acked), so MPI_Win_wait returns once every origin completed, in some live replica. */

static int by_rank(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* a group of this replica's processes (echo_sdr_MPI_Comm_group, MPI_Win_get_group) as the window's members, in
 * rank order: the order in which a target applies its origins' operations, the same in every replica */
static int members_of(const sdr_win_t *w, MPI_Group group, int **members, int *n) {
    int rc = PMPI_Group_size(group, n);
    if (rc != MPI_SUCCESS) return rc;
    MPI_Group world;
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    int *ranks = malloc(sizeof(int) * (size_t)(*n + 1)), *real = malloc(sizeof(int) * (size_t)(*n + 1));
    for (int i = 0; i < *n; i++) ranks[i] = i;
    rc = PMPI_Group_translate_ranks(group, *n, ranks, world, real);
    PMPI_Group_free(&world);
    for (int i = 0; i < *n && rc == MPI_SUCCESS; i++) {
        int member = real[i] != MPI_UNDEFINED && real[i] / sdr.n == sdr.k ? w->c->index_of[real[i] % sdr.n] : -1;
        if (member < 0) rc = MPI_ERR_GROUP; /* not a process of the window */
        ranks[i] = member;
    }
    free(real);
    if (rc != MPI_SUCCESS) {
        free(ranks);
        return rc;
    }
    qsort(ranks, (size_t)*n, sizeof(int), by_rank);
    *members = ranks;
    return MPI_SUCCESS;
}

/* apply the operations of every origin whose count is in, in rank order, stopping at the first whose count is
 * not (never waiting for it: it may be waiting in its own MPI_Win_complete for this process's answers) */
static int serve(sdr_win_t *w) {
    int rc = MPI_SUCCESS;
    while (w->exposure && w->served < w->norigins && rc == MPI_SUCCESS) {
        int flag = 0;
        rc = echo_sdr_MPI_Test(&w->done[w->served], &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS || !flag) break;
        for (int i = 0; i < w->ndone[w->served] && rc == MPI_SUCCESS; i++) rc = apply_one(w, w->origins[w->served], 0);
        w->served++;
    }
    return rc;
}

int echo_sdr_MPI_Win_post(MPI_Group group, int assert, MPI_Win win) {
    sdr_win_t *w = win_of(win);
    if (!w) return PMPI_Win_post(group, assert, win);
    if (w->exposure) return MPI_ERR_RMA_SYNC;
    int *origins, n, rc = members_of(w, group, &origins, &n);
    if (rc != MPI_SUCCESS) return rc;
    free(w->origins), free(w->ndone), free(w->done);
    w->origins = origins, w->norigins = n, w->served = 0;
    w->ndone = calloc((size_t)n + 1, sizeof(int));
    w->done = malloc(sizeof(MPI_Request) * ((size_t)n + 1));
    /* each origin's count of this epoch: the layer keeps an origin's messages in order, so an early origin's
     * count of its next epoch matches the next post's receive */
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++)
        rc = echo_sdr_MPI_Irecv(&w->ndone[i], 1, MPI_INT, origins[i], TAG_DONE, w->c->app, &w->done[i]);
    if (rc == MPI_SUCCESS) w->exposure = 1;
    return rc;
}

int echo_sdr_MPI_Win_start(MPI_Group group, int assert, MPI_Win win) {
    sdr_win_t *w = win_of(win);
    if (!w) return PMPI_Win_start(group, assert, win);
    if (w->access) return MPI_ERR_RMA_SYNC;
    /* nothing to wait for: an operation reaches its target's memory only once the target applies it in the epoch
     * it posted, which MPI_Win_start's wait for the post would otherwise guarantee */
    int *targets, n, rc = members_of(w, group, &targets, &n);
    if (rc != MPI_SUCCESS) return rc;
    free(w->targets);
    w->targets = targets, w->ntargets = n, w->access = 1;
    return MPI_SUCCESS;
}

int echo_sdr_MPI_Win_complete(MPI_Win win) {
    sdr_win_t *w = win_of(win);
    if (!w) return PMPI_Win_complete(win);
    if (!w->access) return MPI_ERR_RMA_SYNC;
    MPI_Comm comm = w->c->app;
    int rc = MPI_SUCCESS, spins = 0;
    for (int i = 0; i < w->ntargets && rc == MPI_SUCCESS; i++) {
        int t = w->targets[i];
        rc = echo_sdr_MPI_Send(&w->nops[t], 1, MPI_INT, t, TAG_DONE, comm);
        w->nops[t] = 0;
    }
    w->access = 0;
    MPI_Request *got = malloc(sizeof(MPI_Request) * ((size_t)w->nreplies + 1));
    int asked = 0;
    for (; asked < w->nreplies && rc == MPI_SUCCESS; asked++) {
        reply_t *g = &w->replies[asked];
        rc = echo_sdr_MPI_Irecv(g->buf, g->count, g->dt, g->target, TAG_REPLY, comm, &got[asked]);
    }
    /* the answers and the operations' acks come as the targets serve: serve this process's exposure meanwhile */
    while (rc == MPI_SUCCESS) {
        int answered = 0;
        rc = serve(w);
        if (rc == MPI_SUCCESS) rc = echo_sdr_MPI_Testall(asked, got, &answered, MPI_STATUSES_IGNORE);
        if (rc == MPI_SUCCESS && answered && pending_test(&w->sends, &rc)) break;
        if (rc == MPI_SUCCESS) sdr_spin(&spins);
    }
    w->nreplies = 0;
    free(got);
    return rc;
}

/* one step of closing the exposure epoch: *closed once every origin's operations are applied and answered */
static int exposure_step(sdr_win_t *w, int *closed) {
    if (!w->exposure) return MPI_ERR_RMA_SYNC;
    int rc = serve(w);
    /* answers from the window itself go out before the program may change it again */
    *closed = rc == MPI_SUCCESS && w->served == w->norigins && pending_test(&w->answers, &rc);
    if (*closed) w->exposure = 0;
    return rc;
}

int echo_sdr_MPI_Win_wait(MPI_Win win) {
    sdr_win_t *w = win_of(win);
    if (!w) return PMPI_Win_wait(win);
    int closed = 0, spins = 0, rc;
    while ((rc = exposure_step(w, &closed)) == MPI_SUCCESS && !closed) sdr_spin(&spins);
    return rc;
}

int echo_sdr_MPI_Win_test(MPI_Win win, int *flag) {
    sdr_win_t *w = win_of(win);
    return w ? exposure_step(w, flag) : PMPI_Win_test(win, flag);
}

/* ---- passive target: MPI_Win_lock/unlock, lock_all/unlock_all, flush ----
 *
 * An origin's operations in a passive-target epoch travel as an active-target epoch's do (TAG_POP), framed by
 * events on TAG_EV: its lock (EV_LOCK, sent with its first operation on that target; at once for its own window,
 * whose memory the program then reads and writes directly), then, at each MPI_Win_flush and at MPI_Win_unlock, how
 * many operations the batch holds (EV_FLUSH, EV_UNLOCK).  The target applies them from the progress loop, in
 * whatever MPI call it is: a passive target that never calls MPI applies nothing, and its origins' flushes and
 * unlocks wait for it (MPI allows an implementation that progresses passive target only inside MPI calls).  After an
 * origin's batch it answers the fetching operations (from copies) and sends a done-word; the origin's flush or unlock
 * returns once it has those.
 *
 * Which origin's event comes next is the one choice that is not the program's: several origins lock one target.
 * The replicas of a target must make it alike, or their windows (a counter taken by MPI_Fetch_and_op from several
 * ranks) would differ, and so would what their origins fetched and then sent.  So the lowest live replica of the
 * target (the leader) decides: it takes the first event in arrival order that the locks allow (a lock when it is
 * compatible with those granted; a batch or unlock of an origin that holds its lock), numbers it, and hands it to
 * each other live replica in replica order on the real world communicator, waiting until that replica applied it
 * (its own world's copy of that origin's event) before the next replica and before applying it itself.  The
 * followers apply exactly that sequence.  Hence: every live replica of the target applies the same events in the
 * same order; an origin's flush or unlock returns only after every live replica of its target applied its batch,
 * or (the leader) is applying it before any MPI call of it returns; a replica that dies leaves the sequence to the
 * next one, which holds every decision any live replica holds (the leader hands them out in replica order), first
 * applies the decisions it received, and hands its last decision out again (a replica that holds it ignores it).
 * The origins' events and operations are messages of the layer: a dead origin's come from its substitute, each
 * once. */

enum { TAG_DECIDE = 1 << 20 }; /* on sdr.world, + 2 * the window's id: a decision; + 1: that it is applied */

static int leader_now(void) {
    for (int j = 0; j < sdr.R; j++)
        if (!sdr.dead[sdr_real_rank(echo.app_rank, j)]) return j;
    return sdr.k;
}

static int tag_decide(const sdr_win_t *w) { return TAG_DECIDE + 2 * w->c->id; }

static int announce(sdr_win_t *w, int target) {
    if (w->announced[target]) return MPI_SUCCESS;
    int ev[3] = {EV_LOCK, w->locked[target], 0};
    w->announced[target] = 1;
    return echo_sdr_MPI_Send(ev, 3, MPI_INT, target, TAG_EV, w->c->app);
}

/* the origin's end of a batch on `target` (EV_FLUSH or EV_UNLOCK): its answers, in the order it asked, then the
 * target's done-word; its sends to that target complete (their buffers are the program's again) */
static int close_batch(sdr_win_t *w, int target, int kind) {
    if (!w->announced[target]) return MPI_SUCCESS; /* nothing sent in this epoch */
    MPI_Comm comm = w->c->app;
    int ev[3] = {kind, w->pops[target], 0}, kept = 0, done;
    w->pops[target] = 0;
    int rc = echo_sdr_MPI_Send(ev, 3, MPI_INT, target, TAG_EV, comm);
    for (int i = 0; i < w->nreplies; i++) {
        reply_t *g = &w->replies[i];
        if (!g->passive || g->target != target)
            w->replies[kept++] = *g;
        else if (rc == MPI_SUCCESS)
            rc = echo_sdr_MPI_Recv(g->buf, g->count, g->dt, target, TAG_PREPLY, comm, MPI_STATUS_IGNORE);
    }
    w->nreplies = kept;
    if (rc == MPI_SUCCESS) rc = echo_sdr_MPI_Recv(&done, 1, MPI_INT, target, TAG_PREPLY, comm, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS) rc = pending_wait_to(&w->sends, target);
    if (kind == EV_UNLOCK) w->announced[target] = 0;
    return rc;
}

/* ---- the target's side, from the progress loop ---- */

static void take_events(sdr_win_t *w) {
    sdr_comm_t *c = w->c;
    for (int o = 0; o < c->size; o++)
        for (;;) {
            /* the real channel first, from the replica this process takes o's messages from: the layer's probe is
             * a full turn of progress, too dear for every turn; a wildcard probe would report (and acknowledge)
             * failures the layer's own receives have to learn of themselves */
            int flag = 0, ev[3], from = c->real[o * sdr.R + c->sender[o]];
            if (from < 0 || PMPI_Iprobe(from, TAG_EV, c->chan[SDR_DATA], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS ||
                !flag)
                break;
            if (echo_sdr_MPI_Iprobe(o, TAG_EV, c->app, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || !flag) break;
            if (echo_sdr_MPI_Recv(ev, 3, MPI_INT, o, TAG_EV, c->app, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
            event_t *e = malloc(sizeof *e);
            *e = (event_t){o, ev[0], ev[1], NULL};
            if (w->last)
                w->last->next = e;
            else
                w->first = e;
            w->last = e;
        }
}

static event_t *first_of(const sdr_win_t *w, int origin) {
    event_t *e = w->first;
    while (e && e->origin != origin) e = e->next;
    return e;
}

static void apply_event(sdr_win_t *w, event_t *e) {
    event_t **at = &w->first, *prev = NULL;
    while (*at != e) prev = *at, at = &(*at)->next;
    *at = e->next;
    if (w->last == e) w->last = prev;
    int o = e->origin, rc = MPI_SUCCESS;
    if (e->kind == EV_LOCK) {
        w->holds[o] = e->arg;
        if (e->arg == HELD_EXCLUSIVE)
            w->exclusive = o;
        else
            w->nshared++;
    } else {
        static const int done = 1;
        MPI_Request r;
        for (int i = 0; i < e->arg && rc == MPI_SUCCESS; i++) rc = apply_one(w, o, 1);
        if (rc == MPI_SUCCESS) rc = echo_sdr_MPI_Isend(&done, 1, MPI_INT, o, TAG_PREPLY, w->c->app, &r);
        if (rc == MPI_SUCCESS) push(&w->panswers, r, NULL, o);
        if (e->kind == EV_UNLOCK) {
            if (w->exclusive == o)
                w->exclusive = -1;
            else if (w->holds[o])
                w->nshared--;
            w->holds[o] = 0;
        }
    }
    if (rc != MPI_SUCCESS)
        fprintf(stderr, "echo: SDR: rank %d could not apply a passive-target event of rank %d (error %d)\n",
                echo.app_rank, w->c->members[o], rc);
    free(e);
}

/* the follower's "applied up to seq" to the leader */
static void tell_applied(sdr_win_t *w, long long seq) {
    if (PMPI_Send(&seq, 1, MPI_LONG_LONG, sdr_real_rank(echo.app_rank, w->leader), tag_decide(w) + 1, sdr.world) !=
        MPI_SUCCESS)
        sdr_learn_failures();
}

/* the leader hands decision `seq` (the next event of `origin`) to each live follower in replica order, each
 * applying it before the next is told */
static void tell_followers(sdr_win_t *w, long long seq, int origin) {
    for (int j = 0; j < sdr.R; j++) {
        int f = sdr_real_rank(echo.app_rank, j), spins = 0;
        if (j == sdr.k || sdr.dead[f]) continue;
        long long d[2] = {seq, origin}, got = 0;
        if (PMPI_Send(d, 2, MPI_LONG_LONG, f, tag_decide(w), sdr.world) != MPI_SUCCESS) {
            sdr_learn_failures();
            continue;
        }
        while (!sdr.dead[f] && got < seq) {
            int flag = 0;
            if (PMPI_Iprobe(f, tag_decide(w) + 1, sdr.world, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                sdr_learn_failures();
            else if (flag)
                PMPI_Recv(&got, 1, MPI_LONG_LONG, f, tag_decide(w) + 1, sdr.world, MPI_STATUS_IGNORE);
            else
                sdr_spin(&spins);
        }
    }
}

/* the leader: the first event in arrival order that the locks allow (an origin's events in its order) */
static int decide(sdr_win_t *w) {
    for (event_t *e = w->first; e; e = e->next) {
        if (first_of(w, e->origin) != e) continue;
        if (e->kind == EV_LOCK && (w->exclusive >= 0 || (e->arg == HELD_EXCLUSIVE && w->nshared > 0))) continue;
        long long seq = w->seq + 1;
        int origin = e->origin;
        tell_followers(w, seq, origin);
        apply_event(w, e);
        w->seq = seq, w->last_origin = origin;
        return 1;
    }
    return 0;
}

static void take_decisions(sdr_win_t *w) {
    int from = sdr_real_rank(echo.app_rank, w->leader), tag = tag_decide(w);
    for (;;) {
        int flag = 0;
        long long d[2];
        int rc = PMPI_Iprobe(from, tag, sdr.world, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) sdr_learn_failures();
        if (rc != MPI_SUCCESS || !flag) return;
        if (PMPI_Recv(d, 2, MPI_LONG_LONG, from, tag, sdr.world, MPI_STATUS_IGNORE) != MPI_SUCCESS) return;
        if (d[0] <= w->seq)
            tell_applied(w, d[0]); /* a new leader's repeat of one this process applied */
        else if (d[0] == w->seq + w->nqueue + 1) {
            if (w->nqueue == w->cap_queue) {
                w->cap_queue = w->cap_queue ? 2 * w->cap_queue : 16;
                w->queue = realloc(w->queue, sizeof(int) * (size_t)w->cap_queue);
            }
            w->queue[w->nqueue++] = (int)d[1];
        }
    }
}

/* apply the decisions received, in order, as far as their events are here */
static void apply_decided(sdr_win_t *w, int tell) {
    while (w->nqueue) {
        event_t *e = first_of(w, w->queue[0]);
        if (!e) return;
        apply_event(w, e);
        w->seq++, w->last_origin = w->queue[0];
        memmove(w->queue, w->queue + 1, sizeof(int) * (size_t)--w->nqueue);
        if (tell) tell_applied(w, w->seq);
    }
}

static void serve_passive(sdr_win_t *w) {
    take_events(w);
    int lead = leader_now(), rc;
    if (lead != sdr.k) {
        w->leader = lead;
        take_decisions(w);
        apply_decided(w, 1);
    } else {
        if (w->leader != sdr.k) { /* the leader died: what it decided and this process holds comes first */
            apply_decided(w, 0);
            if (w->nqueue) return;
            w->leader = sdr.k;
            if (w->seq) tell_followers(w, w->seq, w->last_origin); /* a follower may not hold the last one */
        }
        while (decide(w)) continue;
    }
    pending_test(&w->panswers, &rc);
}

/* every turn of the layer's progress loop (echo_sdr_core.c), outside its own bookkeeping */
void sdr_win_progress(void) {
    static int busy;
    if (busy || !wins) return;
    busy = 1;
    for (sdr_win_t *w = wins; w; w = w->next) serve_passive(w);
    busy = 0;
}

/* ---- the origin's calls ---- */

static int passive_target(const sdr_win_t *w, int rank) {
    if (rank == MPI_PROC_NULL) return MPI_PROC_NULL;
    return rank < 0 || rank >= w->c->size ? -1 : rank;
}

int echo_sdr_MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win) {
    sdr_win_t *w = win_of(win);
    if (!w) return PMPI_Win_lock(lock_type, rank, assert, win);
    int t = passive_target(w, rank), rc = MPI_SUCCESS, spins = 0;
    if (t == MPI_PROC_NULL) return MPI_SUCCESS;
    if (t < 0) return MPI_ERR_RANK;
    if (lock_type != MPI_LOCK_SHARED && lock_type != MPI_LOCK_EXCLUSIVE) return MPI_ERR_LOCKTYPE;
    if (w->locked[t]) return MPI_ERR_RMA_SYNC;
    w->locked[t] = lock_type == MPI_LOCK_EXCLUSIVE ? HELD_EXCLUSIVE : HELD_SHARED;
    if (t != w->c->rank) return MPI_SUCCESS; /* announced with its first operation: a lock without any is no access */
    /* its own window: the program reads and writes its memory once the lock is granted, at one place of the
     * target's order in every replica */
    rc = announce(w, t);
    while (rc == MPI_SUCCESS && !w->holds[t]) sdr_spin(&spins);
    return rc;
}

int echo_sdr_MPI_Win_unlock(int rank, MPI_Win win) {
    sdr_win_t *w = win_of(win);
    if (!w) return PMPI_Win_unlock(rank, win);
    int t = passive_target(w, rank);
    if (t == MPI_PROC_NULL) return MPI_SUCCESS;
    if (t < 0) return MPI_ERR_RANK;
    if (!w->locked[t]) return MPI_ERR_RMA_SYNC;
    int rc = close_batch(w, t, EV_UNLOCK);
    w->locked[t] = 0;
    return rc;
}

int echo_sdr_MPI_Win_lock_all(int assert, MPI_Win win) {
    sdr_win_t *w = win_of(win);
    if (!w) return PMPI_Win_lock_all(assert, win);
    for (int t = 0; t < w->c->size; t++)
        if (w->locked[t]) return MPI_ERR_RMA_SYNC;
    for (int t = 0; t < w->c->size; t++) w->locked[t] = HELD_SHARED; /* each announced with its first operation */
    return MPI_SUCCESS;
}

int echo_sdr_MPI_Win_unlock_all(MPI_Win win) {
    sdr_win_t *w = win_of(win);
    if (!w) return PMPI_Win_unlock_all(win);
    int rc = MPI_SUCCESS;
    for (int t = 0; t < w->c->size; t++) {
        if (!w->locked[t]) return MPI_ERR_RMA_SYNC;
        if (rc == MPI_SUCCESS) rc = close_batch(w, t, EV_UNLOCK);
        w->locked[t] = 0;
    }
    return rc;
}

/* MPI_Win_flush_local(_all) are flushes: an operation is complete at the origin once its target applied it */
static int flush(MPI_Win win, int rank, int all) {
    sdr_win_t *w = win_of(win);
    int t = all ? 0 : passive_target(w, rank), rc = MPI_SUCCESS;
    if (t == MPI_PROC_NULL) return MPI_SUCCESS;
    if (t < 0) return MPI_ERR_RANK;
    for (int end = all ? w->c->size : t + 1; t < end && rc == MPI_SUCCESS; t++) {
        if (!w->locked[t] && !all) return MPI_ERR_RMA_SYNC;
        if (w->locked[t]) rc = close_batch(w, t, EV_FLUSH);
    }
    return rc;
}

int echo_sdr_MPI_Win_flush(int rank, MPI_Win win) {
    return win_of(win) ? flush(win, rank, 0) : PMPI_Win_flush(rank, win);
}
int echo_sdr_MPI_Win_flush_all(MPI_Win win) { return win_of(win) ? flush(win, 0, 1) : PMPI_Win_flush_all(win); }
int echo_sdr_MPI_Win_flush_local(int rank, MPI_Win win) {
    return win_of(win) ? flush(win, rank, 0) : PMPI_Win_flush_local(rank, win);
}
int echo_sdr_MPI_Win_flush_local_all(MPI_Win win) {
    return win_of(win) ? flush(win, 0, 1) : PMPI_Win_flush_local_all(win);
}

/* a memory barrier on the window: a turn of progress, which applies what the target was sent (a process polling
 * its window for a flag another rank Puts calls it in its loop) */
int echo_sdr_MPI_Win_sync(MPI_Win win) {
    if (!win_of(win)) return PMPI_Win_sync(win);
    sdr_progress();
    return MPI_SUCCESS;
}

/* ---- refused, naming the call and why (docs/sdr.md) ---- */

int echo_sdr_MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr) {
    return win_of(win) ? refuse("MPI_Win_shared_query", "(a window of one process's memory in each replica)")
                       : PMPI_Win_shared_query(win, rank, size, disp_unit, baseptr);
}

/* request-based operations belong in passive-target epochs */
#define REQUEST_BASED "(request-based: SDR completes passive-target operations at MPI_Win_flush and MPI_Win_unlock " \
                      "only)"
int echo_sdr_MPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                      MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win,
                      MPI_Request *request) {
    return win_of(win) ? refuse("MPI_Rput", REQUEST_BASED)
                       : PMPI_Rput(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                                   target_count, target_datatype, win, request);
}
int echo_sdr_MPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                      MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win,
                      MPI_Request *request) {
    return win_of(win) ? refuse("MPI_Rget", REQUEST_BASED)
                       : PMPI_Rget(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                                   target_count, target_datatype, win, request);
}
int echo_sdr_MPI_Raccumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                             int target_rank, MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype,
                             MPI_Op op, MPI_Win win, MPI_Request *request) {
    return win_of(win) ? refuse("MPI_Raccumulate", REQUEST_BASED)
                       : PMPI_Raccumulate(origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                                          target_count, target_datatype, op, win, request);
}
int echo_sdr_MPI_Rget_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                                 void *result_addr, int result_count, MPI_Datatype result_datatype, int target_rank,
                                 MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op,
                                 MPI_Win win, MPI_Request *request) {
    return win_of(win) ? refuse("MPI_Rget_accumulate", REQUEST_BASED)
                       : PMPI_Rget_accumulate(origin_addr, origin_count, origin_datatype, result_addr, result_count,
                                              result_datatype, target_rank, target_disp, target_count,
                                              target_datatype, op, win, request);
}

/* windows SDR does not make: the job stops naming the call */
int echo_sdr_MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                                     MPI_Win *win) {
    (void)size, (void)disp_unit, (void)info, (void)comm, (void)baseptr, (void)win;
    return refuse("MPI_Win_allocate_shared", "(its loads and stores into other processes' memory bypass MPI: "
                                             "nothing could replay them in each replica)");
}

int echo_sdr_MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win) {
    (void)info, (void)comm, (void)win;
    return refuse("MPI_Win_create_dynamic", "(the addresses a program attaches and sends its peers differ in each "
                                            "replica)");
}
