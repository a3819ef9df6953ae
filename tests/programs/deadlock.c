/* A job that hangs the way real ones do: a few steps of work, then rank 0 waits
 * for a message rank 1 never sends (a tag mismatch), while the other ranks wait
 * in a barrier.  Only a signal ends it. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double local = rank + 1.0, total = 0.0;
    for (int step = 0; step < 5; step++) MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("r%d: total %g, now waiting\n", rank, total);
    fflush(stdout);
    if (rank == 0 && size > 1) {
        double x;
        MPI_Recv(&x, 1, MPI_DOUBLE, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* rank 1 sends with tag 98 */
    } else if (rank == 1) {
        MPI_Send(&local, 1, MPI_DOUBLE, 0, 98, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
