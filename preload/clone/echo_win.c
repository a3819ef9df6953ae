/* One-sided communication (RMA) under cloning; the design is in docs/rma.md.
 *
 * Representatives create the real window over the real communicator and make
 * every RMA call for real.  A copy creates a stand-in window of the same flavor
 * over MPI_COMM_SELF on its own memory, so purely local calls (attributes such
 * as WIN_BASE/SIZE/DISP_UNIT/CREATE_FLAVOR, names, errhandlers, c2f) answer
 * natively, and it never puts, gets or accumulates.
 *
 * What copies need from their representative comes at synchronization calls,
 * in program order:
 *   origin side   the buffers that Get, Get_accumulate, Fetch_and_op and
 *                 Compare_and_swap filled are pending on the window until the
 *                 call that completes them (fence, complete, unlock, flush...);
 *                 that call forwards them, in one message.  Request-based gets
 *                 deliver when their request completes (echo requests).
 *   target side   after every call that can complete updates to this process's
 *                 window (and after MPI_Barrier), the representative forwards
 *                 its window memory and copies overwrite theirs, so they hold
 *                 exactly what it holds, whatever order updates arrived in.
 *
 * Only changed pages travel.  Every process of the rank keeps a snapshot of
 * the window as of the last forward (identical on all of them: the first
 * forward, at creation or attach, sends everything).  The representative sends
 * the pages where its memory differs from the snapshot; a copy receives those
 * and sets every other page back to the snapshot, since the representative's
 * page still equals it (a local store on the copy may have changed such a
 * page, and a remote update on the representative may have restored it).
 * Pages are sent from the representative's snapshot, not from the live memory
 * other processes may be writing, so copies get exactly what it kept.
 *
 * Only written pages are compared where the kernel tracks writes (echo_dirty.c):
 * the program's stores, this process's MPI library and the kernel's writes on
 * another process's behalf (CMA) are in this process's page table; other
 * representatives' stores into a node window in shared memory are in theirs, and
 * each sets them on a board before its synchronization calls; a network card's
 * writes are seen by nothing, so windows across hosts are compared whole
 * (echo_win_plan_tracking says which, docs/rma.md the whole table). */
#include "echo_clone.h"
#include "echo_dirty.h"
#include "echo_records.h"
#include "echo_win_state.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

echo_win_t **echo_wins;
int echo_nwins;

/* NULL: a window over MPI_COMM_SELF (or one derived from it), each process's own */
static echo_win_t *find(MPI_Win win) {
    for (int i = echo_nwins - 1; i >= 0; i--)
        if (echo_wins[i]->app == win) return echo_wins[i];
    return NULL;
}

/* ---- origin side: results of gets ---- */

static void add_pending(echo_win_t *w, void *buf, int count, MPI_Datatype dt, int target) {
    if (!echo_has_copies() || count <= 0 || target == MPI_PROC_NULL) return;
    int combiner;
    echo_type_combiner(dt, &combiner);
    MPI_Datatype keep = dt;
    if (combiner != MPI_COMBINER_NAMED) PMPI_Type_dup(dt, &keep);
    w->pending = realloc(w->pending, sizeof *w->pending * (size_t)(w->npending + 1));
    w->pending[w->npending++] = (pending_t){buf, count, keep, target};
}

static void drop_pending(pending_t *p) {
    int combiner;
    echo_type_combiner(p->dt, &combiner);
    if (combiner != MPI_COMBINER_NAMED) PMPI_Type_free(&p->dt);
}

/* Forward, in one message, the result buffers that operations on `target`
 * (or on every target) filled; the message carries rc even if there are none. */
