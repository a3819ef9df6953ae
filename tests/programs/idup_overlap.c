/* A solver library that keeps its messages apart from the application's: it duplicates the communicator it is given
 * with MPI_Comm_idup and sets up its local matrix while the duplication goes on, then sums on its own communicator. */
#include <mpi.h>
#include <stdio.h>

static double setup_matrix(int rank, double *diag, int n) {
    double trace = 0;
    for (int i = 0; i < n; i++) trace += diag[i] = 2.0 + rank + i * 0.25;
    return trace;
}

static double solver_init(MPI_Comm comm, MPI_Comm *own) {
    MPI_Request dup;
    MPI_Comm_idup(comm, own, &dup);
    int rank;
    MPI_Comm_rank(comm, &rank);
    double diag[16];
    double trace = setup_matrix(rank, diag, 16), total = 0;
    MPI_Wait(&dup, MPI_STATUS_IGNORE);
    MPI_Allreduce(&trace, &total, 1, MPI_DOUBLE, MPI_SUM, *own);
    return total;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm solver;
    double trace = solver_init(MPI_COMM_WORLD, &solver);
    printf("r%d: global trace %.2f\n", rank, trace);
    MPI_Comm_free(&solver);
    MPI_Finalize();
    return 0;
}
