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
 * (plan_tracking says which, docs/rma.md the whole table). */
#include "echo_clone.h"
#include "echo_dirty.h"
#include "echo_records.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE ECHO_DIRTY_PAGE
#define ALL_TARGETS (-1)

typedef struct region {
    char *base;
    MPI_Aint size;
    char *snap;          /* the memory as of the last forward (only where the rank has copies) */
    unsigned char *pend; /* tracked: pages written since the last forward (one byte a page), else NULL */
    echo_dirty_t *dirty; /* its tracking by the kernel; NULL (with pend) on a board window: published whole */
    int seg;             /* a shared-memory window's segment this region is, else -1 */
} region_t;

/* Memory a representative maps and writes that another rank forwards: the other segments of a node window */
typedef struct span {
    char *base;
    MPI_Aint size;
    int seg;
    unsigned char *taken; /* scratch: the pages one take found written */
    echo_dirty_t *dirty;  /* NULL if the kernel refused: published whole */
} span_t;

typedef struct pending {
    void *buf; /* an origin-side result buffer, filled when the operation completes */
    int count;
    MPI_Datatype dt; /* a duplicate when derived: the application may free its type first */
    int target;
} pending_t;

typedef struct echo_win {
    MPI_Win app;  /* the real window (representative) or the stand-in (copy) */
    int flavor;
    int32_t comm_id;
    echo_comm_t group; /* rank, size and (copies) members of the window's communicator */
    region_t *regions;
    int nregions;
    pending_t *pending;
    int npending;
    /* a shared-memory window: every rank's segment (offset from the lowest,
     * size, disp_unit), the same on every copy of the rank */
    struct segment { MPI_Aint offset, size; int disp_unit, null_base; } *segments; /* null_base: MPI said NULL */
    int nsegments;
    char *lowest;     /* where the segment at offset 0 is, in this process */
    MPI_Aint my_size; /* what MPI_WIN_SIZE answers (a copy's stand-in spans every segment) */
    /* a copy's stand-in allocated by MPI where the MPI refused one over MPI_COMM_SELF on the application's memory
     * (standin_window): MPI_WIN_BASE and MPI_WIN_CREATE_FLAVOR are answered as the application's window's */
    int allocated_standin;
    void *app_base;
    /* representative of a rank with copies, window on the application's memory: the ranks it opened passive-target
     * epochs on, and a communicator of the window's processes to learn at MPI_Win_free whether another rank did
     * on this one's memory */
    unsigned char *locked;
    MPI_Comm peers;
    /* node windows whose memory the representatives share (Win_allocate_shared, and Win_allocate where the MPI
     * gives shared memory): each representative says on a board which pages of the others' segments it wrote
     * (docs/rma.md, "Only written pages are compared") */
    span_t *spans;     /* the other segments, where this representative maps them */
    int nspans;
    MPI_Win board_win; /* MPI_WIN_NULL when there is no board */
    uint64_t **board;  /* every representative's bits, where this one maps them: board[q] + word[seg] */
    size_t *word;      /* where a segment's bits start in a representative's board, in 64-bit words */
    int all_consume;   /* every representative forwards every segment (a shared window's copies hold them all) */
    int tracking;      /* regions attached later may be tracked */
    double published;  /* w->ops when the other segments were last scanned */
    int stores;        /* the application may store into other segments (it asked MPI_Win_shared_query for one) */
    int others_whole;  /* other ranks' segments are compared whole: another window exposes this one's memory */
    /* costs, written as metrics when the window is freed */
    double ops, syncs, sent, exposed, compared;
} echo_win_t;

static echo_win_t **wins;
static int nwins;

/* NULL: a window over MPI_COMM_SELF (or one derived from it), each process's own */
static echo_win_t *find(MPI_Win win) {
    for (int i = nwins - 1; i >= 0; i--)
        if (wins[i]->app == win) return wins[i];
    return NULL;
}

/* ---- target side: window memory ---- */

static size_t npages(MPI_Aint size) { return ((size_t)size + PAGE - 1) / PAGE; }

static size_t page_len(const region_t *r, size_t p) {
    size_t off = p * PAGE;
    return (size_t)r->size - off < PAGE ? (size_t)r->size - off : PAGE;
}

/* ---- which pages changed: tracked writes (echo_dirty.c), or a comparison of every page ---- */

/* Where tracking is off, the window is compared whole at every forward: said once a process.  `everywhere`:
 * the reason holds for every representative of the window, so only application rank 0's says it. */
