/* Persistent collectives (MPI-4 MPI_*_init): every form started twice with new
 * data, completed with Wait, Waitall and Test loops; two started in different
 * orders on different ranks. */
#include "battery.h"
#include <stdlib.h>

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    int *in = malloc(sizeof(int) * (size_t)size * 4), *out = malloc(sizeof(int) * (size_t)size * 4);
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
    for (int i = 0; i < size; i++) { counts[i] = 1; displs[i] = i; }
    int root = size - 1, b = 0, sum = 0, scan = 0;
    MPI_Request rq[12];
    MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &rq[0]);
    MPI_Bcast_init(&b, 1, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[1]);
    MPI_Allreduce_init(in, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[2]);
    MPI_Scan_init(in, &scan, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &rq[3]);
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < size * 4; i++) { in[i] = 100 * round + 10 * rank + i; out[i] = -1; }
        b = rank == root ? 77 + round : -1;
        MPI_Startall(4, rq);
        MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
        SAY("round %d bcast %d allreduce %d scan %d", round, b, sum, scan);
    }
    MPI_Request g[6];
    int red = -1, rsb = -1;
    MPI_Reduce_init(in, &red, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &g[0]);
    MPI_Gather_init(in, 1, MPI_INT, out, 1, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &g[1]);
    MPI_Reduce_scatter_block_init(in, &rsb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &g[2]);
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < size * 4; i++) in[i] = 100 * round + 10 * rank + i;
        for (int k = 0; k < 3; k++) MPI_Start(&g[k]);
        int done = 0;
        while (!done) MPI_Testall(3, g, &done, MPI_STATUSES_IGNORE);
        SAY("round %d reduce %d reduce_scatter_block %d", round, rank == 0 ? red : -1, rsb);
        if (rank == root) print_ints("gather", out, size);
    }
    int sc = -1;
    int *all = malloc(sizeof(int) * (size_t)size * 4);
    MPI_Scatter_init(in, 1, MPI_INT, &sc, 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &g[3]);
    MPI_Allgatherv_init(in, 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &g[4]);
    MPI_Alltoall_init(in, 1, MPI_INT, out, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &g[5]);
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < size * 4; i++) in[i] = 1000 * (round + 1) + 10 * rank + i;
        MPI_Startall(3, &g[3]);
        for (int k = 3; k < 6; k++) MPI_Wait(&g[k], MPI_STATUS_IGNORE);
        SAY("round %d scatter %d", round, sc);
        print_ints("allgatherv", all, size);
        print_ints("alltoall", out, size);
    }
    /* members may start them in any order (they match in the order of their _init calls): the root starts the
     * broadcast first, the others the barrier (MPICH's coll/p_order) */
    b = rank == root ? 99 : -1;
    if (rank == root) { MPI_Start(&rq[1]); MPI_Start(&rq[0]); }
    else { MPI_Start(&rq[0]); MPI_Start(&rq[1]); }
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    SAY("started in either order: bcast %d", b);
    int ex = -1;
    MPI_Request e;
    MPI_Exscan_init(in, &ex, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &e);
    MPI_Start(&e);
    MPI_Wait(&e, MPI_STATUS_IGNORE);
    SAY("exscan %d", rank == 0 ? -1 : ex);
    MPI_Request_free(&e);
    for (int k = 0; k < 4; k++) MPI_Request_free(&rq[k]);
    for (int k = 0; k < 6; k++) MPI_Request_free(&g[k]);
    free(in); free(out); free(all); free(counts); free(displs);
    SAY("done");
    MPI_Finalize();
    return 0;
}
