/* Rank 0 learns which process it is from rank 1, as codes that elect a node leader by process id do: it sends its
 * pid, rank 1 sends the leader's pid back, and only the process so named takes part in a step.  Natively every
 * rank takes the step; a copy of rank 0 has a pid of its own and receives its representative's, so it skips the
 * step its representative takes (its path parts from its representative's). */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int pid = (int)getpid(), leader = -1;
    if (rank == 0) {
        MPI_Send(&pid, 1, MPI_INT, 1, 7, MPI_COMM_WORLD);
        MPI_Recv(&leader, 1, MPI_INT, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        MPI_Recv(&leader, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&leader, 1, MPI_INT, 0, 8, MPI_COMM_WORLD);
    }
    int takes_part = rank != 0 || leader == pid;
    double x = rank + 1.0, sum = 0;
    for (int step = 0; step < 5; step++) {
        if (takes_part) MPI_Barrier(MPI_COMM_WORLD);
        MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        x = sum / 2;
    }
    printf("r%d: sum %.6f\n", rank, sum);
    MPI_Finalize();
    return 0;
}