static void say_compared(const char *why, int everywhere) {
    static int said;
    if (said || !echo_has_copies() || (everywhere && echo_is_rep() && echo.app_rank != 0)) return;
    said = 1;
    fprintf(stderr, "echo: RMA window memory is compared page by page at each synchronization (%s); windows cost "
            "what they hold, not what changed (docs/rma.md)\n", why);
}

static unsigned char *scratch(size_t n) {
    static unsigned char *buf;
    static size_t cap;
    if (n > cap) {
        cap = n;
        buf = realloc(buf, cap);
    }
    memset(buf, 0, n);
    return buf;
}

/* the pages of a range this process wrote since the last take; every page if the kernel could not say */
static void take(echo_dirty_t *d, MPI_Aint size, unsigned char *pages) {
    if (!d || echo_dirty_take(d, pages) < 0) memset(pages, 1, npages(size));
}

/* Tell the representatives that forward segment `seg` which of its pages this one wrote */
static void publish(echo_win_t *w, int seg, const unsigned char *pages, size_t n) {
    for (int q = 0; q < w->group.size; q++) {
        if (q == w->group.rank || (!w->all_consume && q != seg)) continue;
        uint64_t *bits = w->board[q] + w->word[seg];
        for (const unsigned char *at = pages; (at = memchr(at, 1, n - (size_t)(at - pages))) != NULL; at++) {
            size_t k = (size_t)(at - pages);
            __atomic_fetch_or(&bits[k / 64], (uint64_t)1 << (k % 64), __ATOMIC_RELEASE);
        }
    }
}

/* A representative's writes since the last call: into its tracked regions' pending pages, and onto the board for
 * the other representatives that forward what it wrote.  On windows with a board, before every synchronization
 * call and barrier (`publishing`): a rank may learn of this one's writes into memory it forwards only after this
 * one's next synchronization call (the MPI memory model), so they are on the board by then.  At forwards, the
 * regions this one forwards: writes into them during the synchronization call, by this process or the kernel.
 * Each scan walks the page table of what it covers, so each is made only where it can find something. */
static void collect(echo_win_t *w, int publishing) {
    if (!echo_is_rep()) return;
    int board = w->board_win != MPI_WIN_NULL;
    for (int i = 0; i < w->nregions; i++) {
        region_t *r = &w->regions[i];
        if (!r->pend || (publishing && !w->all_consume)) continue; /* nobody else forwards this segment */
        size_t n = npages(r->size);
        unsigned char *pages = board && r->seg >= 0 ? scratch(n) : r->pend;
        take(r->dirty, r->size, pages);
        if (pages == r->pend) continue;
        for (size_t k = 0; k < n; k++) r->pend[k] |= pages[k];
        publish(w, r->seg, pages, n);
    }
    /* a Win_allocate's other segments: written by this process's puts and accumulates, or by stores where
     * MPI_Win_shared_query told the application where one is; neither since the last scan: nothing to find */
    if (publishing && w->ops == w->published && !w->stores) return;
    w->published = w->ops;
    for (int i = 0; publishing && i < w->nspans; i++) {
        span_t *sp = &w->spans[i];
        size_t n = npages(sp->size);
        memset(sp->taken, 0, n);
        take(sp->dirty, sp->size, sp->taken);
        publish(w, sp->seg, sp->taken, n);
    }
}

/* what the other representatives wrote into the segments this one forwards, from its board */
static void take_board(echo_win_t *w) {
    if (w->board_win == MPI_WIN_NULL) return;
    for (int i = 0; i < w->nregions; i++) {
        region_t *r = &w->regions[i];
        if (!r->pend || r->seg < 0) continue;
        uint64_t *bits = w->board[w->group.rank] + w->word[r->seg];
        size_t n = npages(r->size);
        for (size_t j = 0; j < (n + 63) / 64; j++) {
            if (!__atomic_load_n(&bits[j], __ATOMIC_RELAXED)) continue;
            uint64_t v = __atomic_exchange_n(&bits[j], 0, __ATOMIC_ACQUIRE); /* their stores happened before */
            for (size_t b = 0; b < 64; b++)
                if (v >> b & 1) r->pend[j * 64 + b] = 1;
        }
    }
}

