/* A window as the clone layer keeps it (echo_win_t: its memory regions, the results its gets wait for, its board),
 * shared by the files of one-sided communication: the windows and their calls (echo_win.c), which pages changed and
 * their forward (echo_win_pages.c), the shared-memory board of node windows (echo_win_board.c), and MPI's memory
 * (echo_win_memory.c: MPI_Alloc_mem's blocks).  docs/rma.md has the design. */
#ifndef ECHO_WIN_STATE_H
#define ECHO_WIN_STATE_H
#include "echo_clone.h"
#include "echo_dirty.h"

#include <stdint.h>

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


/* every window this process made that has copies to serve, in the order they were made (echo_win.c) */
extern echo_win_t **echo_wins;
extern int echo_nwins;

static inline size_t npages(MPI_Aint size) { return ((size_t)size + PAGE - 1) / PAGE; }

static inline size_t page_len(const region_t *r, size_t p) {
    size_t off = p * PAGE;
    return (size_t)r->size - off < PAGE ? (size_t)r->size - off : PAGE;
}


/* memory the application owns, which outlives the window (MPI's own memory goes with it) */
static inline int app_memory(int flavor) { return flavor == MPI_WIN_FLAVOR_CREATE || flavor == MPI_WIN_FLAVOR_DYNAMIC; }

/* which pages changed, and their forward to the copies (echo_win_pages.c) */
void echo_win_say_compared(const char *why, int everywhere);
void echo_win_track_region(region_t *r);
void echo_win_untrack_region(region_t *r);
int echo_win_forward_memory(echo_win_t *w, int first, int all, int rc);
void echo_win_add_region(echo_win_t *w, void *base, MPI_Aint size);
void echo_win_collect(echo_win_t *w, int publishing); /* a representative's writes: pending pages, the board */
/* which memory is tracked, and the board of node windows (echo_win_board.c) */
void echo_win_plan_tracking(echo_win_t *w, echo_comm_t *c);
void echo_win_drop_spans(echo_win_t *w);
/* MPI's memory (echo_win_memory.c) */
void echo_win_forget_region(region_t *r);
void echo_win_forget_memory_of(echo_win_t *w);

#endif
