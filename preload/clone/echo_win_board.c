/* The shared-memory board of node windows, and which memory of a window is tracked at all: the representatives of
 * a node window say on the board which pages of each other's segments they stored into (docs/rma.md, "Only written
 * pages are compared"). */
#include "echo_clone.h"
#include "echo_dirty.h"
#include "echo_records.h"
#include "echo_win_state.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a representative tells the others about its window when it is created */
typedef struct {
    long on_node, can_track, has_copies, shared; /* this one's memory is in shared memory (MPI's window file) */
    long over_board;                            /* it lies in a window with a board */
    long inode, dev, offset, size;              /* its segment: the file it is in, where there, how long */
} about_t;

/* 1 if a region of w lies in memory of another window with a board */
static long over_board(const echo_win_t *w) {
    for (int i = 0; i < w->nregions; i++)
        for (int j = 0; j < echo_nwins; j++) {
            if (echo_wins[j] == w || echo_wins[j]->board_win == MPI_WIN_NULL) continue;
            for (int k = 0; k < echo_wins[j]->nregions; k++) {
                const region_t *r = &w->regions[i], *o = &echo_wins[j]->regions[k];
                if (r->base < o->base + o->size && o->base < r->base + r->size) return 1;
            }
            for (int k = 0; k < echo_wins[j]->nspans; k++) {
                const region_t *r = &w->regions[i];
                const span_t *o = &echo_wins[j]->spans[k];
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

void echo_win_drop_spans(echo_win_t *w) {
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
void echo_win_plan_tracking(echo_win_t *w, echo_comm_t *c) {
    w->board_win = MPI_WIN_NULL;
    const char *why = echo_dirty_unavailable();
    if (!echo_is_rep()) {
        if (why && echo_has_copies()) echo_win_say_compared(why, 0);
        for (int i = 0; i < w->nregions; i++) echo_win_track_region(&w->regions[i]);
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
    for (int i = 0; exposed && i < echo_nwins; i++) echo_wins[i]->others_whole |= echo_wins[i]->board_win != MPI_WIN_NULL;
    if (board && w->flavor == MPI_WIN_FLAVOR_ALLOCATE) /* every one must find the others' segments to publish */
        PMPI_Allreduce(MPI_IN_PLACE, &located, 1, MPI_INT, MPI_MIN, c->real);
    if (!copies || !everywhere || !can || !located) { /* no copies anywhere, or tracking cannot be right */
        if (copies)
            echo_win_say_compared(!everywhere ? "the window's processes span hosts: a network card's writes are not seen"
                         : !can      ? (why ? why : "a representative cannot track writes")
                                     : "the MPI's shared window memory is not one file every process maps",
                         1);
        echo_win_drop_spans(w);
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
    } else echo_win_drop_spans(w);
    for (int i = 0; i < w->nregions; i++) {
        region_t *r = &w->regions[i];
        /* a private region of a window without a board: shared memory there could be stored into by others */
        if (!board && r->size && echo_dirty_shared_mapping(r->base, (size_t)r->size) != 0) {
            echo_win_say_compared("window memory in a shared mapping that other processes may store into", 0);
            continue;
        }
        echo_win_track_region(r);
        if (board && !r->pend) r->pend = calloc(npages(r->size), 1); /* the scan fails: published whole */
    }
    w->tracking = 1;
}