/* Track a region's writes from now on; a region whose writes cannot be tracked is compared whole */
static void track_region(region_t *r) {
    if (r->pend || !r->size || !(r->dirty = echo_dirty_track(r->base, (size_t)r->size))) return;
    r->pend = calloc(npages(r->size), 1);
}

static void untrack_region(region_t *r) {
    echo_dirty_untrack(r->dirty);
    r->dirty = NULL;
    free(r->pend);
    r->pend = NULL;
}

/* The first page from `from` on whose flag is set (every page when there are no flags), or n: memchr skips the
 * unwritten pages of a large window far faster than a loop over them */
static size_t next_page(const unsigned char *flags, size_t n, size_t from) {
    if (!flags || from >= n) return from;
    const unsigned char *at = memchr(flags + from, 1, n - from);
    return at ? (size_t)(at - flags) : n;
}

/* Bring copies' memory of regions first.. to the representative's.  `all`:
 * send every page (the snapshots are not shared yet).  Only the pages written since the last forward are looked
 * at where writes are tracked; every page elsewhere. */
static int forward_memory(echo_win_t *w, int first, int all, int rc) {
    if (!echo_has_copies()) return rc;
    size_t total = 0;
    for (int i = first; i < w->nregions; i++) total += npages(w->regions[i].size);
    unsigned char *changed = calloc(total ? total : 1, 1);
    size_t k0 = 0;
    if (echo_is_rep()) {
        collect(w, 0);
        take_board(w);
        for (int i = first; i < w->nregions; k0 += npages(w->regions[i++].size)) {
            region_t *r = &w->regions[i];
            size_t n = npages(r->size);
            const unsigned char *look = all || (w->others_whole && r->seg >= 0 && r->seg != w->group.rank) ? NULL : r->pend;
            for (size_t p = next_page(look, n, 0); p < n; p = next_page(look, n, p + 1)) {
                size_t off = p * PAGE, len = page_len(r, p);
                if (!all) w->compared += (double)len;
                if (all || memcmp(r->base + off, r->snap + off, len)) {
                    memcpy(r->snap + off, r->base + off, len);
                    changed[k0 + p] = 1;
                }
            }
            if (r->pend) memset(r->pend, 0, n);
        }
    } else { /* the pages this copy's own stores changed: only those can differ from the snapshot unless sent */
        for (int i = first; i < w->nregions; i++)
            if (w->regions[i].pend) take(w->regions[i].dirty, w->regions[i].size, w->regions[i].pend);
    }
    rc = echo_forward_bytes(changed, total, rc);
    /* the changed pages in runs: from the snapshot (representative), into the memory (copy) */
    int nruns = 0, cap = 16;
    int *lens = malloc(sizeof(int) * (size_t)cap);
    MPI_Aint *addrs = malloc(sizeof(MPI_Aint) * (size_t)cap);
    size_t bytes = 0;
    k0 = 0;
    for (int i = first; i < w->nregions; k0 += npages(w->regions[i++].size)) {
        region_t *r = &w->regions[i];
        char *src = echo_is_rep() ? r->snap : r->base;
        size_t n = npages(r->size);
        for (size_t p = next_page(changed + k0, n, 0); p < n; p = next_page(changed + k0, n, p + 1)) {
            size_t len = page_len(r, p);
            bytes += len;
            if (p > 0 && changed[k0 + p - 1] && nruns > 0 && lens[nruns - 1] <= INT_MAX - PAGE) { /* extend the run */
                lens[nruns - 1] += (int)len;
                continue;
            }
            if (nruns == cap) {
                cap *= 2;
                lens = realloc(lens, sizeof(int) * (size_t)cap);
                addrs = realloc(addrs, sizeof(MPI_Aint) * (size_t)cap);
            }
            PMPI_Get_address(src + p * PAGE, &addrs[nruns]);
            lens[nruns++] = (int)len;
        }
    }
    if (nruns > 0) {
        MPI_Datatype t;
        PMPI_Type_create_hindexed(nruns, lens, addrs, MPI_BYTE, &t);
        PMPI_Type_commit(&t);
        rc = echo_forward(MPI_BOTTOM, 1, t, rc);
        PMPI_Type_free(&t);
    }
    if (!echo_is_rep()) {
        k0 = 0;
        for (int i = first; i < w->nregions; k0 += npages(w->regions[i++].size)) {
            region_t *r = &w->regions[i];
            size_t n = npages(r->size);
            for (size_t p = next_page(changed + k0, n, 0); p < n; p = next_page(changed + k0, n, p + 1))
                memcpy(r->snap + p * PAGE, r->base + p * PAGE, page_len(r, p));
            /* pages not sent that this copy may have changed: set back to the snapshot, which its representative's
             * page still equals */
            for (size_t p = next_page(r->pend, n, 0); !all && p < n; p = next_page(r->pend, n, p + 1)) {
                size_t off = p * PAGE, len = page_len(r, p);
                if (changed[k0 + p]) continue;
                w->compared += (double)len;
                if (memcmp(r->base + off, r->snap + off, len)) memcpy(r->base + off, r->snap + off, len);
            }
            /* the pages written here (received, set back) are taken at the next forward: compared, found equal;
             * but not a whole window received at its creation, which would count as a program writing it all */
            if (r->pend && all) echo_dirty_forget(r->dirty, r->pend);
            if (r->pend) memset(r->pend, 0, n);
        }
    }
    for (int i = first; i < w->nregions; i++) w->exposed += (double)w->regions[i].size;
    w->sent += (double)bytes;
    w->syncs++;
    free(changed);
    free(lens);
    free(addrs);
    return rc;
}

