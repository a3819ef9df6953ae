/* A halo exchange on a periodic grid where one dimension has a single process, so that process is its own
 * neighbour there (MPI_Dims_create(2, 2) gives 2 x 1), written the way codes with a shared-memory path write it:
 * each halo message carries the boundary strip's values and where the strip lives (the sender's pid and the
 * strip's address).  A receiver that finds the message came from its own process (the pid is its own) copies the
 * strip through the address instead of using the values, as codes do for neighbours they can address (CMA or
 * XPMEM for other processes of the node; here only its own, which needs nothing).  The pid and the address are
 * each process's own, so what MPI delivers on a self edge must be the caller's own: every neighbourhood
 * all-to-all (blocking, nonblocking, persistent; alltoall, v and w) on the Cartesian grid and on the distributed
 * and MPI-1 graphs the code builds from its Cart_shift neighbours, the nonblocking and persistent neighbourhood
 * allgathers, MPI_Isendrecv(_replace) and partitioned messages (MPI_Psend_init) with itself along the dimension
 * of one process.
 *
 * Which block arrives on which self edge is the MPI's (the standard pairs the -1 and +1 blocks of a dimension;
 * MPIs differ): the ghost sums printed weigh each ghost by its place, so they show the pairing as well. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NB 8 /* doubles in a boundary strip */
/* MPI-4's calls (persistent collectives, MPI_Isendrecv): Open MPI 5 has them and still says MPI 3.1 */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
#define HAVE_MPI4 1
#endif

typedef struct {
    int64_t pid;
    uint64_t addr;
    double v[NB];
} halo_t;

static int rank;
static double strips[4][NB]; /* the boundary this process sends towards each of its 4 neighbours */
static MPI_Datatype halo_type;

static void pack(halo_t *h, int dir) {
    h->pid = (int64_t)getpid();
    h->addr = (uint64_t)(uintptr_t)strips[dir];
    memcpy(h->v, strips[dir], sizeof h->v);
}

/* the ghost strips from what arrived: through the address when it came from this process */
static void unpack(const char *what, const halo_t *in, int n) {
    double sum = 0;
    int shortcuts = 0;
    for (int i = 0; i < n; i++) {
        const double *src = in[i].v;
        if (in[i].pid == (int64_t)getpid()) {
            src = (const double *)(uintptr_t)in[i].addr;
            shortcuts++;
        }
        for (int k = 0; k < NB; k++) sum += (i + 1) * src[k];
    }
    printf("r%d: %s: %d of %d neighbours in this process, ghost sum %.1f\n", rank, what, shortcuts, n, sum);
}

/* what one exchange on `comm` brought, then the ghosts cleared for the next */
static void received(const char *comm, const char *call, halo_t *in, int n) {
    char what[96];
    snprintf(what, sizeof what, "%s %s", comm, call);
    unpack(what, in, n);
    memset(in, 0, sizeof *in * (size_t)n);
}

