/* Rank 1 reads past the end of a block and leaks 100 bytes; rank 0 is clean.
 * Output does not depend on the bad read. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int peek(const int *a, int i) { return a[i]; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int *a = calloc(10, sizeof(int));
    volatile int x = 0;
    if (rank == 1) {
        x = peek(a, 10);          /* invalid read of size 4 */
        char *lost = malloc(100); /* definitely lost */
        lost[0] = (char)x;
        lost = NULL;
    }
    int sum = 0, one = 1;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("r%d: sum %d\n", rank, sum);
    printf("r%d: done\n", rank);
    free(a);
    MPI_Finalize();
    return 0;
}