static int forward_results(echo_win_t *w, int target, int rc) {
    int n = 0;
    for (int i = 0; i < w->npending; i++) n += target == ALL_TARGETS || w->pending[i].target == target;
    if (n == 0) return echo_forward(NULL, 0, MPI_BYTE, rc);
    int *lens = malloc(sizeof(int) * (size_t)n);
    MPI_Aint *addrs = malloc(sizeof(MPI_Aint) * (size_t)n);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)n);
    int j = 0, kept = 0;
    for (int i = 0; i < w->npending; i++) {
        pending_t *p = &w->pending[i];
        if (target != ALL_TARGETS && p->target != target) {
            w->pending[kept++] = *p;
            continue;
        }
        lens[j] = p->count;
        PMPI_Get_address(p->buf, &addrs[j]);
        types[j++] = p->dt;
    }
    MPI_Datatype t;
    PMPI_Type_create_struct(n, lens, addrs, types, &t);
    PMPI_Type_commit(&t);
    rc = echo_forward(MPI_BOTTOM, 1, t, rc);
    PMPI_Type_free(&t);
    for (int i = 0; i < w->npending; i++) { /* the forwarded ones: the others moved to the front */
        pending_t *p = &w->pending[i];
        if (i >= kept && (target == ALL_TARGETS || p->target == target)) drop_pending(p);
    }
    w->npending = kept;
    free(lens);
    free(addrs);
    free(types);
    return rc;
}

/* the end of a synchronization call: results completed for `target`, then
 * this process's window memory if the call can complete updates to it */
static int settle(echo_win_t *w, int target, int memory, int rc) {
    rc = forward_results(w, target, rc);
    return memory ? echo_win_forward_memory(w, 0, 0, rc) : rc;
}

/* ---- creation and destruction ---- */


/* Did MPI_Win_free complete updates to this process's memory that no synchronization call of its own made
 * visible?  Only passive-target epochs another rank opened on it can (fence and post/wait epochs end in calls
 * of the target, which forwarded them).  The representatives tell each other; the answer goes to the copies. */
static int updated_by_others(echo_win_t *w, int rc) {
    int others = 0;
    if (w->peers != MPI_COMM_NULL) {
        int *mine = malloc(sizeof(int) * (size_t)w->group.size);
        for (int q = 0; q < w->group.size; q++) mine[q] = w->locked[q];
        PMPI_Reduce_scatter_block(mine, &others, 1, MPI_INT, MPI_MAX, w->peers);
        free(mine);
        PMPI_Comm_free(&w->peers);
    }
    echo_forward(&others, 1, MPI_INT, rc);
    return others;
}

/* A new window on both sides: the representative's result first; NULL (and
 * MPI_WIN_NULL) if the creation failed. */
static echo_win_t *new_win(MPI_Win *win, echo_comm_t *c, MPI_Comm comm, int flavor, int *rc) {
    *rc = echo_forward(NULL, 0, MPI_BYTE, *rc);
    if (*rc != MPI_SUCCESS) {
        if (!echo_is_rep() && *win != MPI_WIN_NULL) PMPI_Win_free(win);
        *win = MPI_WIN_NULL;
        return NULL;
    }
    echo_win_t *w = calloc(1, sizeof *w);
    w->app = *win;
    w->flavor = flavor;
    w->peers = MPI_COMM_NULL;
    /* every representative, with copies or not: the dup and the exchange at MPI_Win_free are collective, and a
     * rank without copies may lock the memory of one with copies */
    if (echo_is_rep() && app_memory(flavor)) {
        w->locked = calloc((size_t)c->size, 1);
        PMPI_Comm_dup(c->real, &w->peers);
    }
    w->comm_id = echo_comm_id(comm);
    w->group.rank = c->rank;
    w->group.size = c->size;
    if (c->members) {
        w->group.members = malloc(sizeof(int) * (size_t)c->size);
        memcpy(w->group.members, c->members, sizeof(int) * (size_t)c->size);
    }
    echo_wins = realloc(echo_wins, sizeof *echo_wins * (size_t)(echo_nwins + 1));
    echo_wins[echo_nwins++] = w;
    return w;
}

/* A window on one region of memory; copies start from exactly the
 * representative's contents. */
static int register_win(MPI_Win *win, echo_comm_t *c, MPI_Comm comm, int flavor, void *base, MPI_Aint size,
                        int rc) {
    echo_win_t *w = new_win(win, c, comm, flavor, &rc);
    if (!w) return rc;
    if (flavor != MPI_WIN_FLAVOR_DYNAMIC) echo_win_add_region(w, base, size);
    echo_win_plan_tracking(w, c);
    return echo_win_forward_memory(w, 0, 1, rc);
}

