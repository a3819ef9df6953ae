/* Window memory freed before MPI_Win_free, the way MPICH's test helper
 * MTestFreeWin does it (rma/winname, accfence2, transpose3, test3, test3_am):
 * the last synchronization call, then the memory freed (free or
 * MPI_Free_mem), then MPI_Win_free.  The large window is one glibc maps on
 * its own and unmaps at free.  Last, as MPICH's rma/test4: another rank's
 * passive-target epoch updates this rank's window, and MPI_Win_free is the
 * only call that makes the updates visible here before it reads them.  And as
 * MPICH's rma/win_shared_*_flush_load: a shared window's memory exposed in a
 * window of the world, the shared window freed first (its memory unmapped
 * with it), after other ranks' passive-target epochs on the world window.  And as
 * MPICH's rma/lockcontention3: memory from MPI_Alloc_mem (a window over part
 * of it), updated by another rank's lock epoch, freed with MPI_Free_mem before
 * MPI_Win_free. */
#include "battery.h"
#include <stdlib.h>

enum { SMALL = 64, MEDIUM = 2048, LARGE = 1 << 16 }; /* ints: 256 B, 8 KiB, 256 KiB */

/* MTestFreeWin: the memory behind MPI_WIN_BASE freed first, then the window */
static void free_win_mtest_style(MPI_Win *win, int alloc_mem) {
    void *base;
    int flag;
    MPI_Win_get_attr(*win, MPI_WIN_BASE, &base, &flag);
    if (alloc_mem) MPI_Free_mem(base);
    else free(base);
    MPI_Win_free(win);
}

/* fence epochs: every rank puts its rank into its right neighbour's window; the neighbour reads it after the
 * closing fence, then frees the memory and the window */
static void fence_window(int n, int alloc_mem) {
    int *mem, right = (rank + 1) % size, from = (rank + size - 1) % size;
    if (alloc_mem) MPI_Alloc_mem(sizeof(int) * n, MPI_INFO_NULL, &mem);
    else mem = malloc(sizeof(int) * n);
    for (int i = 0; i < n; i++) mem[i] = -1;
    MPI_Win win;
    MPI_Win_create(mem, sizeof(int) * n, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_name(win, "early");
    MPI_Win_fence(0, win);
    int mine[4] = {rank, rank * 10, rank * 100, n};
    MPI_Put(mine, 4, MPI_INT, right, n - 4, 4, MPI_INT, win);
    MPI_Win_fence(0, win);
    SAY("fence %d%s: from %d got %d %d %d %d, untouched %d", n, alloc_mem ? " alloc_mem" : "", from, mem[n - 4],
        mem[n - 3], mem[n - 2], mem[n - 1], mem[0]);
    free_win_mtest_style(&win, alloc_mem);
}

/* post/start/complete/wait, the target storing into its own window under a lock of itself first (transpose3,
 * test3) */
static void pscw_window(void) {
    int *mem = malloc(sizeof(int) * SMALL), right = (rank + 1) % size, from = (rank + size - 1) % size;
    MPI_Win win;
    MPI_Win_create(mem, sizeof(int) * SMALL, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    for (int i = 0; i < SMALL; i++) mem[i] = -rank;
    MPI_Win_unlock(rank, win);
    MPI_Group world, to, by;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &right, &to);
    MPI_Group_incl(world, 1, &from, &by);
    MPI_Win_post(by, 0, win);
    MPI_Win_start(to, 0, win);
    int mine = rank + 1000;
    MPI_Put(&mine, 1, MPI_INT, right, 5, 1, MPI_INT, win);
    MPI_Win_complete(win);
    MPI_Win_wait(win);
    SAY("pscw: from %d got %d, untouched %d", from, mem[5], mem[6]);
    MPI_Group_free(&world);
    MPI_Group_free(&to);
    MPI_Group_free(&by);
    free_win_mtest_style(&win, 0);
}

/* rma/test4: rank 0 updates rank 1's window under a lock; rank 1 reads it once MPI_Win_free returned */
static void updated_by_free(void) {
    int mem[SMALL];
    for (int i = 0; i < SMALL; i++) mem[i] = -1;
    MPI_Win win;
    MPI_Win_create(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    if (rank == 0) {
        int v[3] = {7, 8, 9};
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
        MPI_Put(v, 3, MPI_INT, 1, 10, 3, MPI_INT, win);
        MPI_Win_unlock(1, win);
    }
    MPI_Win_free(&win);
    SAY("after free: %d %d %d %d", mem[9], mem[10], mem[11], mem[12]);
}

/* rma/win_shared_*_flush_load: each rank's segment of a node window is also its part of a world window; the last
 * rank puts into rank 0's under MPI_Win_lock_all of both windows; then the node window goes first */
static void shared_freed_first(void) {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int *mine;
    MPI_Win shm, win;
    MPI_Win_allocate_shared(sizeof(int), sizeof(int), MPI_INFO_NULL, node, &mine, &shm);
    MPI_Win_create(mine, sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_lock_all(0, win);
    MPI_Win_lock_all(0, shm);
    *mine = -rank;
    MPI_Win_sync(shm);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1) {
        int v = 4242;
        MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
        MPI_Win_flush(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(shm);
    SAY("shared, freed first: %d", *mine);
    MPI_Win_unlock_all(shm);
    MPI_Win_unlock_all(win);
    MPI_Win_free(&shm);
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
}

/* rma/lockcontention3: rank 1 updates rank 0's window under an exclusive lock; rank 0 frees the memory
 * (MPI_Free_mem: back to the heap) before MPI_Win_free, with no synchronization call of its own since the update
 * (it does not read it: its copies would see it only at the next one, docs/rma.md), then allocates again */
static void updated_then_free_mem(void) {
    int *block = NULL, n = 0;
    if (rank == 0) {
        n = MEDIUM;
        MPI_Alloc_mem(sizeof(int) * n, MPI_INFO_NULL, &block);
        for (int i = 0; i < n; i++) block[i] = -1;
    }
    MPI_Win win;
    MPI_Win_create(block, sizeof(int) * n, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    if (rank == 1) {
        int v[2] = {31, 32};
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Put(v, 2, MPI_INT, 0, 7, 2, MPI_INT, win);
        MPI_Win_unlock(0, win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) MPI_Free_mem(block);
    MPI_Win_free(&win);
    long sum = 0; /* the heap the freed block went back to serves the program again */
    for (int k = 1; k <= 8; k++) {
        int *again = malloc(sizeof(int) * (size_t)(k * 300));
        for (int i = 0; i < k * 300; i++) again[i] = k;
        sum += again[k * 300 - 1];
        free(again);
    }
    SAY("updated, memory freed, window freed, heap used again: %ld", sum);
}

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    fence_window(SMALL, 0);
    fence_window(LARGE, 0);
    fence_window(SMALL, 1);
    pscw_window();
    updated_by_free();
    shared_freed_first();
    updated_then_free_mem();
    SAY("done");
    MPI_Finalize();
    return 0;
}
