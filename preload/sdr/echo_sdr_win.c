/* SDR mode: one-sided communication, active target: fence epochs and general active target (PSCW).
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
 * applies them origin by origin, as each origin's MPI_Win_complete tells it how many it sent (below).
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
enum { TAG_OP = 1, TAG_REPLY = 2, TAG_DONE = 3 }; /* on a window's hidden communicator (TAG_DONE: PSCW's counts) */
enum { H_KIND, H_DISP, H_LB, H_COUNT, H_TYPE, H_OP, H_LEN };

typedef struct reply {
    void *buf;
    int count;
    MPI_Datatype dt;
    int target;
} reply_t;

/* requests on their way out and the buffers they send from, freed when they complete */
typedef struct pending {
    MPI_Request *reqs;
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
    int self_lock;       /* MPI_Win_lock of this process's own window (echo_sdr_MPI_Win_lock) */
    int *ndone;
    MPI_Request *done;
    struct sdr_win *next;
} sdr_win_t;

static sdr_win_t *wins;

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

static void push(pending_t *p, MPI_Request r, void *owned) {
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 16;
        p->reqs = realloc(p->reqs, sizeof(MPI_Request) * (size_t)p->cap);
        p->owned = realloc(p->owned, sizeof(void *) * (size_t)p->cap);
    }
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
    if (w->sends.n || w->answers.n || w->nreplies || w->access || w->exposure || w->self_lock)
        return MPI_ERR_RMA_SYNC; /* an epoch still open: MPI requires it closed before the free */
    int rc = PMPI_Win_free(win); /* the application's attribute delete callbacks run in it */
    while (*at != w) at = &(*at)->next;
    *at = w->next;
    MPI_Comm hidden = w->c->app;
    echo_sdr_MPI_Comm_free(&hidden);
    free(w->nops), free(w->sends.reqs), free(w->sends.owned), free(w->answers.reqs), free(w->answers.owned);
    free(w->replies), free(w->targets), free(w->origins), free(w->ndone), free(w->done), free(w);
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
    /* a small send is copied by the layer at once: the header on the stack is safe */
    int rc = echo_sdr_MPI_Send(header, H_LEN, MPI_LONG_LONG, target, TAG_OP, c->app);
    if (rc == MPI_SUCCESS && kind != OP_GET && !(kind == OP_GET_ACC && op == MPI_NO_OP)) {
        MPI_Request r;
        rc = echo_sdr_MPI_Isend(obuf, ocount, otype, target, TAG_OP, c->app, &r);
        if (rc == MPI_SUCCESS) push(&w->sends, r, NULL);
        if (rc == MPI_SUCCESS && kind == OP_CAS) {
            rc = echo_sdr_MPI_Isend(cbuf, ocount, otype, target, TAG_OP, c->app, &r);
            if (rc == MPI_SUCCESS) push(&w->sends, r, NULL);
        }
    }
    if (rc != MPI_SUCCESS) return rc;
    w->nops[target]++;
    if (kind == OP_GET || kind == OP_GET_ACC || kind == OP_CAS) {
        if (w->nreplies == w->cap_replies) {
            w->cap_replies = w->cap_replies ? 2 * w->cap_replies : 16;
            w->replies = realloc(w->replies, sizeof(reply_t) * (size_t)w->cap_replies);
        }
        w->replies[w->nreplies++] = (reply_t){rbuf, rcount, rtype, target};
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
static int answer(sdr_win_t *w, int origin, char *at, MPI_Aint bytes, int count, MPI_Datatype dt, int copy) {
    void *owned = NULL;
    if (copy) {
        owned = malloc((size_t)bytes + 1);
        memcpy(owned, at, (size_t)bytes);
    }
    MPI_Request r;
    int rc = echo_sdr_MPI_Isend(owned ? owned : at, count, dt, origin, TAG_REPLY, w->c->app, &r);
    if (rc == MPI_SUCCESS)
        push(&w->answers, r, owned);
    else
        free(owned);
    return rc;
}

/* receive one operation of `origin` and apply it */
static int apply_one(sdr_win_t *w, int origin) {
    MPI_Comm comm = w->c->app;
    long long h[H_LEN];
    int rc = echo_sdr_MPI_Recv(h, H_LEN, MPI_LONG_LONG, origin, TAG_OP, comm, MPI_STATUS_IGNORE);
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
        rc = echo_sdr_MPI_Recv(at, count, dt, origin, TAG_OP, comm, MPI_STATUS_IGNORE);
    else if (kind != OP_GET && !(kind == OP_GET_ACC && op == MPI_NO_OP)) {
        in = malloc((size_t)bytes + 1);
        rc = echo_sdr_MPI_Recv(in, count, dt, origin, TAG_OP, comm, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS && kind == OP_CAS) {
            cmp = malloc((size_t)bytes + 1);
            rc = echo_sdr_MPI_Recv(cmp, count, dt, origin, TAG_OP, comm, MPI_STATUS_IGNORE);
        }
    }
    if (rc == MPI_SUCCESS && (kind == OP_GET || kind == OP_GET_ACC || kind == OP_CAS)) {
        void *zero = NULL;
        if (!inside) at = zero = calloc(1, (size_t)bytes + 1); /* the origin still waits for an answer */
        rc = answer(w, origin, at, bytes, count, dt, kind != OP_GET || zero);
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
        for (int i = 0; i < incoming[o] && rc == MPI_SUCCESS; i++) rc = apply_one(w, o);
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
        for (int i = 0; i < w->ndone[w->served] && rc == MPI_SUCCESS; i++) rc = apply_one(w, w->origins[w->served]);
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

/* ---- refused, naming the call and why (docs/sdr.md) ---- */

#define PASSIVE "(passive target: SDR replicates active-target epochs, MPI_Win_fence and MPI_Win_post/start, and a " \
                "process's lock of its own window only)"

/* A lock of the process's own window is a local epoch (codes take one to read or write their window memory under
 * MPI's separate memory model): nobody else's operations reach the window in it (SDR applies them only in
 * active-target synchronizations), and the operations this process makes on itself in it are applied at
 * MPI_Win_unlock, in the order made, as an epoch of one origin. */
int echo_sdr_MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win) {
    sdr_win_t *w = win_of(win);
    if (!w) return PMPI_Win_lock(lock_type, rank, assert, win);
    if (rank != w->c->rank) return refuse("MPI_Win_lock", PASSIVE);
    if (w->self_lock) return MPI_ERR_RMA_SYNC;
    w->self_lock = 1;
    return MPI_SUCCESS;
}

int echo_sdr_MPI_Win_unlock(int rank, MPI_Win win) {
    sdr_win_t *w = win_of(win);
    if (!w) return PMPI_Win_unlock(rank, win);
    if (rank != w->c->rank) return refuse("MPI_Win_unlock", PASSIVE);
    if (!w->self_lock) return MPI_ERR_RMA_SYNC;
    int me = w->c->rank, rc = MPI_SUCCESS, kept = 0;
    for (int i = 0; i < w->nops[me] && rc == MPI_SUCCESS; i++) rc = apply_one(w, me);
    w->nops[me] = 0;
    for (int i = 0; i < w->nreplies; i++) { /* its answers, in the order asked; others' stay for their epoch */
        reply_t *g = &w->replies[i];
        if (g->target != me)
            w->replies[kept++] = *g;
        else if (rc == MPI_SUCCESS)
            rc = echo_sdr_MPI_Recv(g->buf, g->count, g->dt, me, TAG_REPLY, w->c->app, MPI_STATUS_IGNORE);
    }
    w->nreplies = kept;
    /* the messages to itself are received: they complete now, unless an epoch with others is still open */
    int open = w->access || w->exposure;
    for (int t = 0; t < w->c->size; t++) open |= w->nops[t] != 0;
    if (rc == MPI_SUCCESS && !open) rc = pending_wait(&w->sends);
    if (rc == MPI_SUCCESS && !open) rc = pending_wait(&w->answers);
    w->self_lock = 0;
    return rc;
}

int echo_sdr_MPI_Win_lock_all(int assert, MPI_Win win) {
    return win_of(win) ? refuse("MPI_Win_lock_all", PASSIVE) : PMPI_Win_lock_all(assert, win);
}
int echo_sdr_MPI_Win_unlock_all(MPI_Win win) {
    return win_of(win) ? refuse("MPI_Win_unlock_all", PASSIVE) : PMPI_Win_unlock_all(win);
}
int echo_sdr_MPI_Win_flush(int rank, MPI_Win win) {
    return win_of(win) ? refuse("MPI_Win_flush", PASSIVE) : PMPI_Win_flush(rank, win);
}
int echo_sdr_MPI_Win_flush_all(MPI_Win win) {
    return win_of(win) ? refuse("MPI_Win_flush_all", PASSIVE) : PMPI_Win_flush_all(win);
}
int echo_sdr_MPI_Win_flush_local(int rank, MPI_Win win) {
    return win_of(win) ? refuse("MPI_Win_flush_local", PASSIVE) : PMPI_Win_flush_local(rank, win);
}
int echo_sdr_MPI_Win_flush_local_all(MPI_Win win) {
    return win_of(win) ? refuse("MPI_Win_flush_local_all", PASSIVE) : PMPI_Win_flush_local_all(win);
}
int echo_sdr_MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr) {
    return win_of(win) ? refuse("MPI_Win_shared_query", "(a window of one process's memory in each replica)")
                       : PMPI_Win_shared_query(win, rank, size, disp_unit, baseptr);
}

/* request-based operations belong in passive-target epochs */
#define REQUEST_BASED "(request-based: passive target, which SDR does not replicate)"
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