static void add_region(echo_win_t *w, void *base, MPI_Aint size) {
    w->regions = realloc(w->regions, sizeof *w->regions * (size_t)(w->nregions + 1));
    region_t *r = &w->regions[w->nregions++];
    r->base = base;
    r->size = size > 0 ? size : 0;
    r->snap = echo_has_copies() && r->size ? malloc((size_t)r->size) : NULL;
    r->pend = NULL;
    r->dirty = NULL;
    r->seg = -1;
}

/* before MPI_Barrier: what this process wrote into memory other ranks forward is on their boards */
void echo_win_before_barrier(void) {
    for (int i = 0; i < nwins; i++)
        if (wins[i]->board_win != MPI_WIN_NULL) collect(wins[i], 1);
}

/* after MPI_Barrier: updates other ranks completed before it are visible here */
int echo_win_after_barrier(int rc) {
    for (int i = 0; i < nwins; i++) rc = forward_memory(wins[i], 0, 0, rc);
    return rc;
}

/* Whether the representative holds window memory its copies have not been given yet: other ranks' stores into
 * a shared window (or their updates of MPI's window memory) since the last forward.  Copies that read such memory
 * with plain loads and no synchronization call (no MPI_Win_sync: docs/rma.md's rule) read older values than their
 * representative, so their data is not evidence against its (echo_sdc.c's vote).  Only windows over memory MPI
 * allocated are looked at: the program may have freed its own memory of a window before MPI_Win_free. */
int echo_win_unseen(void) {
    if (!echo_is_rep() || !echo_has_copies()) return 0;
    for (int i = 0; i < nwins; i++) {
        echo_win_t *w = wins[i];
        if (w->flavor != MPI_WIN_FLAVOR_SHARED && w->flavor != MPI_WIN_FLAVOR_ALLOCATE) continue;
        for (int k = 0; k < w->nregions; k++) {
            const region_t *r = &w->regions[k];
            if (r->snap && r->size > 0 && memcmp(r->base, r->snap, (size_t)r->size)) return 1;
        }
    }
    return 0;
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
    return memory ? forward_memory(w, 0, 0, rc) : rc;
}

/* ---- creation and destruction ---- */

/* memory the application owns, which outlives the window (MPI's own memory goes with it) */
static int app_memory(int flavor) { return flavor == MPI_WIN_FLAVOR_CREATE || flavor == MPI_WIN_FLAVOR_DYNAMIC; }

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
    wins = realloc(wins, sizeof *wins * (size_t)(nwins + 1));
    wins[nwins++] = w;
    return w;
}

/* What a representative tells the others about its window when it is created */
typedef struct {
    long on_node, can_track, has_copies, shared; /* this one's memory is in shared memory (MPI's window file) */
    long over_board;                            /* it lies in a window with a board */
    long inode, dev, offset, size;              /* its segment: the file it is in, where there, how long */
} about_t;

