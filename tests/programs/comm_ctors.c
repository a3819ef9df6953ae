/* Communicator constructors whose results depend on who is a member, and the
 * code that first showed SDR getting one wrong: a dense matrix product on a
 * 1 x P process grid (SUMMA: A's columns broadcast along grid rows, B's rows
 * along grid columns), whose row and column communicators come from
 * MPI_Comm_create over disjoint groups, one per row and per column.  On a
 * 1 x P grid each column communicator has one process.  Then
 * MPI_Comm_create (disjoint groups, a group of some ranks, the empty group),
 * MPI_Comm_split (disjoint colours, MPI_UNDEFINED, overlapping communicators
 * used in turn), MPI_Comm_split_type (shared memory, MPI_UNDEFINED) and
 * MPI_Comm_dup_with_info, MPI_Cart_create (a grid without the last rank) and
 * MPI_Cart_sub (rows, columns, nothing kept), each printing what its
 * membership gives: sizes, ranks and sums over the new communicator. */
#include "battery.h"
#include <stdlib.h>

#define N 12 /* matrix order: divisible by every grid width up to 4 */

static double a_at(int r, int c) { return (double)((r + 2 * c) % 7 - 3); }
static double b_at(int r, int c) { return (double)((3 * r + c) % 5 - 2); }

/* the communicator of the processes in `group`: every process passes the group it belongs to */
static MPI_Comm comm_of_group(const int *ranks, int n) {
    MPI_Group world, group;
    MPI_Comm comm;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, n, ranks, &group);
    MPI_Comm_create(MPI_COMM_WORLD, group, &comm);
    MPI_Group_free(&group);
    MPI_Group_free(&world);
    return comm;
}

/* "what: size S rank R sum-of-world-ranks T", or "what: none" for MPI_COMM_NULL; frees the communicator */
static void describe(const char *what, MPI_Comm comm) {
    if (comm == MPI_COMM_NULL) {
        SAY("%s: none", what);
        return;
    }
    int r, s, sum;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &s);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm);
    SAY("%s: size %d rank %d sum of world ranks %d", what, s, r, sum);
    MPI_Comm_free(&comm);
}

