/* Large windows where each epoch changes little, for the tracking of written pages under copies (docs/rma.md,
 * "Only written pages are compared"): in every epoch each rank stores one whole page and a few scattered bytes of
 * its window and puts into its right neighbour's, and a copy (not the representative) scribbles on a page of its
 * own that its representative does not change, which must be set back.  After every synchronization each rank
 * prints a hash of its whole window: a copy whose window missed one changed page prints another hash than its
 * representative, and the representative's hashes are the native run's.
 *
 * Windows: Win_create on malloc'd memory, Win_allocate (Open MPI and MPICH keep it in shared memory on one
 * host: other ranks' puts are their own stores), Win_allocate_shared with stores into the neighbour's segment,
 * a passive-target epoch, and two small windows on one page (a write found for one must not be lost for the
 * other).  Any number of ranks. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096
#define PAGES 2048 /* 8 MiB */
#define EPOCHS 5

static int rank, size, right, copy;

static uint64_t hash(const unsigned char *p, size_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

/* This rank's local stores of epoch e: a whole page and a few bytes in the first half; the copy's scribble */
static void store(unsigned char *mem, int e) {
    memset(mem + (size_t)((e * 97 + rank * 13) % (PAGES / 2)) * PAGE, 'a' + e, PAGE);
    for (int i = 0; i < 5; i++) mem[((size_t)e * 7919 + (size_t)i * 104729) % (PAGES / 2 * PAGE)] ^= (unsigned char)(e + i + 1);
    if (copy) mem[(size_t)(PAGES / 2 + (e * 131 + 7) % (PAGES / 2)) * PAGE + 5] += 1; /* never put there: set back */
}

/* where the left neighbour puts in epoch e: the second half, a page none of the scribbles hit */
static MPI_Aint put_at(int e) { return (MPI_Aint)(PAGES / 2 + (e * 53 + 11) % (PAGES / 2)) * PAGE + 8; }

static void fence_epochs(const char *name, MPI_Win win, unsigned char *mem) {
    for (int e = 0; e < EPOCHS; e++) {
        int value = 1000 * e + rank;
        store(mem, e);
        MPI_Put(&value, 1, MPI_INT, right, put_at(e), 1, MPI_INT, win);
        MPI_Win_fence(0, win);
        printf("r%d: %s epoch %d hash %016llx\n", rank, name, e, (unsigned long long)hash(mem, (size_t)PAGES * PAGE));
        MPI_Barrier(MPI_COMM_WORLD); /* the next epoch's puts land after every rank hashed: no race with the hash */
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    right = (rank + 1) % size;
    const char *c = getenv("ECHO_COPY");
    copy = c && atoi(c) > 0;
    size_t bytes = (size_t)PAGES * PAGE;

    /* the application's own memory */
    unsigned char *mine = calloc(bytes, 1);
    MPI_Win win;
    MPI_Win_create(mine, (MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    fence_epochs("create", win, mine);
    /* a passive-target epoch: the target sees the put after the barrier that follows the origin's unlock */
    int value = 77 + rank;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
    MPI_Put(&value, 1, MPI_INT, right, put_at(EPOCHS), 1, MPI_INT, win);
    MPI_Win_unlock(right, win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    printf("r%d: create locked hash %016llx\n", rank, (unsigned long long)hash(mine, bytes));
    MPI_Win_unlock(rank, win);
    MPI_Win_free(&win);
    free(mine);

    /* MPI's memory */
    unsigned char *mem;
    MPI_Win_allocate((MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    memset(mem, 0, bytes);
    MPI_Win_fence(0, win);
    fence_epochs("allocate", win, mem);
    MPI_Win_free(&win);

    /* shared memory: stores into the neighbour's segment, seen after Win_sync and a barrier */
    unsigned char *seg, *rseg;
    MPI_Aint rsize;
    int unit;
    MPI_Win_allocate_shared((MPI_Aint)bytes, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &seg, &win);
    MPI_Win_shared_query(win, right, &rsize, &unit, &rseg);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    memset(seg, 0, bytes);
    MPI_Win_sync(win);
    MPI_Barrier(MPI_COMM_WORLD);
    for (int e = 0; e < EPOCHS; e++) {
        store(seg, e);
        if (size > 1) rseg[put_at(e)] = (unsigned char)(10 * e + rank);
        MPI_Win_sync(win);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_sync(win);
        printf("r%d: shared epoch %d hash %016llx\n", rank, e, (unsigned long long)hash(seg, bytes));
        MPI_Barrier(MPI_COMM_WORLD); /* everybody hashed before the next epoch's stores */
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);

    /* two small windows on one page */
    unsigned char *block = calloc(256, 1);
    MPI_Win a, b;
    MPI_Win_create(block, 64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &a);
    MPI_Win_create(block + 64, 64, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &b);
    MPI_Win_fence(0, a);
    MPI_Win_fence(0, b);
    for (int e = 0; e < EPOCHS; e++) {
        unsigned char v = (unsigned char)(e * 16 + rank + 1);
        block[64 + e] = v;                                            /* a store into b, before a's fence */
        MPI_Put(&v, 1, MPI_BYTE, right, 8 + e, 1, MPI_BYTE, a);       /* a put into a */
        if (copy) block[64 + 32 + e] ^= 0xff;                         /* scribbled, set back at b's fence */
        MPI_Win_fence(0, a);
        MPI_Win_fence(0, b);
        printf("r%d: small epoch %d hash %016llx\n", rank, e, (unsigned long long)hash(block, 128));
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_free(&a);
    MPI_Win_free(&b);
    free(block);

    printf("r%d: done\n", rank);
    MPI_Finalize();
    return 0;
}