static void exchange(MPI_Comm comm, const char *name) {
    halo_t out[4], in[4];
    int counts[4], displs[4], bcounts[4];
    MPI_Aint bdispls[4];
    MPI_Datatype types[4];
    for (int d = 0; d < 4; d++) {
        pack(&out[d], d);
        counts[d] = 1;
        displs[d] = d;
        bcounts[d] = 1;
        bdispls[d] = (MPI_Aint)(d * sizeof(halo_t));
        types[d] = halo_type;
    }
    MPI_Request req;

    memset(in, 0, sizeof in);
    MPI_Neighbor_alltoall(out, 1, halo_type, in, 1, halo_type, comm);
    received(name, "MPI_Neighbor_alltoall", in, 4);
    MPI_Ineighbor_alltoall(out, 1, halo_type, in, 1, halo_type, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    received(name, "MPI_Ineighbor_alltoall", in, 4);
    MPI_Neighbor_alltoallv(out, counts, displs, halo_type, in, counts, displs, halo_type, comm);
    received(name, "MPI_Neighbor_alltoallv", in, 4);
    MPI_Ineighbor_alltoallv(out, counts, displs, halo_type, in, counts, displs, halo_type, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    received(name, "MPI_Ineighbor_alltoallv", in, 4);
    MPI_Neighbor_alltoallw(out, bcounts, bdispls, types, in, bcounts, bdispls, types, comm);
    received(name, "MPI_Neighbor_alltoallw", in, 4);
    MPI_Ineighbor_alltoallw(out, bcounts, bdispls, types, in, bcounts, bdispls, types, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    received(name, "MPI_Ineighbor_alltoallw", in, 4);

    /* a tile published once to every neighbour: the allgathers */
    halo_t tile;
    pack(&tile, 0);
    MPI_Ineighbor_allgather(&tile, 1, halo_type, in, 1, halo_type, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    received(name, "MPI_Ineighbor_allgather", in, 4);
    MPI_Ineighbor_allgatherv(&tile, 1, halo_type, in, counts, displs, halo_type, comm, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    received(name, "MPI_Ineighbor_allgatherv", in, 4);

#ifdef HAVE_MPI4
    /* persistent: set up once, started every time step (the strips change between steps) */
    MPI_Request steps[5];
    MPI_Neighbor_alltoall_init(out, 1, halo_type, in, 1, halo_type, comm, MPI_INFO_NULL, &steps[0]);
    MPI_Neighbor_alltoallv_init(out, counts, displs, halo_type, in, counts, displs, halo_type, comm, MPI_INFO_NULL,
                                &steps[1]);
    MPI_Neighbor_alltoallw_init(out, bcounts, bdispls, types, in, bcounts, bdispls, types, comm, MPI_INFO_NULL,
                                &steps[2]);
    MPI_Neighbor_allgather_init(&tile, 1, halo_type, in, 1, halo_type, comm, MPI_INFO_NULL, &steps[3]);
    MPI_Neighbor_allgatherv_init(&tile, 1, halo_type, in, counts, displs, halo_type, comm, MPI_INFO_NULL,
                                 &steps[4]);
    static const char *init_names[5] = {"MPI_Neighbor_alltoall_init", "MPI_Neighbor_alltoallv_init",
                                        "MPI_Neighbor_alltoallw_init", "MPI_Neighbor_allgather_init",
                                        "MPI_Neighbor_allgatherv_init"};
    for (int step = 0; step < 2; step++)
        for (int k = 0; k < 5; k++) {
            for (int d = 0; d < 4; d++) strips[d][0] += 1.0; /* the time step moved the boundary */
            MPI_Start(&steps[k]);
            MPI_Wait(&steps[k], MPI_STATUS_IGNORE);
            char call[64];
            snprintf(call, sizeof call, "%s step %d", init_names[k], step);
            received(name, call, in, 4);
        }
    for (int k = 0; k < 5; k++) MPI_Request_free(&steps[k]);
#endif
}

int main(int argc, char **argv) {
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int d = 0; d < 4; d++)
        for (int k = 0; k < NB; k++) strips[d][k] = 1000.0 * rank + 100.0 * d + k;
    MPI_Type_contiguous(sizeof(halo_t), MPI_BYTE, &halo_type);
    MPI_Type_commit(&halo_type);

    int dims[2] = {0, 0}, periods[2] = {1, 1};
    MPI_Dims_create(size, 2, dims);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    exchange(cart, "cart");

    /* the same neighbours as a distributed graph (codes that outgrow a grid build their own; from the world:
     * Open MPI 5's neighbourhood collectives fail on a graph made from a Cartesian communicator) */
    int nbrs[4];
    MPI_Cart_shift(cart, 0, 1, &nbrs[0], &nbrs[1]);
    MPI_Cart_shift(cart, 1, 1, &nbrs[2], &nbrs[3]);
    MPI_Comm graph;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 4, nbrs, MPI_UNWEIGHTED, 4, nbrs, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &graph);
    exchange(graph, "graph");
    MPI_Comm_free(&graph);
    /* and as an MPI-1 graph, which every rank describes whole: each one's neighbour list, gathered */
    int *edges = malloc(sizeof(int) * 4 * (size_t)size), *index = malloc(sizeof(int) * (size_t)size);
    MPI_Allgather(nbrs, 4, MPI_INT, edges, 4, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++) index[r] = 4 * (r + 1);
    MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &graph);
    exchange(graph, "MPI-1 graph");
    MPI_Comm_free(&graph);
    free(index);
    free(edges);

#ifdef HAVE_MPI4
    /* the periodic shift along the dimension of one process: a send-receive with itself */
    int src, dst;
    MPI_Cart_shift(cart, 1, 1, &src, &dst);
    halo_t out, in;
    pack(&out, 3);
    MPI_Request req;
    /* as bytes: MPICH 4.0's MPI_Isendrecv_replace fails on a derived datatype */
    MPI_Isendrecv(&out, sizeof out, MPI_BYTE, dst, 5, &in, sizeof in, MPI_BYTE, src, 5, cart, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    unpack("MPI_Isendrecv", &in, 1);
    pack(&in, 2);
    MPI_Isendrecv_replace(&in, sizeof in, MPI_BYTE, dst, 6, src, 6, cart, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    unpack("MPI_Isendrecv_replace", &in, 1);

    /* the four strips as partitions to the same neighbour (itself), set up once and sent every time step, each
     * partition marked ready as soon as it is packed */
    halo_t parts_out[4], parts_in[4];
    MPI_Request psend, precv;
    MPI_Precv_init(parts_in, 4, sizeof(halo_t), MPI_BYTE, src, 7, cart, MPI_INFO_NULL, &precv);
    MPI_Psend_init(parts_out, 4, sizeof(halo_t), MPI_BYTE, dst, 7, cart, MPI_INFO_NULL, &psend);
    for (int step = 0; step < 2; step++) {
        MPI_Start(&precv);
        MPI_Start(&psend);
        for (int d = 0; d < 4; d++) {
            strips[d][0] += 1.0;
            pack(&parts_out[d], d);
            if (step == 0) MPI_Pready(d, psend);
        }
        if (step == 1) MPI_Pready_range(0, 3, psend);
        MPI_Wait(&psend, MPI_STATUS_IGNORE);
        MPI_Wait(&precv, MPI_STATUS_IGNORE);
        char what[64];
        snprintf(what, sizeof what, "MPI_Psend_init step %d", step);
        unpack(what, parts_in, 4);
    }
    MPI_Request_free(&psend);
    MPI_Request_free(&precv);
#endif

    MPI_Comm_free(&cart);
    MPI_Type_free(&halo_type);
    MPI_Finalize();
    return 0;
}