/* 1 if a region of w lies in memory of another window with a board */
static long over_board(const echo_win_t *w) {
    for (int i = 0; i < w->nregions; i++)
        for (int j = 0; j < nwins; j++) {
            if (wins[j] == w || wins[j]->board_win == MPI_WIN_NULL) continue;
            for (int k = 0; k < wins[j]->nregions; k++) {
                const region_t *r = &w->regions[i], *o = &wins[j]->regions[k];
                if (r->base < o->base + o->size && o->base < r->base + r->size) return 1;
            }
            for (int k = 0; k < wins[j]->nspans; k++) {
                const region_t *r = &w->regions[i];
                const span_t *o = &wins[j]->spans[k];
                if (r->base < o->base + o->size && o->base < r->base + r->size) return 1;
            }
        }
    return 0;
}

/* The other segments of a Win_allocate window in shared memory, where this representative maps them: MPIs that
 * keep such a window in one shared file map all of it in every process (Open MPI's osc/sm, MPICH's), and stores
 * into other ranks' segments through that mapping (their puts).  Open MPI refuses MPI_Win_shared_query on such a
 * window, so the segments are found in the file: 1 if every one is in this process's mapping of it, else 0. */
static int locate_segments(echo_win_t *w, const about_t *all) {
    const about_t *me = &all[w->group.rank];
    echo_mapping_t m;
    if (!w->nregions || echo_dirty_mapping(w->regions[0].base, &m) < 0 || !m.inode) return 0;
    char *file = (char *)m.start - m.offset; /* where offset 0 of the file would be here */
    w->spans = calloc((size_t)w->group.size, sizeof *w->spans);
    for (int q = 0; q < w->group.size; q++) {
        if (q == w->group.rank || all[q].size == 0) continue;
        if (all[q].inode != me->inode || all[q].dev != me->dev) return 0;
        char *base = file + all[q].offset;
        if ((unsigned long)base < m.start || (unsigned long)(base + all[q].size) > m.end) return 0;
        w->spans[w->nspans++] = (span_t){base, all[q].size, q, calloc(npages(all[q].size), 1), NULL};
    }
    return 1;
}

static void drop_spans(echo_win_t *w) {
    for (int i = 0; i < w->nspans; i++) {
        echo_dirty_untrack(w->spans[i].dirty);
        free(w->spans[i].taken);
    }
    free(w->spans);
    w->spans = NULL;
    w->nspans = 0;
}

/* The board: every representative's bits for every segment, in memory they share; `sizes`: each segment's */
static void make_board(echo_win_t *w, echo_comm_t *c, const MPI_Aint *sizes) {
    int n = w->group.size;
    w->word = calloc((size_t)n + 1, sizeof *w->word);
    for (int q = 0; q < n; q++) w->word[q + 1] = w->word[q] + (npages(sizes[q]) + 63) / 64;
    uint64_t *mine;
    PMPI_Win_allocate_shared((MPI_Aint)(w->word[n] * sizeof *mine), (int)sizeof *mine, MPI_INFO_NULL, c->real,
                             &mine, &w->board_win);
    memset(mine, 0, w->word[n] * sizeof *mine);
    w->board = calloc((size_t)n, sizeof *w->board);
    for (int q = 0; q < n; q++) {
        MPI_Aint size;
        int disp_unit;
        PMPI_Win_shared_query(w->board_win, q, &size, &disp_unit, &w->board[q]);
    }
    PMPI_Barrier(c->real); /* nobody publishes before every board is cleared */
}

/* Which memory is tracked (docs/rma.md, "Only written pages are compared").  A copy's window memory is written by
 * the copy alone (echo's stand-in is its own), so tracking its own writes is enough.  A representative's can also
 * be written by other processes: the kernel sees them in its page table where they arrive by the kernel (CMA) or
 * by this process (the MPI library, in the application's call or a progress thread), not where another process
 * stores through its own mapping of shared memory (the board covers those, between the representatives of one
 * node), nor where a network card writes (any window whose processes span hosts is compared whole). */
