/* A halo exchange through a node's shared memory, written the way codes ported to MPI-3 shared memory often are:
 * each rank stores its boundary values into its segment of an MPI_Win_allocate_shared window, tells its right
 * neighbour with a message, and the neighbour reads them with plain loads, without MPI_Win_sync (strictly, the MPI
 * memory model wants one; on x86 it works natively).  The ranks then sum what they read and check the total
 * against the one they can compute: the program's own validation, as NPB's and the proxy apps' are. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 64

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int nrank, nsize;
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_size(node, &nsize);
    double *mine;
    MPI_Win win;
    MPI_Win_allocate_shared(N * sizeof(double), sizeof(double), MPI_INFO_NULL, node, &mine, &win);
    int left = (nrank + nsize - 1) % nsize, right = (nrank + 1) % nsize;
    MPI_Aint lsize;
    int disp;
    double *theirs;
    MPI_Win_shared_query(win, left, &lsize, &disp, &theirs);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    double expected = 0, total = 0;
    int ok = 1;
    for (int step = 1; step <= 3; step++) {
        for (int i = 0; i < N; i++) mine[i] = 1000.0 * step + 10.0 * nrank + i;
        int token = step;
        MPI_Sendrecv_replace(&token, 1, MPI_INT, right, 0, left, 0, node, MPI_STATUS_IGNORE);
        double sum = 0;
        for (int i = 0; i < N; i++) sum += theirs[i];
        MPI_Allreduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, node);
        expected = 0;
        for (int q = 0; q < nsize; q++)
            for (int i = 0; i < N; i++) expected += 1000.0 * step + 10.0 * q + i;
        if (total != expected) ok = 0;
        MPI_Barrier(node); /* nobody stores the next step's values before everyone has read */
    }
    MPI_Win_unlock_all(win);
    printf("r%d: halo total %.1f, expected %.1f: %s\n", rank, total, expected, ok ? "validated" : "FAILED");
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return ok ? 0 : 1;
}
