/* One-sided kernels written as the Parallel Research Kernels' MPIRMA ones are, fence epochs only:
 *   stencil    a star stencil (radius 2) on an n x n grid split in row blocks; each rank's block and its ghost
 *              rows live in an MPI_Win_allocate window, and the halo rows are Put into the neighbours' ghosts;
 *   transpose  B = A^T with A split in row blocks; each rank transposes a block locally and Puts it into the
 *              target's B (an MPI_Win_create window of P contiguous blocks);
 *   tally      every rank Accumulates into every rank's counters (MPI_SUM), Gets its right neighbour's, and takes
 *              a ticket from rank 0 with MPI_Fetch_and_op;
 *   claims     every rank claims a slot of rank 0 with MPI_Compare_and_swap and counts itself with
 *              MPI_Get_accumulate.
 * Each rank validates its own results and prints them ("rK: ..."); rank 0 prints the time (reduced to the slowest rank).
 * Usage: rma_kernels [iterations] [n] */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define RADIUS 2
#define COEFX 1.0
#define COEFY 1.0

static int rank, nprocs;

static void stencil(int iterations, int n) {
    int first = rank * n / nprocs, rows = (rank + 1) * n / nprocs - first, width = n;
    /* rows + 2 RADIUS rows of ghosts, row-major: local row i (from -RADIUS) is row i + RADIUS */
    double *in, *out = calloc((size_t)rows * width, sizeof(double));
    MPI_Win win;
    MPI_Win_allocate((MPI_Aint)((rows + 2 * RADIUS) * width * sizeof(double)), sizeof(double), MPI_INFO_NULL,
                     MPI_COMM_WORLD, &in, &win);
    for (int i = -RADIUS; i < rows + RADIUS; i++)
        for (int j = 0; j < width; j++) in[(i + RADIUS) * width + j] = COEFX * (first + i) + COEFY * j;
    double weight[2 * RADIUS + 1][2 * RADIUS + 1] = {{0}};
    for (int ii = 1; ii <= RADIUS; ii++) {
        weight[RADIUS][RADIUS + ii] = weight[RADIUS + ii][RADIUS] = 1.0 / (2.0 * ii * RADIUS);
        weight[RADIUS][RADIUS - ii] = weight[RADIUS - ii][RADIUS] = -1.0 / (2.0 * ii * RADIUS);
    }
    int up = rank > 0 ? rank - 1 : MPI_PROC_NULL, down = rank < nprocs - 1 ? rank + 1 : MPI_PROC_NULL;
    int up_rows = first - (rank - 1) * n / nprocs; /* the upper neighbour's block: its lower ghosts follow it */
    MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
    for (int iter = 0; iter < iterations; iter++) {
        /* my first rows to the upper neighbour's lower ghosts, my last rows to the lower neighbour's upper ones */
        MPI_Put(&in[RADIUS * width], RADIUS * width, MPI_DOUBLE, up, (MPI_Aint)(up_rows + RADIUS) * width,
                RADIUS * width, MPI_DOUBLE, win);
        MPI_Put(&in[rows * width], RADIUS * width, MPI_DOUBLE, down, 0, RADIUS * width, MPI_DOUBLE, win);
        MPI_Win_fence(0, win);
        for (int i = 0; i < rows; i++) {
            int gi = first + i;
            if (gi < RADIUS || gi >= n - RADIUS) continue;
            for (int j = RADIUS; j < n - RADIUS; j++) {
                double v = 0;
                for (int jj = -RADIUS; jj <= RADIUS; jj++) v += weight[RADIUS][RADIUS + jj] * in[(i + RADIUS) * width + j + jj];
                for (int ii = -RADIUS; ii <= RADIUS; ii++)
                    if (ii) v += weight[RADIUS + ii][RADIUS] * in[(i + RADIUS + ii) * width + j];
                out[i * width + j] += v;
            }
        }
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < width; j++) in[(i + RADIUS) * width + j] += 1.0;
        MPI_Win_fence(0, win); /* nobody Puts into my ghosts before I read them */
    }
    double norm = 0;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < width; j++) norm += fabs(out[i * width + j]);
    double total;
    MPI_Allreduce(&norm, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    total /= (double)(n - 2 * RADIUS) * (n - 2 * RADIUS);
    double reference = iterations * (COEFX + COEFY);
    printf("r%d: stencil L1 norm %.12f, reference %.12f: %s\n", rank, total, reference,
           fabs(total - reference) < 1e-8 ? "validated" : "FAILED");
    MPI_Win_free(&win);
    free(out);
}

