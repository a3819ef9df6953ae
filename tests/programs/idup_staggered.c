/* A manager-worker code: each worker starts duplicating the world for its result traffic with MPI_Comm_idup,
 * reports its readiness to the manager with a synchronous send, then waits for the duplicate; the manager collects
 * every report before it starts its own duplication.  Then all sum their results on the duplicate. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm results;
    MPI_Request dup;
    int ready = 0;
    if (rank == 0) {
        for (int w = 1; w < size; w++) {
            int report;
            MPI_Recv(&report, 1, MPI_INT, w, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            ready += report;
        }
        MPI_Comm_idup(MPI_COMM_WORLD, &results, &dup);
    } else {
        MPI_Comm_idup(MPI_COMM_WORLD, &results, &dup);
        int report = rank * 10;
        MPI_Ssend(&report, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    }
    MPI_Wait(&dup, MPI_STATUS_IGNORE);
    long result = (long)rank * rank + 1, total = 0;
    MPI_Allreduce(&result, &total, 1, MPI_LONG, MPI_SUM, results);
    if (rank == 0) printf("r0: reports %d\n", ready);
    printf("r%d: total %ld\n", rank, total);
    MPI_Comm_free(&results);
    MPI_Finalize();
    return 0;
}