static void plan_tracking(echo_win_t *w, echo_comm_t *c) {
    w->board_win = MPI_WIN_NULL;
    const char *why = echo_dirty_unavailable();
    if (!echo_is_rep()) {
        if (why && echo_has_copies()) say_compared(why, 0);
        for (int i = 0; i < w->nregions; i++) track_region(&w->regions[i]);
        w->tracking = why == NULL;
        return;
    }
    /* the representatives agree (two collectives at creation, three for a Win_allocate in shared memory): every one on this host, able to track, memory
     * shared or private, and where each one's segment is */
    MPI_Comm node;
    int on_node;
    PMPI_Comm_split_type(c->real, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    PMPI_Comm_size(node, &on_node);
    PMPI_Comm_free(&node);
    about_t mine = {on_node == c->size, why == NULL, echo_has_copies(), 0, over_board(w), 0, 0, 0, 0};
    echo_mapping_t m;
    if (w->flavor == MPI_WIN_FLAVOR_ALLOCATE && w->nregions && echo_dirty_mapping(w->regions[0].base, &m) == 0) {
        mine.shared = m.shared;
        mine.inode = (long)m.inode;
        mine.dev = (long)m.dev;
        mine.offset = (long)((unsigned long)w->regions[0].base - m.start + m.offset);
        mine.size = (long)w->regions[0].size;
    }
    about_t *all = calloc((size_t)c->size, sizeof *all);
    PMPI_Allgather(&mine, sizeof mine / sizeof(long), MPI_LONG, all, sizeof mine / sizeof(long), MPI_LONG, c->real);
    int everywhere = 1, can = 1, copies = 0, shared = w->flavor == MPI_WIN_FLAVOR_SHARED, exposed = 0;
    for (int q = 0; q < c->size; q++) {
        exposed |= all[q].over_board != 0;
        everywhere &= all[q].on_node != 0;
        can &= all[q].can_track != 0;
        copies |= all[q].has_copies != 0;
        shared |= all[q].shared != 0;
    }
    int board = shared, located = w->flavor != MPI_WIN_FLAVOR_ALLOCATE || !shared || locate_segments(w, all);
    free(all);
    /* A window over memory of a node window (MPICH's rma/win_shared_create): its operations may reach that memory
     * by the kernel (CMA) in the owner's page table, which the owner publishes at its next synchronization call
     * only, later than a rank synchronized with the origin may read it.  The node windows' other segments are
     * compared whole from now on (every node window of this process: which one it is, is not known here). */
    for (int i = 0; exposed && i < nwins; i++) wins[i]->others_whole |= wins[i]->board_win != MPI_WIN_NULL;
    if (board && w->flavor == MPI_WIN_FLAVOR_ALLOCATE) /* every one must find the others' segments to publish */
        PMPI_Allreduce(MPI_IN_PLACE, &located, 1, MPI_INT, MPI_MIN, c->real);
    if (!copies || !everywhere || !can || !located) { /* no copies anywhere, or tracking cannot be right */
        if (copies)
            say_compared(!everywhere ? "the window's processes span hosts: a network card's writes are not seen"
                         : !can      ? (why ? why : "a representative cannot track writes")
                                     : "the MPI's shared window memory is not one file every process maps",
                         1);
        drop_spans(w);
        return;
    }
    if (board) {
        MPI_Aint *sizes = calloc((size_t)c->size, sizeof *sizes);
        for (int q = 0; q < c->size; q++)
            sizes[q] = w->segments ? w->segments[q].size : q == c->rank ? (w->nregions ? w->regions[0].size : 0) : 0;
        for (int i = 0; !w->segments && i < w->nspans; i++) sizes[w->spans[i].seg] = w->spans[i].size;
        if (!w->segments && w->nregions) w->regions[0].seg = c->rank;
        w->all_consume = w->segments != NULL; /* a shared window's copies hold every segment */
        make_board(w, c, sizes);
        free(sizes);
        for (int i = 0; i < w->nspans; i++) /* one the kernel refuses cannot be scanned: published whole each time */
            w->spans[i].dirty = echo_dirty_track(w->spans[i].base, (size_t)w->spans[i].size);
    } else drop_spans(w);
    for (int i = 0; i < w->nregions; i++) {
        region_t *r = &w->regions[i];
        /* a private region of a window without a board: shared memory there could be stored into by others */
        if (!board && r->size && echo_dirty_shared_mapping(r->base, (size_t)r->size) != 0) {
            say_compared("window memory in a shared mapping that other processes may store into", 0);
            continue;
        }
        track_region(r);
        if (board && !r->pend) r->pend = calloc(npages(r->size), 1); /* the scan fails: published whole */
    }
    w->tracking = 1;
}

/* A window on one region of memory; copies start from exactly the
 * representative's contents. */
static int register_win(MPI_Win *win, echo_comm_t *c, MPI_Comm comm, int flavor, void *base, MPI_Aint size,
                        int rc) {
    echo_win_t *w = new_win(win, c, comm, flavor, &rc);
    if (!w) return rc;
    if (flavor != MPI_WIN_FLAVOR_DYNAMIC) add_region(w, base, size);
    plan_tracking(w, c);
    return forward_memory(w, 0, 1, rc);
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
            add_region(w, lowest + segs[q].offset, segs[q].size);
            w->regions[w->nregions - 1].seg = q;
        }
    plan_tracking(w, c);
    return forward_memory(w, 0, 1, rc);
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
    add_region(w, base, size);
    region_t *r = &w->regions[w->nregions - 1];
    /* a copy's memory is its own; a representative's in shared memory may be stored into by other processes */
    if (w->tracking && (!echo_is_rep() || echo_dirty_shared_mapping(base, (size_t)size) == 0)) track_region(r);
    return forward_memory(w, w->nregions - 1, 1, rc);
}