/* A copy's stand-in of a window on its own memory (MPI_Win_create's, or a dynamic one: base NULL), over
 * MPI_COMM_SELF.  Open MPI 4.1 as Debian configures it (osc = ^ucx,pt2pt) has only osc/rdma for such windows,
 * and rdma refuses a communicator of one process (MPI_ERR_WIN: natively too, a program run with `mpirun -n 1`);
 * osc/sm makes an MPI_Win_allocate over it.  The stand-in is then an allocated window of the same size and
 * disp_unit: a copy issues no operation on it (its representative does), and echo answers its base and flavor
 * as the application's.  The first try fails quietly (MPI_ERRORS_RETURN on MPI_COMM_SELF for it). */
static int standin_window(void *base, MPI_Aint size, int disp_unit, MPI_Info info, int dynamic, MPI_Win *win,
                          int *allocated) {
    MPI_Errhandler theirs;
    PMPI_Comm_get_errhandler(MPI_COMM_SELF, &theirs);
    PMPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rc = dynamic ? PMPI_Win_create_dynamic(info, MPI_COMM_SELF, win)
                     : PMPI_Win_create(base, size, disp_unit, info, MPI_COMM_SELF, win);
    PMPI_Comm_set_errhandler(MPI_COMM_SELF, theirs);
    PMPI_Errhandler_free(&theirs);
    *allocated = 0;
    if (rc == MPI_SUCCESS) return rc;
    void *memory;
    rc = PMPI_Win_allocate(size, disp_unit, info, MPI_COMM_SELF, &memory, win);
    *allocated = rc == MPI_SUCCESS;
    return rc;
}

static int register_standin(MPI_Win *win, echo_comm_t *c, MPI_Comm comm, int flavor, void *base, MPI_Aint size,
                            int rc, int allocated) {
    rc = register_win(win, c, comm, flavor, base, size, rc);
    echo_win_t *w = rc == MPI_SUCCESS && allocated ? find(*win) : NULL;
    if (w) {
        w->allocated_standin = 1;
        w->app_base = base;
    }
    return rc;
}

int echo_MPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, MPI_Win *win) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Win_create");
    int allocated = 0;
    int rc = echo_is_rep() ? PMPI_Win_create(base, size, disp_unit, info, c->real, win)
                           : standin_window(base, size, disp_unit, info, 0, win, &allocated);
    return register_standin(win, c, comm, MPI_WIN_FLAVOR_CREATE, base, size, rc, allocated);
}

int echo_MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr, MPI_Win *win) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Win_allocate");
    int rc = echo_is_rep() ? PMPI_Win_allocate(size, disp_unit, info, c->real, baseptr, win)
                           : PMPI_Win_allocate(size, disp_unit, info, MPI_COMM_SELF, baseptr, win);
    return register_win(win, c, comm, MPI_WIN_FLAVOR_ALLOCATE, *(void **)baseptr, size, rc);
}

/* A copy cannot share memory with other ranks' representatives.  Its stand-in
 * is a shared window over MPI_COMM_SELF that spans every rank's segment, laid
 * out as the representative's: its own segment is where the copy stores, the
 * others are where it loads what the representative's segments held at the
 * last forward.  Every segment is window memory forwarded at synchronization. */
int echo_MPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                                 MPI_Win *win) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Win_allocate_shared");
    int n = c->size, rc = MPI_SUCCESS;
    struct segment *segs = calloc((size_t)n, sizeof *segs);
    MPI_Aint span = 0;
    char *lowest = NULL;
    if (!echo_is_rep()) *win = MPI_WIN_NULL;
    if (echo_is_rep()) {
        rc = PMPI_Win_allocate_shared(size, disp_unit, info, c->real, baseptr, win);
        char **bases = calloc((size_t)n, sizeof *bases);
        for (int q = 0; q < n && rc == MPI_SUCCESS; q++) {
            PMPI_Win_shared_query(*win, q, &segs[q].size, &segs[q].disp_unit, &bases[q]);
            segs[q].null_base = bases[q] == NULL; /* an empty segment, with alloc_shared_noncontig say */
            if (segs[q].size > 0 && (!lowest || bases[q] < lowest)) lowest = bases[q];
        }
        for (int q = 0; q < n; q++) segs[q].offset = segs[q].size > 0 ? bases[q] - lowest : 0;
        free(bases);
    }
    rc = echo_forward_bytes(segs, sizeof *segs * (size_t)n, rc);
    for (int q = 0; q < n; q++)
        if (segs[q].offset + segs[q].size > span) span = segs[q].offset + segs[q].size;
    if (!echo_is_rep() && rc == MPI_SUCCESS) {
        PMPI_Win_allocate_shared(span, segs[c->rank].disp_unit, info, MPI_COMM_SELF, &lowest, win);
        *(void **)baseptr = lowest + segs[c->rank].offset;
    }
    echo_win_t *w = new_win(win, c, comm, MPI_WIN_FLAVOR_SHARED, &rc);
    if (!w) {
        free(segs);
        return rc;
    }
    w->segments = segs;
    w->nsegments = n;
    w->lowest = lowest;
    w->my_size = size;
    for (int q = 0; q < n; q++)
        if (segs[q].size > 0) {
            echo_win_add_region(w, lowest + segs[q].offset, segs[q].size);
            w->regions[w->nregions - 1].seg = q;
        }
    echo_win_plan_tracking(w, c);
    return echo_win_forward_memory(w, 0, 1, rc);
}