static void matrix_product(void) {
    int prows = 1, pcols = size, myrow = rank / pcols, mycol = rank % pcols;
    int rows = N / prows, cols = N / pcols;
    int *members = malloc(sizeof(int) * (size_t)size);
    for (int j = 0; j < pcols; j++) members[j] = myrow * pcols + j;
    MPI_Comm row = comm_of_group(members, pcols);
    for (int i = 0; i < prows; i++) members[i] = i * pcols + mycol;
    MPI_Comm col = comm_of_group(members, prows);
    free(members);
    int rs, cs;
    MPI_Comm_size(row, &rs);
    MPI_Comm_size(col, &cs);
    SAY("grid %d x %d: row size %d column size %d", prows, pcols, rs, cs);

    double *acol = malloc(sizeof(double) * rows), *brow = malloc(sizeof(double) * cols);
    double *c = calloc((size_t)(rows * cols), sizeof(double));
    double t0 = MPI_Wtime();
    for (int k = 0; k < N; k++) {
        int acol_owner = k / cols, brow_owner = k / rows; /* their ranks in the row and column communicators */
        if (mycol == acol_owner)
            for (int i = 0; i < rows; i++) acol[i] = a_at(myrow * rows + i, k);
        if (myrow == brow_owner)
            for (int j = 0; j < cols; j++) brow[j] = b_at(k, mycol * cols + j);
        MPI_Bcast(acol, rows, MPI_DOUBLE, acol_owner, row);
        MPI_Bcast(brow, cols, MPI_DOUBLE, brow_owner, col);
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < cols; j++) c[i * cols + j] += acol[i] * brow[j];
    }
    double local = 0, rowsum = 0, total = 0, serial = 0;
    for (int x = 0; x < rows * cols; x++) local += c[x] * (x % 3 + 1);
    MPI_Allreduce(&local, &rowsum, 1, MPI_DOUBLE, MPI_SUM, row);
    MPI_Allreduce(&rowsum, &total, 1, MPI_DOUBLE, MPI_SUM, col);
    for (int i = 0; i < N; i++) /* the same weighted sum, computed alone */
        for (int j = 0; j < N; j++) {
            double v = 0;
            for (int k = 0; k < N; k++) v += a_at(i, k) * b_at(k, j);
            serial += v * (((i % rows) * cols + j % cols) % 3 + 1);
        }
    double elapsed = MPI_Wtime() - t0, slowest;
    MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    SAY("matrix product checksum %.1f (serial %.1f)", total, serial);
    if (rank == 0) fprintf(stderr, "matrix product: %.3f ms\n", slowest * 1e3);
    free(acol), free(brow), free(c);
    MPI_Comm_free(&row);
    MPI_Comm_free(&col);
}

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    matrix_product();

    /* Comm_create: disjoint groups (even and odd ranks, each highest first) */
    int *ranks = malloc(sizeof(int) * (size_t)size), n = 0;
    for (int r = size - 1; r >= 0; r--)
        if (r % 2 == rank % 2) ranks[n++] = r;
    describe("create parity", comm_of_group(ranks, n));
    /* a group of some ranks (the last and the first): the others pass it too and get MPI_COMM_NULL */
    ranks[0] = size - 1, ranks[1] = 0;
    describe("create ends", comm_of_group(ranks, size > 1 ? 2 : 1));
    MPI_Comm empty;
    MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_EMPTY, &empty);
    describe("create empty", empty);
    free(ranks);

    /* Comm_split: disjoint colours with keys reversed; MPI_UNDEFINED for rank 1; one colour for all */
    MPI_Comm split;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 3, size - rank, &split);
    describe("split mod 3", split);
    MPI_Comm_split(MPI_COMM_WORLD, rank == 1 ? MPI_UNDEFINED : 5, rank, &split);
    describe("split without rank 1", split);
    /* overlapping: pairs {0,1},{2,3}.. and {1,2},{3,4}.., used in turn (a ring of pairwise sums) */
    MPI_Comm low, high;
    MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &low);
    MPI_Comm_split(MPI_COMM_WORLD, (rank + 1) / 2, rank, &high);
    int v = rank + 1;
    for (int round = 0; round < 3; round++) {
        int w;
        MPI_Allreduce(&v, &w, 1, MPI_INT, MPI_SUM, round % 2 ? high : low);
        v = w % 1000;
    }
    SAY("split overlapping pairs: %d", v);
    describe("split low pairs", low);
    describe("split high pairs", high);

    /* Comm_split_type: shared memory with keys reversed; MPI_UNDEFINED for odd ranks */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, size - rank, MPI_INFO_NULL, &node);
    describe("split_type shared", node);
    MPI_Comm_split_type(MPI_COMM_WORLD, rank % 2 ? MPI_UNDEFINED : MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    describe("split_type even", node);

    /* Comm_dup_with_info of a split communicator */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &split);
    MPI_Comm dup;
    MPI_Comm_dup_with_info(split, info, &dup);
    MPI_Info_free(&info);
    int cmp;
    MPI_Comm_compare(split, dup, &cmp);
    SAY("dup_with_info congruent %d", cmp == MPI_CONGRUENT);
    describe("dup_with_info", dup);
    MPI_Comm_free(&split);

    /* Cart_create over all ranks but the last (it gets MPI_COMM_NULL), periodic in its first dimension; then
     * Cart_sub: the rows, the columns and nothing kept (each process alone) */
    int dims[2] = {0, 0}, periods[2] = {1, 0}, cells = size > 1 ? size - 1 : 1;
    MPI_Dims_create(cells, 2, dims);
    MPI_Comm grid;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid);
    if (grid == MPI_COMM_NULL) {
        SAY("cart: none");
    } else {
        int me, coords[2], up, down, left, right, kind, nd;
        MPI_Comm_rank(grid, &me);
        MPI_Cart_coords(grid, me, 2, coords);
        MPI_Cart_shift(grid, 0, 1, &up, &down);
        MPI_Cart_shift(grid, 1, -1, &left, &right);
        MPI_Topo_test(grid, &kind);
        SAY("cart %d x %d: rank %d coords %d %d shifts %d %d %d %d cart %d", dims[0], dims[1], me, coords[0],
            coords[1], up, down, left, right, kind == MPI_CART);
        int keep[3][2] = {{0, 1}, {1, 0}, {0, 0}};
        const char *names[3] = {"cart_sub row", "cart_sub column", "cart_sub none"};
        for (int i = 0; i < 3; i++) {
            MPI_Comm sub;
            MPI_Cart_sub(grid, keep[i], &sub);
            MPI_Cartdim_get(sub, &nd);
            SAY("%s: %d dimensions", names[i], nd);
            describe(names[i], sub);
        }
        describe("cart", grid);
    }

    SAY("done");
    MPI_Finalize();
    return 0;
}
