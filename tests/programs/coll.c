/* Every blocking collective, with user-defined (non-commutative) ops, derived
 * types, MPI_IN_PLACE and uneven v-counts. */
#include "battery.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* 2x2 matrix product: associative, not commutative */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    long *a = in, *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        long r[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                     a[2] * b[1] + a[3] * b[3]};
        memcpy(b, r, sizeof r);
    }
}

static long sum(const long *v, int n) {
    long s = 0;
    for (int i = 0; i < n; i++) s += v[i] * (i + 1);
    return s;
}

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    int root = size - 1;
    long *all = calloc((size_t)size * 8, sizeof(long));
    long mine[8];
    for (int i = 0; i < 8; i++) mine[i] = rank * 8 + i;

    MPI_Barrier(MPI_COMM_WORLD);
    long b[4] = {0};
    if (rank == root) for (int i = 0; i < 4; i++) b[i] = 40 + i;
    MPI_Bcast(b, 4, MPI_LONG, root, MPI_COMM_WORLD);
    SAY("bcast %ld %ld %ld %ld", b[0], b[1], b[2], b[3]);

    long red[8] = {0};
    MPI_Reduce(mine, red, 8, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) SAY("reduce %ld", sum(red, 8));
    MPI_Allreduce(mine, red, 8, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    SAY("allreduce max %ld", sum(red, 8));
    long inplace[2] = {rank, 1};
    MPI_Allreduce(MPI_IN_PLACE, inplace, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    SAY("allreduce in place %ld %ld", inplace[0], inplace[1]);

    /* user op on a contiguous type of 4 longs */
    MPI_Datatype mat;
    MPI_Type_contiguous(4, MPI_LONG, &mat);
    MPI_Type_commit(&mat);
    MPI_Op op;
    MPI_Op_create(matmul, 0, &op);
    long m[4] = {1, rank + 1, 0, 1}, prod[4];
    MPI_Allreduce(m, prod, 1, mat, op, MPI_COMM_WORLD);
    SAY("user op product %ld %ld %ld %ld", prod[0], prod[1], prod[2], prod[3]);
    MPI_Scan(m, prod, 1, mat, op, MPI_COMM_WORLD);
    SAY("scan product %ld %ld %ld %ld", prod[0], prod[1], prod[2], prod[3]);
    long ex = -1;
    long one = rank + 1;
    MPI_Exscan(&one, &ex, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank > 0) SAY("exscan %ld", ex);
    MPI_Op_free(&op);
    MPI_Type_free(&mat);

    MPI_Gather(mine, 8, MPI_LONG, all, 8, MPI_LONG, root, MPI_COMM_WORLD);
    if (rank == root) SAY("gather %ld", sum(all, 8 * size));
    long piece[8] = {0};
    MPI_Scatter(all, 8, MPI_LONG, piece, 8, MPI_LONG, root, MPI_COMM_WORLD);
    SAY("scatter %ld", sum(piece, 8));
    MPI_Allgather(mine, 2, MPI_LONG, all, 2, MPI_LONG, MPI_COMM_WORLD);
    SAY("allgather %ld", sum(all, 2 * size));
    MPI_Alltoall(all, 1, MPI_LONG, piece, 1, MPI_LONG, MPI_COMM_WORLD);
    SAY("alltoall %ld", sum(piece, size < 8 ? size : 8));

    /* uneven v-collectives: rank i contributes i+1 values */
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
    int total = 0;
    for (int i = 0; i < size; i++) { counts[i] = i + 1; displs[i] = total + i; total += i + 1; }
    long *vbuf = calloc((size_t)(total + size), sizeof(long));
    long contrib[16];
    for (int i = 0; i <= rank; i++) contrib[i] = 100 * rank + i;
    MPI_Gatherv(contrib, rank + 1, MPI_LONG, vbuf, counts, displs, MPI_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) SAY("gatherv %ld", sum(vbuf, total + size));
    memset(vbuf, 0, sizeof(long) * (size_t)(total + size));
    MPI_Allgatherv(contrib, rank + 1, MPI_LONG, vbuf, counts, displs, MPI_LONG, MPI_COMM_WORLD);
    SAY("allgatherv %ld (gap %ld)", sum(vbuf, total + size), size > 1 ? vbuf[1] : 0L);
    long sv[16] = {0};
    MPI_Scatterv(vbuf, counts, displs, MPI_LONG, sv, rank + 1, MPI_LONG, 0, MPI_COMM_WORLD);
    SAY("scatterv %ld", sum(sv, rank + 1));

    int *sc = malloc(sizeof(int) * (size_t)size), *sd = malloc(sizeof(int) * (size_t)size);
    int *rc = malloc(sizeof(int) * (size_t)size), *rd = malloc(sizeof(int) * (size_t)size);
    long *sb = malloc(sizeof(long) * (size_t)size * 4), *rb = calloc((size_t)size * 4, sizeof(long));
    for (int i = 0; i < size; i++) {
        sc[i] = (rank + i) % 3; sd[i] = 4 * i; rc[i] = (i + rank) % 3; rd[i] = 4 * i;
        for (int k = 0; k < 4; k++) sb[4 * i + k] = 1000 * rank + 10 * i + k;
    }
    MPI_Alltoallv(sb, sc, sd, MPI_LONG, rb, rc, rd, MPI_LONG, MPI_COMM_WORLD);
    SAY("alltoallv %ld", sum(rb, 4 * size));
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)size);
    for (int i = 0; i < size; i++) { types[i] = MPI_LONG; sd[i] *= (int)sizeof(long); rd[i] *= (int)sizeof(long); }
    memset(rb, 0, sizeof(long) * (size_t)size * 4);
    MPI_Alltoallw(sb, sc, sd, types, rb, rc, rd, types, MPI_COMM_WORLD);
    SAY("alltoallw %ld", sum(rb, 4 * size));

    for (int i = 0; i < size; i++) counts[i] = 1 + i % 2;
    long *rsin = malloc(sizeof(long) * (size_t)(2 * size)), rsout[2] = {0, 0};
    for (int i = 0; i < 2 * size; i++) rsin[i] = rank + i;
    MPI_Reduce_scatter(rsin, rsout, counts, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    SAY("reduce_scatter %ld %ld", rsout[0], counts[rank] > 1 ? rsout[1] : 0L);
    MPI_Reduce_scatter_block(rsin, rsout, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    SAY("reduce_scatter_block %ld %ld", rsout[0], rsout[1]);

    /* the root's own block in place */
    for (int i = 0; i < 8 * size; i++) all[i] = i;
    if (rank == 0) MPI_Gather(MPI_IN_PLACE, 8, MPI_LONG, all, 8, MPI_LONG, 0, MPI_COMM_WORLD);
    else MPI_Gather(mine, 8, MPI_LONG, NULL, 0, MPI_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) SAY("gather in place %ld", sum(all, 8 * size));
    SAY("done");
    MPI_Finalize();
    return 0;
}
