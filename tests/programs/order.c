/* A result that depends on message arrival order: rank 0 takes 30 messages
 * with MPI_ANY_SOURCE, answers each sender in turn, and folds the senders'
 * ranks into a number in arrival order; the final value is broadcast. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int per_worker = 10;
    double folded = 0;
    if (rank == 0) {
        for (int i = 0; i < per_worker * (size - 1); i++) {
            int v;
            MPI_Status st;
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &st);
            folded = folded * 1.5 + st.MPI_SOURCE;
            MPI_Send(&i, 1, MPI_INT, st.MPI_SOURCE, 1, MPI_COMM_WORLD);
        }
    } else {
        for (int i = 0; i < per_worker; i++) {
            int ack;
            MPI_Send(&rank, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
            MPI_Recv(&ack, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    MPI_Bcast(&folded, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    printf("r%d: folded %.17g\n", rank, folded);
    MPI_Finalize();
    return 0;
}
