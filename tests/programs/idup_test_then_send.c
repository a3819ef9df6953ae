/* A coordinator that hands out work while its communicator for results is being duplicated: every rank starts
 * MPI_Comm_idup of the world; rank 0 checks once with MPI_Test whether the duplicate is there yet (it logs how it
 * went), then sends each worker its share, and only then waits for the duplicate.  The workers receive their share
 * before they wait for theirs.  Then everyone sums its results on the duplicate. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm results;
    MPI_Request dup;
    MPI_Comm_idup(MPI_COMM_WORLD, &results, &dup);
    int share = 0;
    if (rank == 0) {
        int ready = 0;
        MPI_Test(&dup, &ready, MPI_STATUS_IGNORE); /* a nonblocking check: the workers are not waiting on it yet */
        for (int w = 1; w < size; w++) {
            int work = 100 + w;
            MPI_Send(&work, 1, MPI_INT, w, 7, MPI_COMM_WORLD);
        }
        share = 100;
        if (!ready) MPI_Wait(&dup, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(&share, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&dup, MPI_STATUS_IGNORE);
    }
    long result = (long)share * (rank + 1), total = 0;
    MPI_Allreduce(&result, &total, 1, MPI_LONG, MPI_SUM, results);
    printf("r%d: share %d, total %ld\n", rank, share, total);
    MPI_Comm_free(&results);
    MPI_Finalize();
    return 0;
}