int echo_MPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Win_create_dynamic");
    int allocated = 0;
    int rc = echo_is_rep() ? PMPI_Win_create_dynamic(info, c->real, win)
                           : standin_window(NULL, 0, 1, info, 1, win, &allocated);
    return register_standin(win, c, comm, MPI_WIN_FLAVOR_DYNAMIC, MPI_BOTTOM, 0, rc, allocated);
}

int echo_MPI_Win_attach(MPI_Win win, void *base, MPI_Aint size) {
    echo_win_t *w = find(win);
    if (!w) return PMPI_Win_attach(win, base, size);
    /* the stand-in attaches too, so it describes the same memory (an allocated one cannot: standin_window) */
    int rc = echo_forward(NULL, 0, MPI_BYTE, w->allocated_standin ? MPI_SUCCESS : PMPI_Win_attach(win, base, size));
    if (rc != MPI_SUCCESS) return rc;
    echo_win_add_region(w, base, size);
    region_t *r = &w->regions[w->nregions - 1];
    /* a copy's memory is its own; a representative's in shared memory may be stored into by other processes */
    if (w->tracking && (!echo_is_rep() || echo_dirty_shared_mapping(base, (size_t)size) == 0)) echo_win_track_region(r);
    return echo_win_forward_memory(w, w->nregions - 1, 1, rc);
}

int echo_MPI_Win_detach(MPI_Win win, const void *base) {
    echo_win_t *w = find(win);
    if (!w) return PMPI_Win_detach(win, base);
    int rc = echo_forward(NULL, 0, MPI_BYTE, w->allocated_standin ? MPI_SUCCESS : PMPI_Win_detach(win, base));
    for (int i = 0; i < w->nregions && rc == MPI_SUCCESS; i++) {
        if (w->regions[i].base != base) continue;
        echo_win_untrack_region(&w->regions[i]);
        free(w->regions[i].snap);
        memmove(w->regions + i, w->regions + i + 1, sizeof *w->regions * (size_t)(w->nregions - i - 1));
        w->nregions--;
        break;
    }
    return rc;
}

int echo_MPI_Win_free(MPI_Win *win) {
    echo_win_t *w = find(*win);
    if (!w) return PMPI_Win_free(win);
    int others = app_memory(w->flavor) && updated_by_others(w, MPI_SUCCESS);
    if (!app_memory(w->flavor)) { /* MPI's memory goes with the window */
        for (int i = 0; i < w->nregions; i++) echo_win_untrack_region(&w->regions[i]);
        echo_win_forget_memory_of(w);
    }
    echo_win_drop_spans(w);
    int rc = PMPI_Win_free(win); /* the real window, or the stand-in */
    /* Memory the application owns outlives the window: updates other ranks' passive-target epochs completed
     * must reach copies (a target may read them once MPI_Win_free returned: MPICH's rma/test4).  Otherwise echo
     * leaves that memory alone after the application's last synchronization call: a program may free it before
     * MPI_Win_free (MPICH's MTestFreeWin).  MPI's own memory is gone. */
    if (others) rc = echo_win_forward_memory(w, 0, 0, rc);
    else rc = echo_forward(NULL, 0, MPI_BYTE, rc);
    echo_metric("rma operations issued", w->ops, "count");
    echo_metric("rma memory forwards", w->syncs, "count");
    echo_metric("rma window bytes at forwards", w->exposed, "B");
    echo_metric("rma window bytes sent", w->sent, "B");
    echo_metric("rma window bytes compared", w->compared, "B");
    if (w->board_win != MPI_WIN_NULL) PMPI_Win_free(&w->board_win);
    free(w->board);
    free(w->word);
    for (int i = 0; i < w->npending; i++) drop_pending(&w->pending[i]);
    for (int i = 0; i < w->nregions; i++) {
        echo_win_untrack_region(&w->regions[i]);
        free(w->regions[i].snap);
    }
    free(w->regions);
    free(w->locked);
    free(w->pending);
    free(w->group.members);
    free(w->segments);
    for (int i = 0; i < echo_nwins; i++)
        if (echo_wins[i] == w) {
            memmove(echo_wins + i, echo_wins + i + 1, sizeof *echo_wins * (size_t)(echo_nwins - i - 1));
            echo_nwins--;
            break;
        }
    free(w);
    return rc;
}