int echo_MPI_Win_detach(MPI_Win win, const void *base) {
    echo_win_t *w = find(win);
    if (!w) return PMPI_Win_detach(win, base);
    int rc = echo_forward(NULL, 0, MPI_BYTE, w->allocated_standin ? MPI_SUCCESS : PMPI_Win_detach(win, base));
    for (int i = 0; i < w->nregions && rc == MPI_SUCCESS; i++) {
        if (w->regions[i].base != base) continue;
        untrack_region(&w->regions[i]);
        free(w->regions[i].snap);
        memmove(w->regions + i, w->regions + i + 1, sizeof *w->regions * (size_t)(w->nregions - i - 1));
        w->nregions--;
        break;
    }
    return rc;
}

/* a region whose memory is gone: no pages, so every forward skips it alike on both sides */
static void forget_region(region_t *r) {
    untrack_region(r);
    free(r->snap);
    r->snap = NULL;
    r->size = 0;
}

static int inside(const char *base, MPI_Aint size, const char *in, MPI_Aint in_size) {
    return size > 0 && base >= in && base + size <= in + in_size;
}

/* MPI's memory of window w goes with it.  A window the application created over that memory (MPICH's
 * rma/win_shared_*_flush_load expose a shared window's segment in a window of the world, and free the shared
 * window first) has nothing left to forward: its regions there are forgotten, or MPI_Win_free's forward would
 * read unmapped memory.  The representative decides (a copy's shared window may hold other segments than its
 * representative maps), and its copies forget the same regions. */
static void forget_memory_of(echo_win_t *w) {
    int n = 0;
    for (int v = 0; v < nwins; v++)
        if (wins[v] != w && app_memory(wins[v]->flavor)) n += wins[v]->nregions;
    if (!n || !echo_has_copies()) return;
    int *gone = calloc((size_t)n, sizeof(int)), k = 0;
    for (int v = 0; v < nwins; v++) {
        if (wins[v] == w || !app_memory(wins[v]->flavor)) continue;
        for (int i = 0; i < wins[v]->nregions; i++, k++) {
            region_t *r = &wins[v]->regions[i];
            for (int j = 0; echo_is_rep() && j < w->nregions && !gone[k]; j++)
                gone[k] = inside(r->base, r->size, w->regions[j].base, w->regions[j].size);
            for (int j = 0; echo_is_rep() && j < w->nspans && !gone[k]; j++)
                gone[k] = inside(r->base, r->size, w->spans[j].base, w->spans[j].size);
        }
    }
    echo_forward(gone, n, MPI_INT, MPI_SUCCESS);
    k = 0;
    for (int v = 0; v < nwins; v++) {
        if (wins[v] == w || !app_memory(wins[v]->flavor)) continue;
        for (int i = 0; i < wins[v]->nregions; i++, k++) {
            if (gone[k]) forget_region(&wins[v]->regions[i]);
        }
    }
    free(gone);
}

/* Memory from MPI_Alloc_mem, by base: MPI_Free_mem names only the base, and a window may expose part of it.  Both
 * run in every mode (a copy allocates and frees its own memory; without copies there is no window to forget) */
typedef struct { void *base; MPI_Aint size; } allocation_t;
static allocation_t *allocations;
static int nallocations, capallocations;

int echo_always_MPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr) {
    int rc = PMPI_Alloc_mem(size, info, baseptr);
    if (rc != MPI_SUCCESS) return rc;
    if (nallocations == capallocations) {
        capallocations = capallocations ? 2 * capallocations : 16;
        allocations = realloc(allocations, sizeof *allocations * (size_t)capallocations);
        if (!allocations) echo_fatal("out of memory keeping MPI_Alloc_mem's blocks");
    }
    allocations[nallocations++] = (allocation_t){*(void **)baseptr, size};
    return rc;
}

