/* A code that sends two arrays as one message with a struct type, displacements relative to the first: here the
 * arrays lie a page apart and the page between them is not mapped (as after a free of a large block that lay
 * between two others).  MPI reads only the arrays; the message arrives whole.  `split_arrays [rounds]`. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, rounds = argc > 1 ? atoi(argv[1]) : 20;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long page = sysconf(_SC_PAGESIZE);
    char *base = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    munmap(base + page, page); /* the hole between the two arrays */
    double *a = (double *)base, *b = (double *)(base + 2 * page);
    int n = (int)(page / sizeof(double));
    int lens[2] = {n, n};
    MPI_Aint disp[2] = {0, 2 * page};
    MPI_Datatype types[2] = {MPI_DOUBLE, MPI_DOUBLE}, pair;
    MPI_Type_create_struct(2, lens, disp, types, &pair);
    MPI_Type_commit(&pair);
    double total = 0;
    for (int round = 0; round < rounds; round++) {
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        for (int i = 0; i < n; i++) a[i] = rank + round + i * 1e-3, b[i] = -(rank + round) - i * 1e-3;
        MPI_Sendrecv_replace(a, 1, pair, to, round, from, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (int i = 0; i < n; i++) total += a[i] - b[i];
    }
    double all = 0;
    MPI_Reduce(&total, &all, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    printf("r%d: received %.6f\n", rank, total);
    if (rank == 0) printf("r0: sum %.6f\n", all);
    MPI_Type_free(&pair);
    MPI_Finalize();
    return 0;
}
