/* Two threads inside MPI at once, as a program at MPI_THREAD_MULTIPLE may be: on rank 0 one thread waits for the
 * results while another waits for a progress report, both from rank 1, which sends them a moment later.
 * Prints "rR: ..." lines. */
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (rank == 0) fprintf(stderr, "MPI does not support the requested level of threading\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double result = 0, progress = 0;
    if (rank == 0) {
#pragma omp parallel sections num_threads(2)
        {
#pragma omp section
            MPI_Recv(&result, 1, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
#pragma omp section
            MPI_Recv(&progress, 1, MPI_DOUBLE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        printf("r0: result %.1f progress %.1f\n", result, progress);
    } else if (rank == 1) {
        sleep(2); /* both of rank 0's threads are waiting by then */
        result = 42, progress = 1;
        MPI_Send(&progress, 1, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD);
        MPI_Send(&result, 1, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
