/* MPI's memory: MPI_Alloc_mem's blocks (MPI_Free_mem names only the base, and a window may expose part of one), the
 * windows' regions in memory that goes away, and the numbering of MPI's memory that SDC's addresses use. */
#include "echo_clone.h"
#include "echo_dirty.h"
#include "echo_records.h"
#include "echo_win_state.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a region whose memory is gone: no pages, so every forward skips it alike on both sides */
void echo_win_forget_region(region_t *r) {
    echo_win_untrack_region(r);
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
void echo_win_forget_memory_of(echo_win_t *w) {
    int n = 0;
    for (int v = 0; v < echo_nwins; v++)
        if (echo_wins[v] != w && app_memory(echo_wins[v]->flavor)) n += echo_wins[v]->nregions;
    if (!n || !echo_has_copies()) return;
    int *gone = calloc((size_t)n, sizeof(int)), k = 0;
    for (int v = 0; v < echo_nwins; v++) {
        if (echo_wins[v] == w || !app_memory(echo_wins[v]->flavor)) continue;
        for (int i = 0; i < echo_wins[v]->nregions; i++, k++) {
            region_t *r = &echo_wins[v]->regions[i];
            for (int j = 0; echo_is_rep() && j < w->nregions && !gone[k]; j++)
                gone[k] = inside(r->base, r->size, w->regions[j].base, w->regions[j].size);
            for (int j = 0; echo_is_rep() && j < w->nspans && !gone[k]; j++)
                gone[k] = inside(r->base, r->size, w->spans[j].base, w->spans[j].size);
        }
    }
    echo_forward(gone, n, MPI_INT, MPI_SUCCESS);
    k = 0;
    for (int v = 0; v < echo_nwins; v++) {
        if (echo_wins[v] == w || !app_memory(echo_wins[v]->flavor)) continue;
        for (int i = 0; i < echo_wins[v]->nregions; i++, k++) {
            if (gone[k]) echo_win_forget_region(&echo_wins[v]->regions[i]);
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
    for (int v = 0; v < echo_nwins && size > 0; v++) {
        if (!app_memory(echo_wins[v]->flavor)) continue;
        for (int i = 0; i < echo_wins[v]->nregions; i++) {
            if (inside(echo_wins[v]->regions[i].base, echo_wins[v]->regions[i].size, base, size))
                echo_win_forget_region(&echo_wins[v]->regions[i]);
        }
    }
    return PMPI_Free_mem(base);
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
    for (int v = 0; v < echo_nwins; i -= echo_wins[v++]->nregions)
        if (i < echo_wins[v]->nregions) {
            *base = echo_wins[v]->regions[i].base;
            *size = echo_wins[v]->regions[i].size;
            return 1;
        }
    return 0;
}