/* ---- communication: only representatives issue it ---- */

#define WIN_OR_PASS(fn, ...)                    \
    echo_win_t *w = find(win);                  \
    if (!w) return P##fn(__VA_ARGS__)
/* the data an operation carries out of this copy, checked for corruption first */
#define OUTGOING(fn, buf, count, dt, target) echo_outgoing(#fn, 0, buf, count, dt, w->comm_id, echo_peer(target))
#define ISSUE(fn, ...) (echo_is_rep() ? (w->ops++, P##fn(__VA_ARGS__)) : MPI_SUCCESS)

int echo_MPI_Put(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                 MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win) {
    WIN_OR_PASS(MPI_Put, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                target_datatype, win);
    OUTGOING(MPI_Put, origin_addr, origin_count, origin_datatype, target_rank);
    return ISSUE(MPI_Put, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                 target_datatype, win);
}

int echo_MPI_Get(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                 MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win) {
    WIN_OR_PASS(MPI_Get, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                target_datatype, win);
    add_pending(w, origin_addr, origin_count, origin_datatype, target_rank);
    return ISSUE(MPI_Get, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                 target_datatype, win);
}

int echo_MPI_Accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                        MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op,
                        MPI_Win win) {
    WIN_OR_PASS(MPI_Accumulate, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                target_datatype, op, win);
    OUTGOING(MPI_Accumulate, origin_addr, origin_count, origin_datatype, target_rank);
    return ISSUE(MPI_Accumulate, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                 target_datatype, op, win);
}

int echo_MPI_Get_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                            void *result_addr, int result_count, MPI_Datatype result_datatype, int target_rank,
                            MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op,
                            MPI_Win win) {
    WIN_OR_PASS(MPI_Get_accumulate, origin_addr, origin_count, origin_datatype, result_addr, result_count,
                result_datatype, target_rank, target_disp, target_count, target_datatype, op, win);
    OUTGOING(MPI_Get_accumulate, origin_addr, origin_count, origin_datatype, target_rank);
    add_pending(w, result_addr, result_count, result_datatype, target_rank);
    return ISSUE(MPI_Get_accumulate, origin_addr, origin_count, origin_datatype, result_addr, result_count,
                 result_datatype, target_rank, target_disp, target_count, target_datatype, op, win);
}

int echo_MPI_Fetch_and_op(const void *origin_addr, void *result_addr, MPI_Datatype datatype, int target_rank,
                          MPI_Aint target_disp, MPI_Op op, MPI_Win win) {
    WIN_OR_PASS(MPI_Fetch_and_op, origin_addr, result_addr, datatype, target_rank, target_disp, op, win);
    OUTGOING(MPI_Fetch_and_op, origin_addr, 1, datatype, target_rank);
    add_pending(w, result_addr, 1, datatype, target_rank);
    return ISSUE(MPI_Fetch_and_op, origin_addr, result_addr, datatype, target_rank, target_disp, op, win);
}

int echo_MPI_Compare_and_swap(const void *origin_addr, const void *compare_addr, void *result_addr,
                              MPI_Datatype datatype, int target_rank, MPI_Aint target_disp, MPI_Win win) {
    WIN_OR_PASS(MPI_Compare_and_swap, origin_addr, compare_addr, result_addr, datatype, target_rank, target_disp,
                win);
    OUTGOING(MPI_Compare_and_swap, origin_addr, 1, datatype, target_rank);
    add_pending(w, result_addr, 1, datatype, target_rank);
    return ISSUE(MPI_Compare_and_swap, origin_addr, compare_addr, result_addr, datatype, target_rank, target_disp,
                 win);
}

