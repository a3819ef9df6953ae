/* A distributed work queue on passive-target one-sided communication, as codes write one: rank 0 holds the next
 * task number, which every rank takes with MPI_Fetch_and_op under a shared lock until none is left; the result of
 * task t is added to a running sum kept by rank t % size, read and written back under an exclusive lock (a lost
 * update would show if two ranks held it at once), and each task is ticked off in rank 0's table by an Accumulate.
 * Then every rank Puts a message into every rank's inbox under MPI_Win_lock_all, flushing each, and one rank wins a
 * flag by MPI_Compare_and_swap.  Each rank checks what it holds against the known answer and prints it; the tasks
 * a rank took depend on who asked first, so that line says "order:" (the same in a rank's replicas, not natively). */
#include "battery.h"
#include <stdlib.h>

enum { TASKS = 48 };

static long work(long t) { /* a task's result */
    long v = t;
    for (int i = 0; i < 20000; i++) v = (v * 31 + i) % 1000003;
    return v;
}

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    double t0 = MPI_Wtime();
    /* queue window (MPI_Win_allocate): [0] the next task (rank 0's), [1] this rank's running sum, [2] the flag,
     * [3 + t] rank 0's tick of task t */
    long *q;
    MPI_Win queue;
    MPI_Win_allocate((MPI_Aint)sizeof(long) * (3 + TASKS), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &q, &queue);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, queue);
    for (int i = 0; i < 3 + TASKS; i++) q[i] = 0;
    MPI_Win_unlock(rank, queue);
    /* inbox window (MPI_Win_create over the program's own array): slot s holds rank s's message */
    int *inbox = calloc((size_t)size, sizeof(int));
    MPI_Win mail;
    MPI_Win_create(inbox, (MPI_Aint)sizeof(int) * size, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mail);
    MPI_Barrier(MPI_COMM_WORLD);

    long one = 1, taken = 0, mine[TASKS];
    for (;;) {
        long t;
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, queue);
        MPI_Fetch_and_op(&one, &t, MPI_LONG, 0, 0, MPI_SUM, queue);
        MPI_Win_unlock(0, queue);
        if (t >= TASKS) break;
        mine[taken++] = t;
        long v = work(t), sum, owner = t % size;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, (int)owner, 0, queue);
        MPI_Get(&sum, 1, MPI_LONG, (int)owner, 1, 1, MPI_LONG, queue);
        MPI_Win_flush((int)owner, queue);
        sum += v;
        MPI_Put(&sum, 1, MPI_LONG, (int)owner, 1, 1, MPI_LONG, queue);
        MPI_Win_unlock((int)owner, queue);
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, queue);
        MPI_Accumulate(&one, 1, MPI_LONG, 0, 3 + t, 1, MPI_LONG, MPI_SUM, queue);
        MPI_Win_unlock(0, queue);
    }
    printf("r%d: order: tasks", rank);
    for (long i = 0; i < taken; i++) printf(" %ld", mine[i]);
    printf("\n");

    /* every rank's message into every inbox, one epoch for all */
    int message = 1000 + rank;
    MPI_Win_lock_all(0, mail);
    for (int s = 0; s < size; s++) {
        MPI_Put(&message, 1, MPI_INT, s, rank, 1, MPI_INT, mail);
        MPI_Win_flush(s, mail);
    }
    MPI_Win_unlock_all(mail);
    /* one winner of the flag on the last rank */
    long none = 0, me = rank + 1, before;
    MPI_Win_lock(MPI_LOCK_SHARED, size - 1, 0, queue);
    MPI_Compare_and_swap(&me, &none, &before, MPI_LONG, size - 1, 2, queue);
    MPI_Win_flush_all(queue);
    MPI_Win_unlock(size - 1, queue);
    MPI_Barrier(MPI_COMM_WORLD); /* every epoch ended: each rank reads its own windows */

    int bad = 0;
    long expected = 0, got_sum, total, ticks = 0;
    for (long t = rank; t < TASKS; t += size) expected += work(t);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, queue);
    got_sum = q[1];
    if (rank == 0)
        for (int t = 0; t < TASKS; t++) ticks += q[3 + t] == 1;
    long flag = q[2];
    MPI_Win_unlock(rank, queue);
    if (got_sum != expected) {
        bad++;
        SAY("FAILED: running sum %ld, expected %ld", got_sum, expected);
    }
    if (rank == 0 && (ticks != TASKS || q[0] != TASKS + size)) {
        bad++;
        SAY("FAILED: %ld of %d tasks ticked once, counter %ld", ticks, TASKS, q[0]);
    }
    for (int s = 0; s < size; s++)
        if (inbox[s] != 1000 + s) {
            bad++;
            SAY("FAILED: inbox slot %d holds %d", s, inbox[s]);
        }
    long winners = before == 0, all_winners, flag_ok = rank != size - 1 || (flag >= 1 && flag <= size);
    MPI_Allreduce(&winners, &all_winners, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (all_winners != 1 || !flag_ok) {
        bad++;
        SAY("FAILED: %ld winners of the flag (%ld)", all_winners, flag);
    }
    MPI_Allreduce(&got_sum, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    SAY("running sum %ld, total %ld, inbox ok %d, one winner %d", got_sum, total, bad == 0, all_winners == 1);
    double elapsed = MPI_Wtime() - t0, slowest;
    MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) SAY("time %.3f s", slowest);
    MPI_Win_free(&mail);
    MPI_Win_free(&queue);
    free(inbox);
    if (!bad) SAY("validated");
    MPI_Finalize();
    return bad != 0;
}