static void transpose(int iterations, int n) {
    int b = n / nprocs; /* block order: n is a multiple of nprocs */
    double *a = malloc(sizeof(double) * (size_t)b * n), *bmat = calloc((size_t)b * n, sizeof(double));
    double *work = malloc(sizeof(double) * (size_t)b * b);
    MPI_Win win; /* B as nprocs blocks of b x b, block s (the columns of rank s's rows) contiguous */
    MPI_Win_create(bmat, (MPI_Aint)(sizeof(double) * (size_t)b * n), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD,
                   &win);
    for (int iter = 0; iter < iterations; iter++) {
        for (int i = 0; i < b; i++)
            for (int j = 0; j < n; j++) a[i * n + j] = (double)(rank * b + i) * n + j + iter;
        MPI_Win_fence(0, win);
        for (int phase = 0; phase < nprocs; phase++) {
            int to = (rank + phase) % nprocs;
            for (int i = 0; i < b; i++) /* block (my rows, to's columns), transposed */
                for (int j = 0; j < b; j++) work[j * b + i] = a[i * n + to * b + j];
            MPI_Put(work, b * b, MPI_DOUBLE, to, (MPI_Aint)rank * b * b, b * b, MPI_DOUBLE, win);
            MPI_Win_fence(0, win); /* work is reused */
        }
    }
    double abserr = 0; /* B(i, j) = A(j, i) of the last iteration */
    for (int s = 0; s < nprocs; s++)
        for (int i = 0; i < b; i++)
            for (int j = 0; j < b; j++)
                abserr += fabs(bmat[s * b * b + i * b + j] - ((double)(s * b + j) * n + rank * b + i + iterations - 1));
    printf("r%d: transpose abserr %g: %s\n", rank, abserr, abserr == 0 ? "validated" : "FAILED");
    MPI_Win_free(&win);
    free(a), free(bmat), free(work);
}

static void tally(int iterations) {
    long *counts = calloc((size_t)nprocs + 1, sizeof(long)); /* one per origin, then rank 0's ticket counter */
    MPI_Win win;
    MPI_Win_create(counts, (MPI_Aint)(sizeof(long) * (size_t)(nprocs + 1)), sizeof(long), MPI_INFO_NULL,
                   MPI_COMM_WORLD, &win);
    MPI_Win_fence(0, win);
    int tickets_ok = 1;
    long right = -1, one = 1;
    for (int iter = 1; iter <= iterations; iter++) {
        long mine = (long)(rank + 1) * iter, ticket = -1;
        for (int t = 0; t < nprocs; t++) MPI_Accumulate(&mine, 1, MPI_LONG, t, rank, 1, MPI_LONG, MPI_SUM, win);
        MPI_Fetch_and_op(&one, &ticket, MPI_LONG, 0, nprocs, MPI_SUM, win);
        MPI_Win_fence(0, win);
        /* this round's tickets are (iter-1)*nprocs .. iter*nprocs-1, in whatever order the ranks came */
        if (ticket < (long)(iter - 1) * nprocs || ticket >= (long)iter * nprocs) tickets_ok = 0;
        MPI_Get(&right, 1, MPI_LONG, (rank + 1) % nprocs, (rank + 1) % nprocs, 1, MPI_LONG, win);
        MPI_Win_fence(0, win);
    }
    long expect_right = (long)((rank + 1) % nprocs + 1) * iterations * (iterations + 1) / 2, sum = 0;
    for (int o = 0; o < nprocs; o++) sum += counts[o];
    long expect_sum = (long)nprocs * (nprocs + 1) / 2 * iterations * (iterations + 1) / 2;
    printf("r%d: tally %ld (right neighbour's count %ld), tickets %s: %s\n", rank, sum, right,
           tickets_ok ? "in order" : "WRONG",
           sum == expect_sum && right == expect_right && tickets_ok ? "validated" : "FAILED");
    MPI_Win_free(&win);
    free(counts);
}

/* every rank claims rank 0's owner slot with MPI_Compare_and_swap (one wins, whichever came first) and takes a
 * number from its counter with MPI_Get_accumulate; then reads the counter back */
static void claims(void) {
    long *slots, none = -1, me = rank, owner = 0, one = 1, before = -1, counter = -1;
    MPI_Win win;
    MPI_Win_allocate(2 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &slots, &win);
    slots[0] = -1, slots[1] = 0;
    MPI_Win_fence(0, win);
    MPI_Compare_and_swap(&me, &none, &owner, MPI_LONG, 0, 0, win);
    MPI_Get_accumulate(&one, 1, MPI_LONG, &before, 1, MPI_LONG, 0, 1, 1, MPI_LONG, MPI_SUM, win);
    MPI_Win_fence(0, win);
    MPI_Get(&counter, 1, MPI_LONG, 0, 1, 1, MPI_LONG, win);
    MPI_Win_fence(0, win);
    long mine[2] = {owner == -1, before}, all[2];
    MPI_Allreduce(mine, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    int ok = all[0] == 1 && all[1] == (long)nprocs * (nprocs - 1) / 2 && counter == nprocs && before >= 0 &&
             before < nprocs;
    printf("r%d: claims: %ld owner, counter %ld: %s\n", rank, all[0], counter, ok ? "validated" : "FAILED");
    MPI_Win_free(&win);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    int iterations = argc > 1 ? atoi(argv[1]) : 10, n = argc > 2 ? atoi(argv[2]) : 48;
    n = n / nprocs * nprocs;
    double t0 = MPI_Wtime();
    stencil(iterations, n);
    transpose(iterations, n);
    tally(iterations);
    claims();
    double t = MPI_Wtime() - t0, slowest;
    MPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("r0: kernels time (s): %.6f\n", slowest);
    MPI_Finalize();
    return 0;
}
