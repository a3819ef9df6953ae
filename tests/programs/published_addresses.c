/* Addresses handed to MPI beside data, the way Global Arrays and ARMCI codes do it: a block descriptor (its
 * pointer, its length, its norm) allgathered so that every rank knows every block, the address of memory from
 * MPI_Alloc_mem allgathered and read back through the own slot (ARMCI_Malloc's pointer table), and a record
 * that points into a large buffer, a name constant and a local variable.  Every rank checks what it reads
 * through its own slot and prints what it computed. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    double *base; /* where the block lives, in the process that owns it */
    long n;       /* how many elements */
    double norm;  /* their sum, as the owner computed it */
} block_t;

typedef struct {
    double *big;      /* a buffer large enough that malloc maps it on its own */
    const char *name; /* a constant of the program */
    int *counter;     /* a local of main */
    long step;        /* (a long: no padding the program never wrote) */
} record_t;

static const char *names[] = {"density", "fock"};

int main(int argc, char **argv) {
    int rank, size, failures = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* the block descriptor, sent around first: the pointer beside its length and norm */
    long n = 64;
    double *local = malloc((size_t)n * sizeof *local);
    double norm = 0;
    for (long i = 0; i < n; i++) norm += local[i] = rank + 0.5 * (double)i;
    block_t me = {local, n, norm}, *blocks = malloc((size_t)size * sizeof *blocks);
    MPI_Allgather(&me, sizeof me, MPI_BYTE, blocks, sizeof me, MPI_BYTE, MPI_COMM_WORLD);
    double mine = 0;
    for (long i = 0; i < blocks[rank].n; i++) mine += blocks[rank].base[i];
    if (mine != blocks[rank].norm) failures++;

    /* ARMCI_Malloc: memory from MPI_Alloc_mem, every rank's address in a table, the own slot dereferenced */
    double *segment;
    MPI_Alloc_mem(1024 * sizeof(double), MPI_INFO_NULL, &segment);
    void **table = malloc((size_t)size * sizeof *table);
    MPI_Allgather(&segment, sizeof segment, MPI_BYTE, table, sizeof segment, MPI_BYTE, MPI_COMM_WORLD);
    double *own = table[rank];
    for (int i = 0; i < 1024; i++) own[i] = 2.0 * rank + i;
    double seg_sum = 0;
    for (int i = 0; i < 1024; i++) seg_sum += segment[i];

    /* a record of pointers into a large buffer, a constant and a local, broadcast by rank 0 and gathered back */
    int counter = 3;
    double *big = malloc(1 << 20);
    big[0] = 1.5;
    record_t rec = {big, names[rank % 2], &counter, 1}, *recs = malloc((size_t)size * sizeof *recs);
    MPI_Allgather(&rec, sizeof rec, MPI_BYTE, recs, sizeof rec, MPI_BYTE, MPI_COMM_WORLD);
    if (recs[rank].big != big || strcmp(recs[rank].name, names[rank % 2]) || *recs[rank].counter != 3) failures++;
    double use = recs[rank].big[0] * *recs[rank].counter;

    double local_total[3] = {mine, seg_sum, use}, total[3];
    MPI_Allreduce(local_total, total, 3, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("r%d: block %.1f of %ld, segment %.1f, record %s %.1f, totals %.1f %.1f %.1f, %s\n", rank, mine,
           blocks[rank].n, seg_sum, recs[rank].name, use, total[0], total[1], total[2],
           failures ? "WRONG" : "right");
    MPI_Free_mem(segment);
    free(recs);
    free(big);
    free(table);
    free(blocks);
    free(local);
    MPI_Finalize();
    return failures != 0;
}
