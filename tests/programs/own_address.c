/* Publishing the address of a buffer, as ARMCI and Global Arrays do: every rank allgathers the address of the
 * memory it allocated, then reads its own block through its own slot (ga_create and friends dereference
 * ptr_arr[me]).  An address is each process's own: a copy's differs from its representative's, so every place
 * MPI defines as the caller's own contribution must hold the caller's own address.  Checked for the blocking,
 * nonblocking and persistent forms of the gathers and all-to-alls, the root's own block of a gather and of a
 * scatter, MPI_IN_PLACE, a message to itself and a neighbourhood allgather's self edge. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, size;
static double *mine;

static void check(const char *what, const uint64_t *slot) {
    /* dereference it, as ARMCI does with its own slot: the representative's pointer is garbage here */
    double *p = (double *)(uintptr_t)*slot;
    printf("r%d: %s: own slot %s, holds %.1f\n", rank, what, p == mine ? "is mine" : "is NOT mine",
           p == mine ? p[0] : -1.0);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mine = malloc(1000 * sizeof *mine);
    for (int i = 0; i < 1000; i++) mine[i] = 100.0 * rank + i;
    uint64_t me = (uint64_t)(uintptr_t)mine;
    uint64_t *all = calloc((size_t)size, sizeof *all), *sendall = calloc((size_t)size, sizeof *sendall);
    int *counts = malloc(sizeof(int) * (size_t)size), *displs = malloc(sizeof(int) * (size_t)size);
    int *wcounts = malloc(sizeof(int) * (size_t)size), *wdispls = malloc(sizeof(int) * (size_t)size);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)size);
    for (int i = 0; i < size; i++) {
        counts[i] = 1;
        displs[i] = i;
        wcounts[i] = 1;
        wdispls[i] = i * (int)sizeof(uint64_t);
        types[i] = MPI_UINT64_T;
        sendall[i] = me;
    }

    MPI_Allgather(&me, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    check("MPI_Allgather", &all[rank]);
    /* the pointer table ARMCI keeps: every other slot is another rank's address, never read here */
    all[rank] = me;
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    check("MPI_Allgather in place", &all[rank]);
    MPI_Allgatherv(&me, 1, MPI_UINT64_T, all, counts, displs, MPI_UINT64_T, MPI_COMM_WORLD);
    check("MPI_Allgatherv", &all[rank]);
    MPI_Alltoall(sendall, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    check("MPI_Alltoall", &all[rank]);
    MPI_Alltoallv(sendall, counts, displs, MPI_UINT64_T, all, counts, displs, MPI_UINT64_T, MPI_COMM_WORLD);
    check("MPI_Alltoallv", &all[rank]);
    MPI_Alltoallw(sendall, wcounts, wdispls, types, all, wcounts, wdispls, types, MPI_COMM_WORLD);
    check("MPI_Alltoallw", &all[rank]);
    for (int root = 0; root < size; root++) {
        MPI_Gather(&me, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, root, MPI_COMM_WORLD);
        if (rank == root) check("MPI_Gather at the root", &all[rank]);
        MPI_Gatherv(&me, 1, MPI_UINT64_T, all, counts, displs, MPI_UINT64_T, root, MPI_COMM_WORLD);
        if (rank == root) check("MPI_Gatherv at the root", &all[rank]);
        uint64_t got = 0;
        MPI_Scatter(sendall, 1, MPI_UINT64_T, &got, 1, MPI_UINT64_T, root, MPI_COMM_WORLD);
        if (rank == root) check("MPI_Scatter at the root", &got);
    }

    MPI_Request req;
    MPI_Iallgather(&me, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    check("MPI_Iallgather", &all[rank]);
    MPI_Ialltoallv(sendall, counts, displs, MPI_UINT64_T, all, counts, displs, MPI_UINT64_T, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    check("MPI_Ialltoallv", &all[rank]);
    MPI_Allgather_init(&me, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    for (int round = 0; round < 2; round++) {
        all[rank] = 0;
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        check("MPI_Allgather_init", &all[rank]);
    }
    MPI_Request_free(&req);

    /* a message to itself: blocking, through MPI_Sendrecv, and nonblocking */
    uint64_t back = 0;
    MPI_Send(&me, 1, MPI_UINT64_T, rank, 7, MPI_COMM_WORLD);
    MPI_Recv(&back, 1, MPI_UINT64_T, rank, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    check("MPI_Send to itself", &back);
    back = 0;
    MPI_Sendrecv(&me, 1, MPI_UINT64_T, rank, 8, &back, 1, MPI_UINT64_T, rank, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    check("MPI_Sendrecv with itself", &back);
    back = 0;
    MPI_Request two[2];
    MPI_Irecv(&back, 1, MPI_UINT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &two[0]);
    MPI_Isend(&me, 1, MPI_UINT64_T, rank, 9, MPI_COMM_WORLD, &two[1]);
    MPI_Waitall(2, two, MPI_STATUSES_IGNORE);
    check("MPI_Isend to itself", &back);

    /* a graph where each rank is its own neighbour too (a halo code's periodic boundary over one rank) */
    MPI_Comm graph;
    int sources[2] = {rank, (rank + size - 1) % size}, dests[2] = {rank, (rank + 1) % size};
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, sources, MPI_UNWEIGHTED, 2, dests, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &graph);
    MPI_Neighbor_allgather(&me, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, graph);
    check("MPI_Neighbor_allgather on its self edge", &all[0]);
    MPI_Neighbor_allgatherv(&me, 1, MPI_UINT64_T, all, counts, displs, MPI_UINT64_T, graph);
    check("MPI_Neighbor_allgatherv on its self edge", &all[0]);
    MPI_Comm_free(&graph);

    /* what the program computes from its own block, reduced: the same on every copy */
    double sum = 0, total = 0;
    MPI_Allgather(&me, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    for (int i = 0; i < 1000; i++) sum += ((double *)(uintptr_t)all[rank])[i];
    MPI_Allreduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("r%d: total %.1f\n", rank, total);
    free(types);
    free(wdispls);
    free(wcounts);
    free(displs);
    free(counts);
    free(sendall);
    free(all);
    free(mine);
    MPI_Finalize();
    return 0;
}
