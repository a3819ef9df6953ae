/* A small buffer freed and allocated again, its bytes printed without being written: what the allocator left
 * there (natively, the freed buffer's old contents). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    char *old = malloc(200);
    memset(old, 1, 200);
    free(old);
    volatile unsigned char *again = malloc(200);
    printf("r0: unwritten bytes %d %d\n", again[20], again[199]);
    free((void *)again);
    MPI_Finalize();
    return 0;
}