/* Request-based operations: echo requests; a get's data reaches copies when
 * its request completes (Wait/Test), as for a receive. */
int echo_MPI_Rput(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                  MPI_Aint target_disp, int target_cout, MPI_Datatype target_datatype, MPI_Win win,
                  MPI_Request *request) {
    WIN_OR_PASS(MPI_Rput, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_cout,
                target_datatype, win, request);
    OUTGOING(MPI_Rput, origin_addr, origin_count, origin_datatype, target_rank);
    MPI_Request real = MPI_REQUEST_NULL;
    int rc = ISSUE(MPI_Rput, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_cout,
                   target_datatype, win, &real);
    *request = echo_request_new(real, 0, 0, NULL, 0, MPI_BYTE);
    return rc;
}

int echo_MPI_Rget(void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                  MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Win win,
                  MPI_Request *request) {
    WIN_OR_PASS(MPI_Rget, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                target_datatype, win, request);
    MPI_Request real = MPI_REQUEST_NULL;
    int rc = ISSUE(MPI_Rget, origin_addr, origin_count, origin_datatype, target_rank, target_disp, target_count,
                   target_datatype, win, &real);
    *request = echo_request_new(real, 0, 0, origin_addr, origin_count, origin_datatype);
    return rc;
}

int echo_MPI_Raccumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype, int target_rank,
                         MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op,
                         MPI_Win win, MPI_Request *request) {
    WIN_OR_PASS(MPI_Raccumulate, origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                target_count, target_datatype, op, win, request);
    OUTGOING(MPI_Raccumulate, origin_addr, origin_count, origin_datatype, target_rank);
    MPI_Request real = MPI_REQUEST_NULL;
    int rc = ISSUE(MPI_Raccumulate, origin_addr, origin_count, origin_datatype, target_rank, target_disp,
                   target_count, target_datatype, op, win, &real);
    *request = echo_request_new(real, 0, 0, NULL, 0, MPI_BYTE);
    return rc;
}

int echo_MPI_Rget_accumulate(const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                             void *result_addr, int result_count, MPI_Datatype result_datatype, int target_rank,
                             MPI_Aint target_disp, int target_count, MPI_Datatype target_datatype, MPI_Op op,
                             MPI_Win win, MPI_Request *request) {
    WIN_OR_PASS(MPI_Rget_accumulate, origin_addr, origin_count, origin_datatype, result_addr, result_count,
                result_datatype, target_rank, target_disp, target_count, target_datatype, op, win, request);
    OUTGOING(MPI_Rget_accumulate, origin_addr, origin_count, origin_datatype, target_rank);
    MPI_Request real = MPI_REQUEST_NULL;
    int rc = ISSUE(MPI_Rget_accumulate, origin_addr, origin_count, origin_datatype, result_addr, result_count,
                   result_datatype, target_rank, target_disp, target_count, target_datatype, op, win, &real);
    *request = echo_request_new(real, 0, 0, result_addr, result_count, result_datatype);
    return rc;
}

/* ---- synchronization ---- */

/* what this representative wrote is on the board before the call can let another rank see it */
#define SYNC_OR_PASS(fn, ...)         \
    WIN_OR_PASS(fn, __VA_ARGS__);     \
    if (w->board_win != MPI_WIN_NULL) echo_win_collect(w, 1)


int echo_MPI_Win_fence(int mpi_assert, MPI_Win win) {
    SYNC_OR_PASS(MPI_Win_fence, mpi_assert, win);
    return settle(w, ALL_TARGETS, 1, ECHO_REP(PMPI_Win_fence(mpi_assert, win)));
}

/* PSCW: post and start complete nothing; complete ends the access epoch
 * (results), wait and a successful test the exposure epoch (memory) */
int echo_MPI_Win_post(MPI_Group group, int mpi_assert, MPI_Win win) {
    SYNC_OR_PASS(MPI_Win_post, group, mpi_assert, win);
    return echo_forward(NULL, 0, MPI_BYTE, ECHO_REP(PMPI_Win_post(group, mpi_assert, win)));
}