/* The application may free a window's memory before MPI_Win_free (MPICH's rma/lockcontention3 frees the memory
 * other ranks' lock epochs wrote): the window's regions in that memory are forgotten, so that MPI_Win_free's
 * forward of those epochs' updates never reads (representative) nor writes (copy) freed memory.  A
 * representative and its copies free their own memory at the same call, so each forgets the same regions. */
int echo_always_MPI_Free_mem(void *base) {
    MPI_Aint size = 0;
    for (int i = 0; i < nallocations; i++)
        if (allocations[i].base == base) {
            size = allocations[i].size;
            allocations[i] = allocations[--nallocations];
            break;
        }
    for (int v = 0; v < nwins && size > 0; v++) {
        if (!app_memory(wins[v]->flavor)) continue;
        for (int i = 0; i < wins[v]->nregions; i++) {
            if (inside(wins[v]->regions[i].base, wins[v]->regions[i].size, base, size))
                forget_region(&wins[v]->regions[i]);
        }
    }
    return PMPI_Free_mem(base);
}

int echo_MPI_Win_free(MPI_Win *win) {
    echo_win_t *w = find(*win);
    if (!w) return PMPI_Win_free(win);
    int others = app_memory(w->flavor) && updated_by_others(w, MPI_SUCCESS);
    if (!app_memory(w->flavor)) { /* MPI's memory goes with the window */
        for (int i = 0; i < w->nregions; i++) untrack_region(&w->regions[i]);
        forget_memory_of(w);
    }
    drop_spans(w);
    int rc = PMPI_Win_free(win); /* the real window, or the stand-in */
    /* Memory the application owns outlives the window: updates other ranks' passive-target epochs completed
     * must reach copies (a target may read them once MPI_Win_free returned: MPICH's rma/test4).  Otherwise echo
     * leaves that memory alone after the application's last synchronization call: a program may free it before
     * MPI_Win_free (MPICH's MTestFreeWin).  MPI's own memory is gone. */
    if (others) rc = forward_memory(w, 0, 0, rc);
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
        untrack_region(&w->regions[i]);
        free(w->regions[i].snap);
    }
    free(w->regions);
    free(w->locked);
    free(w->pending);
    free(w->group.members);
    free(w->segments);
    for (int i = 0; i < nwins; i++)
        if (wins[i] == w) {
            memmove(wins + i, wins + i + 1, sizeof *wins * (size_t)(nwins - i - 1));
            nwins--;
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
    if (w->board_win != MPI_WIN_NULL) collect(w, 1)


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
    return rank == w->group.rank ? forward_memory(w, 0, 0, rc) : echo_forward(NULL, 0, MPI_BYTE, rc);
}

int echo_MPI_Win_unlock(int rank, MPI_Win win) {
    SYNC_OR_PASS(MPI_Win_unlock, rank, win);
    return settle(w, rank, rank == w->group.rank, ECHO_REP(PMPI_Win_unlock(rank, win)));
}

int echo_MPI_Win_lock_all(int mpi_assert, MPI_Win win) {
    SYNC_OR_PASS(MPI_Win_lock_all, mpi_assert, win);
    for (int q = 0; w->locked && q < w->group.size; q++) w->locked[q] |= q != w->group.rank;
    return forward_memory(w, 0, 0, ECHO_REP(PMPI_Win_lock_all(mpi_assert, win)));
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
    return forward_memory(w, 0, 0, ECHO_REP(PMPI_Win_sync(win)));
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

/* MPI's memory this process was given, i-th: MPI_Alloc_mem's blocks, then the windows' memory regions, each in the
 * order the program made them, which is the same in a representative and its copies (SDC's addresses,
 * echo_sdc_addr.c: a representative's MPI may place its memory otherwise than a copy's, on another allocator, at
 * another alignment, so the same block is known by its number, not by the kind of memory it lies in).  0 past
 * the last. */
int echo_mpi_memory(int i, const void **base, MPI_Aint *size) {
    if (i < nallocations) {
        *base = allocations[i].base;
        *size = allocations[i].size;
        return 1;
    }
    i -= nallocations;
    for (int v = 0; v < nwins; i -= wins[v++]->nregions)
        if (i < wins[v]->nregions) {
            *base = wins[v]->regions[i].base;
            *size = wins[v]->regions[i].size;
            return 1;
        }
    return 0;
}
