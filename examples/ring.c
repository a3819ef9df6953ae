/* Bundled example: a ring exchange with some computation between messages,
 * and a global sum.  Every copy of a rank prints the same lines; under
 * echorun only copy 0's reach the terminal. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double value = rank + 1.0, from_left = 0.0, work = 0.0;
    for (int step = 0; step < 20; step++) {
        for (int i = 1; i < 200000; i++) work += sin(value * i) / i; /* the compute phase */
        MPI_Sendrecv(&value, 1, MPI_DOUBLE, (rank + 1) % size, step, &from_left, 1, MPI_DOUBLE,
                     (rank + size - 1) % size, step, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        value = 0.5 * (value + from_left);
    }
    double total;
    MPI_Allreduce(&value, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d: value %.6f, sum %.6f, work %.6f\n", rank, size, value, total, work);
    MPI_Finalize();
    return 0;
}