int echo_MPI_Win_start(MPI_Group group, int mpi_assert, MPI_Win win) {
    SYNC_OR_PASS(MPI_Win_start, group, mpi_assert, win);
    return echo_forward(NULL, 0, MPI_BYTE, ECHO_REP(PMPI_Win_start(group, mpi_assert, win)));
}

int echo_MPI_Win_complete(MPI_Win win) {
    SYNC_OR_PASS(MPI_Win_complete, win);
    return settle(w, ALL_TARGETS, 0, ECHO_REP(PMPI_Win_complete(win)));
}

int echo_MPI_Win_wait(MPI_Win win) {
    SYNC_OR_PASS(MPI_Win_wait, win);
    return settle(w, ALL_TARGETS, 1, ECHO_REP(PMPI_Win_wait(win)));
}

int echo_MPI_Win_test(MPI_Win win, int *flag) {
    SYNC_OR_PASS(MPI_Win_test, win, flag);
    int rc = echo_forward(flag, 1, MPI_INT, ECHO_REP(PMPI_Win_test(win, flag)));
    return *flag ? settle(w, ALL_TARGETS, 1, rc) : rc;
}

/* Passive target: a lock of this process's own window makes the updates of
 * earlier epochs visible; unlock and flush complete results for their target,
 * and updates to this process's window when it is that target. */
int echo_MPI_Win_lock(int lock_type, int rank, int mpi_assert, MPI_Win win) {
    SYNC_OR_PASS(MPI_Win_lock, lock_type, rank, mpi_assert, win);
    int rc = ECHO_REP(PMPI_Win_lock(lock_type, rank, mpi_assert, win));
    if (w->locked && rank >= 0 && rank < w->group.size && rank != w->group.rank) w->locked[rank] = 1;
    return rank == w->group.rank ? echo_win_forward_memory(w, 0, 0, rc) : echo_forward(NULL, 0, MPI_BYTE, rc);
}

int echo_MPI_Win_unlock(int rank, MPI_Win win) {
    SYNC_OR_PASS(MPI_Win_unlock, rank, win);
    return settle(w, rank, rank == w->group.rank, ECHO_REP(PMPI_Win_unlock(rank, win)));
}

int echo_MPI_Win_lock_all(int mpi_assert, MPI_Win win) {
    SYNC_OR_PASS(MPI_Win_lock_all, mpi_assert, win);
    for (int q = 0; w->locked && q < w->group.size; q++) w->locked[q] |= q != w->group.rank;
    return echo_win_forward_memory(w, 0, 0, ECHO_REP(PMPI_Win_lock_all(mpi_assert, win)));
}

int echo_MPI_Win_unlock_all(MPI_Win win) {
    SYNC_OR_PASS(MPI_Win_unlock_all, win);
    return settle(w, ALL_TARGETS, 1, ECHO_REP(PMPI_Win_unlock_all(win)));
}

int echo_MPI_Win_flush(int rank, MPI_Win win) {
    SYNC_OR_PASS(MPI_Win_flush, rank, win);
    return settle(w, rank, rank == w->group.rank, ECHO_REP(PMPI_Win_flush(rank, win)));
}

int echo_MPI_Win_flush_all(MPI_Win win) {
    SYNC_OR_PASS(MPI_Win_flush_all, win);
    return settle(w, ALL_TARGETS, 1, ECHO_REP(PMPI_Win_flush_all(win)));
}

/* local completion is enough for a get's buffer to hold its data */
int echo_MPI_Win_flush_local(int rank, MPI_Win win) {
    SYNC_OR_PASS(MPI_Win_flush_local, rank, win);
    return settle(w, rank, rank == w->group.rank, ECHO_REP(PMPI_Win_flush_local(rank, win)));
}

int echo_MPI_Win_flush_local_all(MPI_Win win) {
    SYNC_OR_PASS(MPI_Win_flush_local_all, win);
    return settle(w, ALL_TARGETS, 1, ECHO_REP(PMPI_Win_flush_local_all(win)));
}

/* the unified model's way for a target to see updates: copies see them too */
int echo_MPI_Win_sync(MPI_Win win) {
    SYNC_OR_PASS(MPI_Win_sync, win);
    return echo_win_forward_memory(w, 0, 0, ECHO_REP(PMPI_Win_sync(win)));
}

/* ---- queries that must answer as on the representative ---- */

