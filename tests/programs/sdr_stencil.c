/* A send-deterministic iterative code for SDR's failure tests: 1-D heat
 * diffusion on a ring of ranks, halos received with MPI_ANY_SOURCE (in any
 * order: the tag says which side), a residual Allreduce every iteration, a
 * Bcast, a Gather and Isendrecv(_replace) now and then, and a communicator
 * split midway.  Whatever the arrival order, every rank sends the same messages: SDR's assumption.
 * Prints checksums every 10 iterations and at the end. */
#include "battery.h"
#include <stdlib.h>

#define CELLS 64

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    int iters = argc > 1 ? atoi(argv[1]) : 60;
    double u[CELLS + 2], v[CELLS + 2];
    for (int i = 0; i < CELLS + 2; i++) u[i] = (rank * CELLS + i) % 7;
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    MPI_Comm half = MPI_COMM_NULL;
    for (int it = 0; it < iters; it++) {
        MPI_Request reqs[2];
        double from_left, from_right;
        /* tag 1: a cell travelling right, tag 2: travelling left */
        MPI_Irecv(&from_left, 1, MPI_DOUBLE, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &reqs[0]);
        MPI_Irecv(&from_right, 1, MPI_DOUBLE, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, &reqs[1]);
        MPI_Send(&u[CELLS], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD);
        MPI_Send(&u[1], 1, MPI_DOUBLE, left, 2, MPI_COMM_WORLD);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        u[0] = from_left, u[CELLS + 1] = from_right;
        double local = 0, global = 0;
        for (int i = 1; i <= CELLS; i++) {
            v[i] = u[i] + 0.25 * (u[i - 1] - 2 * u[i] + u[i + 1]);
            local += (v[i] - u[i]) * (v[i] - u[i]);
        }
        for (int i = 1; i <= CELLS; i++) u[i] = v[i];
        MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (it == iters / 2) MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        if (half != MPI_COMM_NULL) { /* a collective on the derived communicator */
            double sum = 0;
            MPI_Allreduce(&u[1], &sum, 1, MPI_DOUBLE, MPI_SUM, half);
            u[1] = sum / 2 + u[1] / 2;
        }
        if (it % 10 == 9) {
            double all[1024], mine = u[CELLS / 2];
            MPI_Gather(&mine, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            double check = 0;
            if (rank == 0)
                for (int r = 0; r < size; r++) check += all[r] * (r + 1);
            MPI_Bcast(&check, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            /* MPI-4 Isendrecv around the ring, and its replace form the other way */
            int token[2] = {rank * 100 + it, 0}, back = rank;
            MPI_Request two[2];
            MPI_Isendrecv(&token[0], 1, MPI_INT, right, 5, &token[1], 1, MPI_INT, left, 5, MPI_COMM_WORLD, &two[0]);
            MPI_Isendrecv_replace(&back, 1, MPI_INT, left, 6, right, 6, MPI_COMM_WORLD, &two[1]);
            MPI_Waitall(2, two, MPI_STATUSES_IGNORE);
            SAY("iteration %d residual %.12e check %.12e ring %d %d", it + 1, global, check, token[1], back);
        }
    }
    double sum = 0;
    for (int i = 1; i <= CELLS; i++) sum += u[i];
    SAY("final sum %.12e", sum);
    if (half != MPI_COMM_NULL) MPI_Comm_free(&half);
    SAY("done");
    MPI_Finalize();
    return 0;
}
