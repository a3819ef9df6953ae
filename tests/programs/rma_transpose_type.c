/* A transpose done by the target datatype (as MPICH's rma/transpose tests and codes that transpose on the fly do):
 * rank 0 Puts its n x n matrix into rank 1's window through a type that takes it column by column, in a fence
 * epoch; rank 1 checks that it holds the transpose.  The type covers one run of the window, in another order.
 * Usage: rma_transpose_type [n] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n = argc > 1 ? atoi(argv[1]) : 8;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int *a = malloc(sizeof(int) * (size_t)n * n);
    for (int i = 0; i < n * n; i++) a[i] = rank == 0 ? i : -1;
    MPI_Datatype column, transposed;
    MPI_Type_vector(n, 1, n, MPI_INT, &column);
    MPI_Type_create_hvector(n, 1, sizeof(int), column, &transposed);
    MPI_Type_commit(&transposed);
    MPI_Win win;
    MPI_Win_create(a, (MPI_Aint)(sizeof(int) * (size_t)n * n), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    if (rank == 0) MPI_Put(a, n * n, MPI_INT, 1, 0, 1, transposed, win);
    MPI_Win_fence(0, win);
    int errors = 0;
    if (rank == 1)
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) errors += a[i * n + j] != j * n + i;
    printf("r%d: %d elements wrong\n", rank, errors);
    MPI_Win_free(&win);
    MPI_Type_free(&column);
    MPI_Type_free(&transposed);
    free(a);
    MPI_Finalize();
    return errors != 0;
}
