/* One-sided communication: an epoch of each kind (fence, PSCW, exclusive and
 * shared locks, lock_all with flushes, request-based operations), atomic
 * counters, a dynamic window, accumulates from every rank into one target, a
 * shared-memory window (loads and stores in other ranks' segments) and a
 * window over MPI_COMM_SELF.
 * After each epoch every rank prints its window memory and what its gets
 * returned; lines whose values depend on the order in which origins reached a
 * target are marked "order:" (compared between copies only). */
#include "battery.h"
#include <stdlib.h>

enum { K = 13 };
static int mem[K];

/* print the window memory; nobody writes to it again before everyone printed */
static void show(const char *what) {
    printf("r%d: %s mem", rank, what);
    for (int i = 0; i < K; i++) printf(" %d", mem[i]);
    printf("\n");
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    int right = (rank + 1) % size, left = (rank + size - 1) % size, last = size - 1;
    for (int i = 0; i < K; i++) mem[i] = rank * 100 + i;
    MPI_Win win;
    MPI_Win_create(mem, sizeof mem, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_name(win, "battery window");
    int *base, flag, *flavor, *unit, len;
    MPI_Aint *wsize;
    char name[MPI_MAX_OBJECT_NAME];
    MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
    MPI_Win_get_attr(win, MPI_WIN_SIZE, &wsize, &flag);
    MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &unit, &flag);
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    MPI_Win_get_name(win, name, &len);
    MPI_Group wg;
    int gsize, grank;
    MPI_Win_get_group(win, &wg);
    MPI_Group_size(wg, &gsize);
    MPI_Group_rank(wg, &grank);
    SAY("window '%s' base ok %d size %ld unit %d flavor create %d group %d/%d", name, base == mem, (long)*wsize,
        *unit, *flavor == MPI_WIN_FLAVOR_CREATE, grank, gsize);
    /* the info of the window, as the representative's MPI answers */
    MPI_Info used, hint;
    int nkeys;
    MPI_Info_create(&hint);
    MPI_Info_set(hint, "accumulate_ordering", "rar,raw,war,waw");
    MPI_Win_set_info(win, hint);
    MPI_Info_free(&hint);
    MPI_Win_get_info(win, &used);
    MPI_Info_get_nkeys(used, &nkeys);
    printf("r%d: info", rank);
    for (int i = 0; i < nkeys; i++) {
        char key[MPI_MAX_INFO_KEY + 1], value[256];
        int vlen = sizeof value;
        MPI_Info_get_nthkey(used, i, key);
        MPI_Info_get_string(used, key, &vlen, value, &flag);
        printf(" %s=%s", key, value);
    }
    printf("\n");
    MPI_Info_free(&used);

    /* fence: put to the right, get from the left, accumulate into rank 0 */
    int got = -1, one = rank + 1, mine = rank;
    MPI_Win_fence(0, win);
    MPI_Put(&mine, 1, MPI_INT, right, 0, 1, MPI_INT, win);
    MPI_Get(&got, 1, MPI_INT, left, 3, 1, MPI_INT, win);
    MPI_Accumulate(&one, 1, MPI_INT, 0, 2, 1, MPI_INT, MPI_SUM, win);
    MPI_Win_fence(0, win);
    SAY("fence got %d", got);
    show("fence");

    /* PSCW: expose to the left neighbour, access the right one */
    MPI_Group lg, rg;
    MPI_Group_incl(wg, 1, &left, &lg);
    MPI_Group_incl(wg, 1, &right, &rg);
    int ten = rank * 10, got2[2] = {-1, -1};
    MPI_Win_post(lg, 0, win);
    MPI_Win_start(rg, 0, win);
    MPI_Put(&ten, 1, MPI_INT, right, 4, 1, MPI_INT, win);
    MPI_Get(got2, 2, MPI_INT, right, 5, 2, MPI_INT, win);
    MPI_Win_complete(win);
    flag = 0;
    while (!flag) MPI_Win_test(win, &flag);
    SAY("pscw got %d %d", got2[0], got2[1]);
    show("pscw");
    MPI_Group_free(&lg);
    MPI_Group_free(&rg);

    /* exclusive lock on the right neighbour; the target reads after a barrier */
    int thousand = rank + 1000;
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
    MPI_Put(&thousand, 1, MPI_INT, right, 6, 1, MPI_INT, win);
    MPI_Win_unlock(right, win);
    MPI_Barrier(MPI_COMM_WORLD);
    show("exclusive");
    /* shared locks: read it back */
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
    MPI_Get(&got, 1, MPI_INT, right, 6, 1, MPI_INT, win);
    MPI_Win_unlock(right, win);
    SAY("shared got %d", got);

    /* lock_all with flushes; the target reads after Win_sync and a barrier */
    int three = rank * 3;
    MPI_Win_lock_all(0, win);
    MPI_Put(&three, 1, MPI_INT, right, 7, 1, MPI_INT, win);
    MPI_Win_flush(right, win);
    MPI_Get(&got, 1, MPI_INT, right, 7, 1, MPI_INT, win);
    MPI_Win_flush_local(right, win);
    SAY("flush got %d", got);
    MPI_Win_flush_all(win);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    MPI_Win_sync(win);
    MPI_Win_unlock(rank, win);
    show("lock_all");

    /* a local store undone by a remote put before the next forward: the
     * representative's page equals what copies last received, a copy's does not */
    int restore = right * 100 + 12, token = 0;
    mem[12] = 0;
    MPI_Sendrecv_replace(&token, 1, MPI_INT, left, 5, right, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
    MPI_Put(&restore, 1, MPI_INT, right, 12, 1, MPI_INT, win);
    MPI_Win_unlock(right, win);
    MPI_Barrier(MPI_COMM_WORLD);
    show("restored");

    /* counters on rank 0: fetch-and-add (each rank gets a distinct ticket), and
     * compare-and-swap (one rank wins) */
    int inc = 1, ticket = -1, cmp = 9, swap = rank + 500, old = -1;
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Fetch_and_op(&inc, &ticket, MPI_INT, 0, 8, MPI_SUM, win);
    MPI_Compare_and_swap(&swap, &cmp, &old, MPI_INT, 0, 9, win);
    MPI_Win_unlock(0, win);
    printf("r%d: order: ticket %d cas saw %d\n", rank, ticket, old);
    int won = old == cmp, winners = 0, tickets = 0;
    MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&ticket, &tickets, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    SAY("cas winners %d ticket sum %d", winners, tickets);
    if (rank == 0) printf("r0: order: cas owner %d\n", mem[9]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) mem[9] = 9; /* back to a value that does not depend on the order */
    MPI_Barrier(MPI_COMM_WORLD);
    show("counters");

    /* request-based: Rput, Wait, flush, Rget, Wait */
    int seven = rank * 7;
    MPI_Request req;
    MPI_Win_lock_all(0, win);
    MPI_Rput(&seven, 1, MPI_INT, right, 10, 1, MPI_INT, win, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Win_flush(right, win);
    MPI_Rget(&got, 1, MPI_INT, right, 10, 1, MPI_INT, win, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    int acc = 2, before = -1;
    MPI_Rget_accumulate(&acc, 1, MPI_INT, &before, 1, MPI_INT, right, 11, 1, MPI_INT, MPI_PROD, win, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Raccumulate(&acc, 1, MPI_INT, right, 11, 1, MPI_INT, MPI_SUM, win, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    SAY("requests got %d before %d", got, before);
    show("requests");
    MPI_Group_free(&wg);
    MPI_Win_free(&win);

    /* a dynamic window: a region of several pages, its address exchanged */
    enum { D = 3000 };
    int *region = malloc(sizeof(int) * D);
    for (int i = 0; i < D; i++) region[i] = rank;
    MPI_Win dyn;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dyn);
    MPI_Win_attach(dyn, region, sizeof(int) * D);
    MPI_Aint addr, *addrs = malloc(sizeof(MPI_Aint) * (size_t)size);
    MPI_Get_address(region, &addr);
    MPI_Allgather(&addr, 1, MPI_AINT, addrs, 1, MPI_AINT, MPI_COMM_WORLD);
    int vals[2] = {rank + 40, rank + 41}, back[2] = {-1, -1};
    MPI_Win_fence(0, dyn);
    MPI_Put(vals, 2, MPI_INT, right, MPI_Aint_add(addrs[right], sizeof(int) * 2500), 2, MPI_INT, dyn);
    MPI_Get(back, 2, MPI_INT, left, MPI_Aint_add(addrs[left], sizeof(int) * 10), 2, MPI_INT, dyn);
    MPI_Win_fence(0, dyn);
    long sum = 0;
    for (int i = 0; i < D; i++) sum += region[i];
    SAY("dynamic got %d %d region[2500..2501] %d %d sum %ld", back[0], back[1], region[2500], region[2501], sum);
    MPI_Win_detach(dyn, region);
    MPI_Win_free(&dyn);
    free(region);
    free(addrs);

    /* accumulates from every rank into the last one, on MPI's memory */
    enum { A = 1000 };
    double *abuf, contrib[A], readback[A];
    MPI_Win aw;
    MPI_Win_allocate(sizeof(double) * A, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &abuf, &aw);
    MPI_Win_get_attr(aw, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    for (int i = 0; i < A; i++) {
        abuf[i] = 0;
        contrib[i] = (double)i * (rank + 1);
    }
    MPI_Win_fence(0, aw);
    MPI_Win_lock(MPI_LOCK_SHARED, last, 0, aw);
    MPI_Accumulate(contrib, A, MPI_DOUBLE, last, 0, A, MPI_DOUBLE, MPI_SUM, aw);
    MPI_Win_unlock(last, aw);
    MPI_Barrier(MPI_COMM_WORLD);
    double total = 0;
    for (int i = 0; i < A; i++) total += abuf[i];
    SAY("accumulated total %.1f abuf[999] %.1f flavor allocate %d", total, abuf[A - 1],
        *flavor == MPI_WIN_FLAVOR_ALLOCATE);
    MPI_Win_fence(0, aw);
    MPI_Get_accumulate(NULL, 0, MPI_DOUBLE, readback, A, MPI_DOUBLE, last, 0, A, MPI_DOUBLE, MPI_NO_OP, aw);
    MPI_Win_fence(0, aw);
    total = 0;
    for (int i = 0; i < A; i++) total += readback[i];
    SAY("read back total %.1f", total);
    MPI_Win_free(&aw);

    /* a shared-memory window: stores into this rank's and the right neighbour's
     * segments, loads from the neighbour's, each after Win_sync and a barrier */
    int *seg, *rseg, sdu, *sbase;
    MPI_Aint ssz, *sattr;
    MPI_Win shw;
    MPI_Win_allocate_shared(sizeof(int) * 4, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &seg, &shw);
    MPI_Win_get_attr(shw, MPI_WIN_BASE, &sbase, &flag);
    MPI_Win_get_attr(shw, MPI_WIN_SIZE, &sattr, &flag);
    MPI_Win_shared_query(shw, right, &ssz, &sdu, &rseg);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, shw);
    for (int i = 0; i < 4; i++) seg[i] = rank * 10 + i;
    MPI_Win_sync(shw);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(shw);
    int seen = rseg[1];
    MPI_Barrier(MPI_COMM_WORLD);
    rseg[3] = rank + 70;
    MPI_Win_sync(shw);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_sync(shw);
    SAY("shared base ok %d size %ld right's size %ld unit %d saw %d segment %d %d %d %d", sbase == seg, (long)*sattr,
        (long)ssz, sdu, seen, seg[0], seg[1], seg[2], seg[3]);
    MPI_Win_unlock_all(shw);
    MPI_Win_free(&shw);

    /* a window over MPI_COMM_SELF: each process's own, copies included */
    int own[2] = {rank, 0};
    MPI_Win sw;
    MPI_Win_create(own, sizeof own, sizeof(int), MPI_INFO_NULL, MPI_COMM_SELF, &sw);
    MPI_Win_fence(0, sw);
    MPI_Put(&own[0], 1, MPI_INT, 0, 1, 1, MPI_INT, sw);
    MPI_Win_fence(0, sw);
    MPI_Win_free(&sw);
    SAY("self window %d %d", own[0], own[1]);
    SAY("done");
    MPI_Finalize();
    return 0;
}
