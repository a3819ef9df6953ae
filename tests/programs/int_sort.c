/* An integer sort the way a benchmark writes it (NPB IS's pattern): every rank draws keys, buckets them by the rank
 * that owns each key range, tells the others how many keys it sends (MPI_Alltoall), sends them (MPI_Alltoallv, then
 * again nonblocking with MPI_Ialltoallv), sorts what it got and checks the order across ranks.  Rank 0 then
 * scatters a slice of parameters and every rank gathers the others' key counts in place.  A rank with no key for
 * one bucket sends 0 from a pointer past the end (as codes do: the counts say there is nothing to read).  Every
 * line starts "r<rank>: "; "bytes <call> N" says how many bytes the rank sent in that call, as the program counts
 * them (every block of its send buffer, its own included). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int nkeys = 1000 + 37 * rank, range = 1 << 16;
    int *keys = malloc(nkeys * sizeof *keys), *sorted = malloc(nkeys * sizeof *sorted);
    unsigned seed = 12345u + 77u * (unsigned)rank;
    for (int i = 0; i < nkeys; i++) {
        seed = seed * 1103515245u + 12345u;
        /* the last rank's range gets no key from rank 0: a zero count */
        keys[i] = (int)((seed >> 8) % (unsigned)(rank == 0 ? range - range / size : range));
    }
    int *sendcounts = calloc(size, sizeof(int)), *recvcounts = malloc(size * sizeof(int));
    int *sdispls = malloc(size * sizeof(int)), *rdispls = malloc(size * sizeof(int));
    for (int i = 0; i < nkeys; i++) sendcounts[keys[i] / (range / size)]++;
    sdispls[0] = 0;
    for (int r = 1; r < size; r++) sdispls[r] = sdispls[r - 1] + sendcounts[r - 1];
    int *fill = calloc(size, sizeof(int));
    for (int i = 0; i < nkeys; i++) {
        int b = keys[i] / (range / size);
        sorted[sdispls[b] + fill[b]++] = keys[i];
    }
    free(fill);
    MPI_Alltoall(sendcounts, 1, MPI_INT, recvcounts, 1, MPI_INT, MPI_COMM_WORLD);
    printf("r%d: bytes MPI_Alltoall %d\n", rank, (int)(size * sizeof(int)));
    int total = 0;
    for (int r = 0; r < size; r++) { rdispls[r] = total; total += recvcounts[r]; }
    int *mine = malloc((total + 1) * sizeof *mine);
    MPI_Alltoallv(sorted, sendcounts, sdispls, MPI_INT, mine, recvcounts, rdispls, MPI_INT, MPI_COMM_WORLD);
    printf("r%d: bytes MPI_Alltoallv %d\n", rank, (int)(nkeys * sizeof(int)));
    MPI_Request req;
    MPI_Ialltoallv(sorted, sendcounts, sdispls, MPI_INT, mine, recvcounts, rdispls, MPI_INT, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    printf("r%d: bytes MPI_Ialltoallv %d\n", rank, (int)(nkeys * sizeof(int)));
    qsort(mine, total, sizeof *mine, cmp);
    int lo = total ? mine[0] : -1, hi = total ? mine[total - 1] : -1, prev_hi = -1;
    MPI_Sendrecv(&hi, 1, MPI_INT, (rank + 1) % size, 0, &prev_hi, 1, MPI_INT, (rank + size - 1) % size, 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("r%d: %d keys, ordered after the previous rank's: %s\n", rank, total,
           rank == 0 || prev_hi <= lo ? "yes" : "no");

    double params[8 * 16], slice[8];
    for (int i = 0; i < 8 * size; i++) params[i] = 0.5 * i;
    MPI_Scatter(params, 8, MPI_DOUBLE, slice, 8, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    printf("r%d: bytes MPI_Scatter %d, slice starts %.1f\n", rank, rank == 0 ? (int)(8 * size * sizeof(double)) : 0,
           slice[0]);
    int counts[16];
    counts[rank] = total;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, counts, 1, MPI_INT, MPI_COMM_WORLD);
    printf("r%d: bytes MPI_Allgather %d, rank 0 holds %d keys\n", rank, (int)sizeof(int), counts[0]);
    MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recvcounts, 1, MPI_INT, MPI_COMM_WORLD);
    printf("r%d: bytes MPI_Alltoall %d\n", rank, (int)(size * sizeof(int)));
    printf("r%d: done\n", rank);
    free(keys); free(sorted); free(sendcounts); free(recvcounts); free(sdispls); free(rdispls); free(mine);
    MPI_Finalize();
    return 0;
}
