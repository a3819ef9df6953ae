/* Which pages of a window changed, and their forward to the copies: the snapshot every process of a rank keeps,
 * the pages the kernel saw written (echo_dirty.c) or the board says others wrote, else every page compared
 * (docs/rma.md, "Only changed pages travel"). */
#include "echo_clone.h"
#include "echo_dirty.h"
#include "echo_records.h"
#include "echo_win_state.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- which pages changed: tracked writes (echo_dirty.c), or a comparison of every page ---- */

/* Where tracking is off, the window is compared whole at every forward: said once a process.  `everywhere`:
 * the reason holds for every representative of the window, so only application rank 0's says it. */
void echo_win_say_compared(const char *why, int everywhere) {
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
void echo_win_collect(echo_win_t *w, int publishing) {
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
void echo_win_track_region(region_t *r) {
    if (r->pend || !r->size || !(r->dirty = echo_dirty_track(r->base, (size_t)r->size))) return;
    r->pend = calloc(npages(r->size), 1);
}

void echo_win_untrack_region(region_t *r) {
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
int echo_win_forward_memory(echo_win_t *w, int first, int all, int rc) {
    if (!echo_has_copies()) return rc;
    size_t total = 0;
    for (int i = first; i < w->nregions; i++) total += npages(w->regions[i].size);
    unsigned char *changed = calloc(total ? total : 1, 1);
    size_t k0 = 0;
    if (echo_is_rep()) {
        echo_win_collect(w, 0);
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

void echo_win_add_region(echo_win_t *w, void *base, MPI_Aint size) {
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
    for (int i = 0; i < echo_nwins; i++)
        if (echo_wins[i]->board_win != MPI_WIN_NULL) echo_win_collect(echo_wins[i], 1);
}

/* after MPI_Barrier: updates other ranks completed before it are visible here */
int echo_win_after_barrier(int rc) {
    for (int i = 0; i < echo_nwins; i++) rc = echo_win_forward_memory(echo_wins[i], 0, 0, rc);
    return rc;
}

/* Whether the representative holds window memory its copies have not been given yet: other ranks' stores into
 * a shared window (or their updates of MPI's window memory) since the last forward.  Copies that read such memory
 * with plain loads and no synchronization call (no MPI_Win_sync: docs/rma.md's rule) read older values than their
 * representative, so their data is not evidence against its (echo_sdc.c's vote).  Only windows over memory MPI
 * allocated are looked at: the program may have freed its own memory of a window before MPI_Win_free. */
int echo_win_unseen(void) {
    if (!echo_is_rep() || !echo_has_copies()) return 0;
    for (int i = 0; i < echo_nwins; i++) {
        echo_win_t *w = echo_wins[i];
        if (w->flavor != MPI_WIN_FLAVOR_SHARED && w->flavor != MPI_WIN_FLAVOR_ALLOCATE) continue;
        for (int k = 0; k < w->nregions; k++) {
            const region_t *r = &w->regions[k];
            if (r->snap && r->size > 0 && memcmp(r->base, r->snap, (size_t)r->size)) return 1;
        }
    }
    return 0;
}

