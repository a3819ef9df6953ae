/* Rank 0 learns which process it is from rank 1, as codes that tell their processes apart by a random token (a
 * UUID drawn from the kernel) do: it sends its token, rank 1 sends the leader's token back, and only the process
 * so named takes part in a step.  Natively every rank takes the step; a copy of rank 0 draws a token of its own
 * and receives its representative's, so it skips the step its representative takes (its path parts from its
 * representative's). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    uint64_t token = 0, leader = 0;
    FILE *random = fopen("/dev/urandom", "rb");
    if (!random || fread(&token, sizeof token, 1, random) != 1) MPI_Abort(MPI_COMM_WORLD, 1);
    fclose(random);
    if (rank == 0) {
        MPI_Send(&token, 1, MPI_UINT64_T, 1, 7, MPI_COMM_WORLD);
        MPI_Recv(&leader, 1, MPI_UINT64_T, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        MPI_Recv(&leader, 1, MPI_UINT64_T, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&leader, 1, MPI_UINT64_T, 0, 8, MPI_COMM_WORLD);
    }
    int takes_part = rank != 0 || leader == token;
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
