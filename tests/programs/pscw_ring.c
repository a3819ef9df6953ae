/* A halo exchange around a ring in general active-target epochs (post/start/complete/wait), as codes that keep
 * their neighbours' data in windows write it: each rank exposes its window to its left neighbour (MPI_Win_post)
 * and accesses its right one's (MPI_Win_start), Puts its edge into the right neighbour's halo, and checks the halo
 * its left neighbour Put into its own window; it prints the halo's checksum each step.
 *   halo   an MPI_Win_allocate window of n doubles: the left neighbour's edge (a Put, and a zero-count Put from a
 *          pointer that is never read, as a code whose edge can be empty makes it), cleared first under a lock of
 *          the rank's own window (MPI's separate memory model);
 *   tally  an MPI_Win_create window over the program's own array: each step an Accumulate (MPI_SUM) of the origin's
 *          rank into the right neighbour's counter, a Get of the right neighbour's stamp (which it writes before it
 *          posts), and the exposure closed with an MPI_Win_test loop; at the end each rank reads its counter back
 *          with a Get on itself under a lock of its own window.
 * Each rank validates what it received ("rK: step S ... ok"), rank 0 prints the time (reduced to the slowest rank).
 * Usage: pscw_ring [steps] [n] */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, nprocs, left, right;
static MPI_Group left_group, right_group;

static double edge_value(int owner, int step, int i) { return owner * 1000.0 + step * 10.0 + i * 0.5; }

static int halo(int steps, int n) {
    double *edge = malloc(sizeof(double) * (size_t)n), *ghost, *unused = NULL;
    MPI_Win win;
    MPI_Win_allocate((MPI_Aint)(n * sizeof(double)), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &ghost, &win);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win);
    for (int i = 0; i < n; i++) ghost[i] = -1.0;
    MPI_Win_unlock(rank, win);
    int bad = 0;
    for (int step = 0; step < steps; step++) {
        for (int i = 0; i < n; i++) edge[i] = edge_value(rank, step, i);
        MPI_Win_post(left_group, 0, win);
        MPI_Win_start(right_group, 0, win);
        MPI_Put(edge, n, MPI_DOUBLE, right, 0, n, MPI_DOUBLE, win);
        MPI_Put(unused, 0, MPI_DOUBLE, right, 0, 0, MPI_DOUBLE, win);
        MPI_Win_complete(win);
        MPI_Win_wait(win);
        double sum = 0, expected = 0;
        int wrong = 0;
        for (int i = 0; i < n; i++) {
            sum += ghost[i];
            expected += edge_value(left, step, i);
            if (ghost[i] != edge_value(left, step, i)) wrong++;
        }
        bad += wrong;
        printf("r%d: step %d halo checksum %.3f (expected %.3f) %s\n", rank, step, sum, expected, wrong ? "WRONG" : "ok");
    }
    MPI_Win_free(&win);
    free(edge);
    return bad;
}

static int tally(int steps) {
    double box[2] = {0, 0}; /* box[0]: what the left neighbour accumulated; box[1]: my stamp, which it Gets */
    MPI_Win win;
    MPI_Win_create(box, (MPI_Aint)sizeof box, sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    int bad = 0;
    for (int step = 0; step < steps; step++) {
        box[1] = rank * 100.0 + step;
        MPI_Win_post(left_group, 0, win);
        MPI_Win_start(right_group, 0, win);
        double mine = rank + 1.0, stamp = -1;
        MPI_Accumulate(&mine, 1, MPI_DOUBLE, right, 0, 1, MPI_DOUBLE, MPI_SUM, win);
        MPI_Get(&stamp, 1, MPI_DOUBLE, right, 1, 1, MPI_DOUBLE, win);
        MPI_Win_complete(win);
        int done = 0;
        while (!done) MPI_Win_test(win, &done);
        double counter = (left + 1.0) * (step + 1);
        int wrong = box[0] != counter || stamp != right * 100.0 + step;
        bad += wrong;
        printf("r%d: step %d tally %.1f (expected %.1f) stamp %.1f %s\n", rank, step, box[0], counter, stamp,
               wrong ? "WRONG" : "ok");
    }
    double counter = -1;
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    MPI_Get(&counter, 1, MPI_DOUBLE, rank, 0, 1, MPI_DOUBLE, win);
    MPI_Win_unlock(rank, win);
    int wrong = counter != (left + 1.0) * steps;
    bad += wrong;
    printf("r%d: tally read back %.1f %s\n", rank, counter, wrong ? "WRONG" : "ok");
    MPI_Win_free(&win);
    return bad;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    int steps = argc > 1 ? atoi(argv[1]) : 3, n = argc > 2 ? atoi(argv[2]) : 16;
    left = (rank + nprocs - 1) % nprocs, right = (rank + 1) % nprocs;
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &left, &left_group);
    MPI_Group_incl(world, 1, &right, &right_group);
    MPI_Group_free(&world);
    double t0 = MPI_Wtime();
    int bad = halo(steps, n) + tally(steps), anybad;
    double t = MPI_Wtime() - t0, slowest;
    MPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("r0: pscw ring time %.3f s: %s\n", slowest, anybad ? "FAILED" : "validated");
    MPI_Group_free(&left_group);
    MPI_Group_free(&right_group);
    MPI_Finalize();
    return anybad != 0;
}