int echo_MPI_Win_get_group(MPI_Win win, MPI_Group *group) {
    WIN_OR_PASS(MPI_Win_get_group, win, group);
    /* the representative's group with the copy in its place, as for communicators */
    return echo_is_rep() ? PMPI_Win_get_group(win, group) : echo_comm_group(&w->group, group);
}

/* the representative's info (a copy's stand-in may answer otherwise) */
int echo_MPI_Win_get_info(MPI_Win win, MPI_Info *info_used) {
    WIN_OR_PASS(MPI_Win_get_info, win, info_used);
    return echo_forward_info(info_used, ECHO_REP(PMPI_Win_get_info(win, info_used)));
}

int echo_MPI_Win_set_info(MPI_Win win, MPI_Info info) {
    WIN_OR_PASS(MPI_Win_set_info, win, info);
    return echo_forward(NULL, 0, MPI_BYTE, ECHO_REP(PMPI_Win_set_info(win, info)));
}

/* A copy answers from the representative's layout, in its own memory */
int echo_MPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr) {
    WIN_OR_PASS(MPI_Win_shared_query, win, rank, size, disp_unit, baseptr);
    if (!w->segments) {
        /* not a shared window: MPI-4.1 lets MPI answer with another rank's memory where it can reach it (MPICH
         * does on one host), or none.  A copy takes its representative's size and displacement unit, and its own
         * memory where the representative got its own; another process's memory it cannot reach: NULL */
        struct { MPI_Aint size; int disp_unit, own; } a = {0, 0, 0};
        void *base = NULL;
        int rc = MPI_SUCCESS;
        if (echo_is_rep()) {
            rc = PMPI_Win_shared_query(win, rank, &a.size, &a.disp_unit, &base);
            a.own = rc == MPI_SUCCESS && base != NULL && w->nregions > 0 && base == w->regions[0].base;
        }
        rc = echo_forward_bytes(&a, sizeof a, rc);
        w->stores |= rc == MPI_SUCCESS && rank != w->group.rank;
        if (rc != MPI_SUCCESS) return rc;
        if (!echo_is_rep()) base = a.own ? w->regions[0].base : NULL;
        *size = a.size;
        *disp_unit = a.disp_unit;
        *(void **)baseptr = base;
        return rc;
    }
    if (echo_is_rep()) return PMPI_Win_shared_query(win, rank, size, disp_unit, baseptr);
    int q = rank;
    if (rank == MPI_PROC_NULL) /* the lowest rank with memory */
        for (q = 0; q < w->nsegments - 1 && w->segments[q].size == 0; q++) continue;
    if (q < 0 || q >= w->nsegments) return MPI_ERR_RANK;
    *size = w->segments[q].size;
    *disp_unit = w->segments[q].disp_unit;
    /* an empty segment's base is NULL where MPI said so to the representative (MPICH's
     * rma/win_shared_noncontig_put checks it) */
    *(void **)baseptr = w->segments[q].null_base ? NULL : w->lowest + w->segments[q].offset;
    return MPI_SUCCESS;
}

/* A copy's stand-in of a shared window spans every segment: its base and size
 * are those of the copy's own segment, as on the representative. */
int echo_MPI_Win_get_attr(MPI_Win win, int win_keyval, void *attribute_val, int *flag) {
    echo_win_t *w = find(win);
    if (w && w->allocated_standin && !echo_is_rep() && (win_keyval == MPI_WIN_BASE ||
                                                        win_keyval == MPI_WIN_CREATE_FLAVOR)) {
        *flag = 1;
        if (win_keyval == MPI_WIN_BASE) *(void **)attribute_val = w->app_base;
        else *(int **)attribute_val = &w->flavor;
        return MPI_SUCCESS;
    }
    if (!w || !w->segments || echo_is_rep() || (win_keyval != MPI_WIN_BASE && win_keyval != MPI_WIN_SIZE))
        return PMPI_Win_get_attr(win, win_keyval, attribute_val, flag);
    *flag = 1;
    if (win_keyval == MPI_WIN_BASE)
        *(void **)attribute_val =
            w->segments[w->group.rank].null_base ? NULL : w->lowest + w->segments[w->group.rank].offset;
    else *(MPI_Aint **)attribute_val = &w->my_size;
    return MPI_SUCCESS;
}

