/* Process topologies and neighbourhood collectives under cloning (see
 * docs/topologies.md).
 *
 * Creation: the representative creates the real communicator from its parent's
 * real one; echo_comm_register_new gives copies their stand-in and carries the
 * topology the representative's communicator really has (echo_topo_describe:
 * what MPI's own queries answer on it) after the members, so a dup of a
 * topology communicator, a Cart_sub and reorder=1 all follow the
 * representative.  Both sides keep the description parsed (struct echo_topo,
 * echo_topo_desc.c).
 *
 * Queries: a representative always asks MPI.  A copy answers from the
 * description whenever the standard defines the answer from the topology alone
 * (that is every correct call); a call the standard calls erroneous (wrong
 * topology, a rank or coordinate out of range, arrays too short) is answered by
 * the representative instead: its return code and output arrays are forwarded,
 * so a copy fails exactly as it does.  Both sides take the same branch: they
 * hold the same description and the same arguments.
 *
 * Neighbourhood collectives: the representative runs the real one; copies
 * receive the blocks of their receive buffer that MPI writes (those of
 * MPI_PROC_NULL neighbours are left alone, as MPI leaves them), in one message,
 * at the call (blocking) or when Wait/Test retires the request; then a copy puts
 * its own send blocks on its self edges, where its MPI puts them (own_edges). */
#include "echo_clone.h"
#include "echo_records.h"
#include "echo_topo_desc.h"

#include <stdlib.h>
#include <string.h>

/* ---- creation: the representative's real communicator, the copies' stand-in ---- */


int echo_MPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[], int reorder,
                         MPI_Comm *comm_cart) {
    echo_comm_t *c = echo_comm_get(comm_old, "MPI_Cart_create");
    return echo_comm_register_new(comm_old, comm_cart,
                                  ECHO_REP(PMPI_Cart_create(c->real, ndims, dims, periods, reorder, comm_cart)), 0);
}

int echo_MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *new_comm) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Cart_sub");
    return echo_comm_register_new(comm, new_comm, ECHO_REP(PMPI_Cart_sub(c->real, remain_dims, new_comm)), 0);
}

int echo_MPI_Graph_create(MPI_Comm comm_old, int nnodes, const int index[], const int edges[], int reorder,
                          MPI_Comm *comm_graph) {
    echo_comm_t *c = echo_comm_get(comm_old, "MPI_Graph_create");
    return echo_comm_register_new(comm_old, comm_graph,
                                  ECHO_REP(PMPI_Graph_create(c->real, nnodes, index, edges, reorder, comm_graph)), 0);
}

int echo_MPI_Dist_graph_create(MPI_Comm comm_old, int n, const int nodes[], const int degrees[],
                               const int targets[], const int weights[], MPI_Info info, int reorder,
                               MPI_Comm *newcomm) {
    echo_comm_t *c = echo_comm_get(comm_old, "MPI_Dist_graph_create");
    return echo_comm_register_new(
        comm_old, newcomm,
        ECHO_REP(PMPI_Dist_graph_create(c->real, n, nodes, degrees, targets, weights, info, reorder, newcomm)), 0);
}

int echo_MPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[],
                                        const int sourceweights[], int outdegree, const int destinations[],
                                        const int destweights[], MPI_Info info, int reorder,
                                        MPI_Comm *comm_dist_graph) {
    echo_comm_t *c = echo_comm_get(comm_old, "MPI_Dist_graph_create_adjacent");
    return echo_comm_register_new(comm_old, comm_dist_graph,
                                  ECHO_REP(PMPI_Dist_graph_create_adjacent(c->real, indegree, sources, sourceweights,
                                       outdegree, destinations, destweights, info, reorder, comm_dist_graph)),
                                  0);
}

/* ---- queries ---- */

/* the communicator's topology if it is of this kind */
void echo_topo_degrees(const echo_comm_t *c, int *indegree, int *outdegree) {
    *indegree = c->topo ? c->topo->indegree : 0;
    *outdegree = c->topo ? c->topo->outdegree : 0;
}

static const struct echo_topo *topo_of(echo_comm_t *c, int kind) {
    return c->topo && c->topo->kind == kind ? c->topo : NULL;
}

/* An output array of a query: `n` ints at `p` (an array the caller passed; MPI_UNWEIGHTED and the like are none). */
typedef struct { int *p; int n; } out_t;

static int is_array(const int *p) { return p && p != MPI_UNWEIGHTED && p != MPI_WEIGHTS_EMPTY; }

/* The representative's answer to a query a copy cannot answer itself (the
 * standard calls it erroneous): its return code and the contents of the output
 * arrays after its call, in one message. */
static int rep_answer(int rc, int nout, const out_t *out) {
    int total = 0;
    for (int i = 0; i < nout; i++) total += is_array(out[i].p) && out[i].n > 0 ? out[i].n : 0;
    int *buf = malloc(sizeof(int) * (size_t)(total + 1)), k = 0;
    for (int i = 0; echo_is_rep() && i < nout; i++)
        for (int j = 0; is_array(out[i].p) && j < out[i].n; j++) buf[k++] = out[i].p[j];
    rc = echo_forward(buf, total, MPI_INT, rc);
    for (int i = 0; !echo_is_rep() && i < nout; i++)
        for (int j = 0; is_array(out[i].p) && j < out[i].n; j++) out[i].p[j] = buf[k++];
    free(buf);
    return rc;
}
#define REP_ANSWER(rc, ...) rep_answer(rc, sizeof((out_t[]){__VA_ARGS__}) / sizeof(out_t), (out_t[]){__VA_ARGS__})

int echo_MPI_Topo_test(MPI_Comm comm, int *status) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Topo_test");
    if (echo_is_rep()) return PMPI_Topo_test(c->real, status);
    *status = c->topo ? c->topo->kind : MPI_UNDEFINED;
    return MPI_SUCCESS;
}

int echo_MPI_Cartdim_get(MPI_Comm comm, int *ndims) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Cartdim_get");
    const struct echo_topo *t = topo_of(c, MPI_CART);
    if (!t) return REP_ANSWER(ECHO_REP(PMPI_Cartdim_get(c->real, ndims)), {ndims, 1});
    if (echo_is_rep()) return PMPI_Cartdim_get(c->real, ndims);
    *ndims = t->ndims;
    return MPI_SUCCESS;
}

int echo_MPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[]) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Cart_get");
    const struct echo_topo *t = topo_of(c, MPI_CART);
    if (!t || t->ndims == 0 || maxdims < t->ndims)
        return REP_ANSWER(ECHO_REP(PMPI_Cart_get(c->real, maxdims, dims, periods, coords)), {dims, maxdims},
                          {periods, maxdims}, {coords, maxdims});
    if (echo_is_rep()) return PMPI_Cart_get(c->real, maxdims, dims, periods, coords);
    memcpy(dims, t->dims, sizeof(int) * (size_t)t->ndims);
    memcpy(periods, t->periods, sizeof(int) * (size_t)t->ndims);
    memcpy(coords, t->coords, sizeof(int) * (size_t)t->ndims);
    return MPI_SUCCESS;
}

int echo_MPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Cart_rank");
    const struct echo_topo *t = topo_of(c, MPI_CART);
    int valid = t && t->ndims > 0;
    for (int i = 0; valid && i < t->ndims; i++) valid = t->periods[i] || (coords[i] >= 0 && coords[i] < t->dims[i]);
    if (!valid) return REP_ANSWER(ECHO_REP(PMPI_Cart_rank(c->real, coords, rank)), {rank, 1});
    if (echo_is_rep()) return PMPI_Cart_rank(c->real, coords, rank);
    *rank = rank_of(t, coords);
    return MPI_SUCCESS;
}

int echo_MPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[]) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Cart_coords");
    const struct echo_topo *t = topo_of(c, MPI_CART);
    if (!t || t->ndims == 0 || rank < 0 || rank >= t->size || maxdims < t->ndims)
        return REP_ANSWER(ECHO_REP(PMPI_Cart_coords(c->real, rank, maxdims, coords)), {coords, maxdims});
    if (echo_is_rep()) return PMPI_Cart_coords(c->real, rank, maxdims, coords);
    coords_of(t, rank, coords);
    return MPI_SUCCESS;
}

int echo_MPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source, int *rank_dest) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Cart_shift");
    const struct echo_topo *t = topo_of(c, MPI_CART);
    if (!t || direction < 0 || direction >= t->ndims)
        return REP_ANSWER(ECHO_REP(PMPI_Cart_shift(c->real, direction, disp, rank_source, rank_dest)), {rank_source, 1},
                          {rank_dest, 1});
    if (echo_is_rep()) return PMPI_Cart_shift(c->real, direction, disp, rank_source, rank_dest);
    *rank_source = shifted(t, direction, -(long)disp);
    *rank_dest = shifted(t, direction, disp);
    return MPI_SUCCESS;
}

/* Cart_map and Graph_map leave the choice to the implementation: always the representative's */
int echo_MPI_Cart_map(MPI_Comm comm, int ndims, const int dims[], const int periods[], int *newrank) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Cart_map");
    return REP_ANSWER(ECHO_REP(PMPI_Cart_map(c->real, ndims, dims, periods, newrank)), {newrank, 1});
}

int echo_MPI_Graph_map(MPI_Comm comm, int nnodes, const int index[], const int edges[], int *newrank) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Graph_map");
    return REP_ANSWER(ECHO_REP(PMPI_Graph_map(c->real, nnodes, index, edges, newrank)), {newrank, 1});
}

int echo_MPI_Graphdims_get(MPI_Comm comm, int *nnodes, int *nedges) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Graphdims_get");
    const struct echo_topo *t = topo_of(c, MPI_GRAPH);
    if (!t) return REP_ANSWER(ECHO_REP(PMPI_Graphdims_get(c->real, nnodes, nedges)), {nnodes, 1}, {nedges, 1});
    if (echo_is_rep()) return PMPI_Graphdims_get(c->real, nnodes, nedges);
    *nnodes = t->nnodes;
    *nedges = t->nedges;
    return MPI_SUCCESS;
}

int echo_MPI_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int index[], int edges[]) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Graph_get");
    const struct echo_topo *t = topo_of(c, MPI_GRAPH);
    if (!t || maxindex < t->nnodes || maxedges < t->nedges)
        return REP_ANSWER(ECHO_REP(PMPI_Graph_get(c->real, maxindex, maxedges, index, edges)), {index, maxindex},
                          {edges, maxedges});
    if (echo_is_rep()) return PMPI_Graph_get(c->real, maxindex, maxedges, index, edges);
    memcpy(index, t->index, sizeof(int) * (size_t)t->nnodes);
    if (t->nedges) memcpy(edges, t->edges, sizeof(int) * (size_t)t->nedges);
    return MPI_SUCCESS;
}

static int graph_degree(const struct echo_topo *t, int rank) {
    return t->index[rank] - (rank == 0 ? 0 : t->index[rank - 1]);
}

int echo_MPI_Graph_neighbors_count(MPI_Comm comm, int rank, int *nneighbors) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Graph_neighbors_count");
    const struct echo_topo *t = topo_of(c, MPI_GRAPH);
    if (!t || rank < 0 || rank >= t->nnodes)
        return REP_ANSWER(ECHO_REP(PMPI_Graph_neighbors_count(c->real, rank, nneighbors)), {nneighbors, 1});
    if (echo_is_rep()) return PMPI_Graph_neighbors_count(c->real, rank, nneighbors);
    *nneighbors = graph_degree(t, rank);
    return MPI_SUCCESS;
}

int echo_MPI_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[]) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Graph_neighbors");
    const struct echo_topo *t = topo_of(c, MPI_GRAPH);
    if (!t || rank < 0 || rank >= t->nnodes || maxneighbors < graph_degree(t, rank))
        return REP_ANSWER(ECHO_REP(PMPI_Graph_neighbors(c->real, rank, maxneighbors, neighbors)),
                          {neighbors, maxneighbors});
    if (echo_is_rep()) return PMPI_Graph_neighbors(c->real, rank, maxneighbors, neighbors);
    int first = rank == 0 ? 0 : t->index[rank - 1];
    for (int i = 0; i < graph_degree(t, rank); i++) neighbors[i] = t->edges[first + i];
    return MPI_SUCCESS;
}

int echo_MPI_Dist_graph_neighbors_count(MPI_Comm comm, int *indegree, int *outdegree, int *weighted) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Dist_graph_neighbors_count");
    const struct echo_topo *t = topo_of(c, MPI_DIST_GRAPH);
    if (!t)
        return REP_ANSWER(ECHO_REP(PMPI_Dist_graph_neighbors_count(c->real, indegree, outdegree, weighted)),
                          {indegree, 1}, {outdegree, 1}, {weighted, 1});
    if (echo_is_rep()) return PMPI_Dist_graph_neighbors_count(c->real, indegree, outdegree, weighted);
    *indegree = t->indegree;
    *outdegree = t->outdegree;
    *weighted = t->weighted;
    return MPI_SUCCESS;
}

int echo_MPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[], int sourceweights[],
                                  int maxoutdegree, int destinations[], int destweights[]) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Dist_graph_neighbors");
    const struct echo_topo *t = topo_of(c, MPI_DIST_GRAPH);
    /* every array MPI would write must be one */
    int valid = t && maxindegree >= t->indegree && maxoutdegree >= t->outdegree &&
                (t->indegree == 0 || (is_array(sources) && (!t->inw || is_array(sourceweights)))) &&
                (t->outdegree == 0 || (is_array(destinations) && (!t->outw || is_array(destweights))));
    if (!valid)
        return REP_ANSWER(ECHO_REP(PMPI_Dist_graph_neighbors(c->real, maxindegree, sources, sourceweights, maxoutdegree,
                               destinations, destweights)),
                          {sources, maxindegree}, {sourceweights, maxindegree}, {destinations, maxoutdegree},
                          {destweights, maxoutdegree});
    if (echo_is_rep())
        return PMPI_Dist_graph_neighbors(c->real, maxindegree, sources, sourceweights, maxoutdegree, destinations,
                                         destweights);
    for (int i = 0; i < t->indegree; i++) {
        sources[i] = t->in[i];
        if (t->inw) sourceweights[i] = t->inw[i];
    }
    for (int i = 0; i < t->outdegree; i++) {
        destinations[i] = t->out[i];
        if (t->outw) destweights[i] = t->outw[i];
    }
    return MPI_SUCCESS;
}

/* ---- neighbourhood collectives ---- */

/* One side of a neighbourhood collective's buffer: n blocks, one per neighbour
 * (peers[i], or none named), block i holding counts[i] (else `count`) elements
 * of types[i] (else dt) at bdispls[i] bytes (else displs[i] elements of dt,
 * else i * count elements). */
typedef struct {
    int n;
    const int *peers;
    int count;
    const int *counts, *displs;
    const MPI_Aint *bdispls;
    MPI_Datatype dt;
    const MPI_Datatype *types;
} blocks_t;

/* What MPI reads from or writes to such a buffer, as (count, dt): the blocks of
 * MPI_PROC_NULL neighbours left out, as MPI leaves them; `owned`: dt was built
 * here and must be freed. */
typedef struct { int count; MPI_Datatype dt; int owned; } layout_t;

static layout_t layout(blocks_t b) {
    int skipped = 0;
    for (int i = 0; b.peers && i < b.n; i++) skipped += b.peers[i] == MPI_PROC_NULL;
    if (!b.counts && !b.displs && !b.bdispls && !b.types && !skipped) return (layout_t){b.count * b.n, b.dt, 0};
    MPI_Aint lb, extent = 0;
    if (!b.types) PMPI_Type_get_extent(b.dt, &lb, &extent);
    int *len = malloc(sizeof(int) * (size_t)(b.n + 1)), k = 0;
    MPI_Aint *disp = malloc(sizeof(MPI_Aint) * (size_t)(b.n + 1));
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)(b.n + 1));
    for (int i = 0; i < b.n; i++) {
        if (b.peers && b.peers[i] == MPI_PROC_NULL) continue;
        len[k] = b.counts ? b.counts[i] : b.count;
        disp[k] = b.bdispls ? b.bdispls[i] : (MPI_Aint)(b.displs ? b.displs[i] : i * b.count) * extent;
        types[k] = b.types ? b.types[i] : b.dt;
        k++;
    }
    layout_t l = {0, MPI_BYTE, 0};
    if (k > 0) {
        PMPI_Type_create_struct(k, len, disp, types, &l.dt);
        PMPI_Type_commit(&l.dt);
        l.count = 1;
        l.owned = 1;
    }
    free(len);
    free(disp);
    free(types);
    return l;
}

static void drop(layout_t *l) {
    if (l->owned) PMPI_Type_free(&l->dt);
}

/* The data this copy sends, checked for corruption before the real call (only
 * built when a collector or the copies look at it). */
static void contribute(const char *fn, MPI_Comm comm, const void *sendbuf, blocks_t b) {
    if (!echo_hooks.outgoing && echo.ncopies < 2) return;
    layout_t l = layout(b);
    echo_outgoing(fn, 1, sendbuf, l.count, l.dt, echo_comm_id(comm), -1);
    drop(&l);
}

/* what a copy receives of the output (nothing is built if nobody receives or looks) */
static layout_t output(blocks_t b) {
    return echo_has_copies() || echo_hooks.delivered ? layout(b) : (layout_t){0, MPI_BYTE, 0};
}

static int deliver(void *recvbuf, blocks_t b, int rc) {
    layout_t l = output(b);
    rc = echo_forward(recvbuf, l.count, l.dt, rc);
    drop(&l);
    return rc;
}

static MPI_Request wrap(MPI_Request real, int persistent, void *recvbuf, blocks_t b) {
    layout_t l = output(b);
    return l.owned ? echo_request_new_typed(real, persistent, recvbuf, l.dt)
                   : echo_request_new(real, persistent, 0, recvbuf, l.count, l.dt);
}

/* The neighbours of a call's communicator (none if it has no topology: the call
 * is erroneous and the representative's error is what copies return). */
#define NEIGHBORS(fn)                                             \
    echo_comm_t *c = echo_comm_get(comm, #fn);                    \
    struct echo_topo *t = c->topo;                                \
    int indeg = t ? t->indegree : 0, outdeg = t ? t->outdegree : 0; \
    const int *in = t ? t->in : NULL, *out = t ? t->out : NULL;   \
    int rc = MPI_SUCCESS;                                         \
    (void)indeg; (void)outdeg; (void)in; (void)out

/* allgather(v) sends one block to every neighbour: checked once if any is a process */
static blocks_t one_block(int outdeg, const int *out, int count, MPI_Datatype dt) {
    int real = 0;
    for (int i = 0; i < outdeg; i++) real |= out[i] != MPI_PROC_NULL;
    return (blocks_t){.n = real, .count = count, .dt = dt};
}

#define ALLGATHER_SEND one_block(outdeg, out, sendcount, sendtype) /* allgatherv's too */
#define ALLGATHER_RECV (blocks_t){.n = indeg, .peers = in, .count = recvcount, .dt = recvtype}
#define ALLGATHERV_RECV (blocks_t){.n = indeg, .peers = in, .counts = recvcounts, .displs = displs, .dt = recvtype}
#define ALLTOALL_SEND (blocks_t){.n = outdeg, .peers = out, .count = sendcount, .dt = sendtype}
#define ALLTOALL_RECV (blocks_t){.n = indeg, .peers = in, .count = recvcount, .dt = recvtype}
#define ALLTOALLV_SEND (blocks_t){.n = outdeg, .peers = out, .counts = sendcounts, .displs = sdispls, .dt = sendtype}
#define ALLTOALLV_RECV (blocks_t){.n = indeg, .peers = in, .counts = recvcounts, .displs = rdispls, .dt = recvtype}
#define ALLTOALLW_SEND \
    (blocks_t){.n = outdeg, .peers = out, .counts = sendcounts, .bdispls = sdispls, .types = sendtypes}
#define ALLTOALLW_RECV \
    (blocks_t){.n = indeg, .peers = in, .counts = recvcounts, .bdispls = rdispls, .types = recvtypes}

/* ---- a copy's own blocks on its self edges (echo_own.c) ----
 * A self edge (a periodic dimension of size 1, a graph's edge from a rank to itself) carries the caller's own
 * send block: on a copy it must hold the copy's own, not its representative's.  An allgather sends its one block
 * on every edge.  An all-to-all sends block j to out-neighbour j, and which self out-edge's block lands in which
 * self in-edge's is MPI's pairing of a process's messages to itself, which MPIs do not agree on: on a periodic
 * dimension of size 1, Open MPI's blocking forms swap the -1 and +1 blocks (as MPI-4 defines it), its
 * nonblocking ones keep each block in its place, MPICH's alltoall swaps them and its alltoallv does not.  A copy must
 * put its own blocks exactly where its representative's MPI put the representative's (else it would compute
 * from other data), so it asks its own MPI, once per call and form, on the copy only: the same collective on a
 * topology over MPI_COMM_SELF with the same self edges in the same order (a Cartesian grid of ones, periodic
 * where the real one has a self edge; a graph of the self edges alone), with numbered blocks. */
enum { ALLGATHER = -1, ALLTOALL, ALLTOALLV, ALLTOALLW };  /* the collective */
enum { BLOCKING, NONBLOCKING, PERSISTENT };             /* its form */

static MPI_Comm self_topology(const struct echo_topo *t) {
    MPI_Comm p = MPI_COMM_NULL;
    int n = t->ndims + t->nself_in + t->nself_out + 1;
    int *a = calloc((size_t)n, sizeof(int)), *b = calloc((size_t)n, sizeof(int)); /* zeros: rank 0, itself */
    if (t->kind == MPI_CART) {
        for (int d = 0; d < t->ndims; d++) {
            a[d] = 1;
            b[d] = t->dims[d] == 1 && t->periods[d];
        }
        PMPI_Cart_create(MPI_COMM_SELF, t->ndims, a, b, 0, &p);
    } else if (t->kind == MPI_GRAPH) {
        int index = t->nself_in;
        PMPI_Graph_create(MPI_COMM_SELF, 1, &index, a, 0, &p);
    } else {
        PMPI_Dist_graph_create_adjacent(MPI_COMM_SELF, t->nself_in, a, MPI_UNWEIGHTED, t->nself_out, b,
                                        MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &p);
    }
    free(a);
    free(b);
    if (p != MPI_COMM_NULL) PMPI_Comm_set_errhandler(p, MPI_ERRORS_RETURN);
    return p;
}

static int probe_call(MPI_Comm p, int call, int form, const int *send, int *recv, int n) {
    int *ones = malloc(sizeof(int) * (size_t)n), *displs = malloc(sizeof(int) * (size_t)n);
    MPI_Aint *bdispls = malloc(sizeof(MPI_Aint) * (size_t)n);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)n);
    for (int i = 0; i < n; i++) {
        ones[i] = 1;
        displs[i] = i;
        bdispls[i] = (MPI_Aint)(i * sizeof(int));
        types[i] = MPI_INT;
    }
    MPI_Request r = MPI_REQUEST_NULL;
    int rc;
    if (form == BLOCKING)
        rc = call == ALLTOALL    ? PMPI_Neighbor_alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, p)
             : call == ALLTOALLV ? PMPI_Neighbor_alltoallv(send, ones, displs, MPI_INT, recv, ones, displs, MPI_INT, p)
                                 : PMPI_Neighbor_alltoallw(send, ones, bdispls, types, recv, ones, bdispls, types, p);
    else if (form == NONBLOCKING)
        rc = call == ALLTOALL ? PMPI_Ineighbor_alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, p, &r)
             : call == ALLTOALLV
                 ? PMPI_Ineighbor_alltoallv(send, ones, displs, MPI_INT, recv, ones, displs, MPI_INT, p, &r)
                 : PMPI_Ineighbor_alltoallw(send, ones, bdispls, types, recv, ones, bdispls, types, p, &r);
    else
        rc = call == ALLTOALL ? PMPI_Neighbor_alltoall_init(send, 1, MPI_INT, recv, 1, MPI_INT, p, MPI_INFO_NULL, &r)
             : call == ALLTOALLV ? PMPI_Neighbor_alltoallv_init(send, ones, displs, MPI_INT, recv, ones, displs,
                                                                MPI_INT, p, MPI_INFO_NULL, &r)
                                 : PMPI_Neighbor_alltoallw_init(send, ones, bdispls, types, recv, ones, bdispls,
                                                                types, p, MPI_INFO_NULL, &r);
    if (rc == MPI_SUCCESS && form == PERSISTENT) rc = PMPI_Start(&r);
    if (rc == MPI_SUCCESS && form != BLOCKING) rc = PMPI_Wait(&r, MPI_STATUS_IGNORE);
    if (form == PERSISTENT && r != MPI_REQUEST_NULL) PMPI_Request_free(&r);
    free(ones);
    free(displs);
    free(bdispls);
    free(types);
    return rc;
}

/* for self in-edge k, the index m of the self out-edge whose block MPI delivers there (-1: not known, the copy
 * keeps its representative's block) */
static const int *pairing(struct echo_topo *t, int call, int form) {
    int **slot = &t->pairing[3 * call + form];
    if (*slot) return *slot;
    int *pair = *slot = malloc(sizeof(int) * (size_t)t->nself_in);
    for (int k = 0; k < t->nself_in; k++) pair[k] = -1;
    MPI_Comm p = t->nself_out ? self_topology(t) : MPI_COMM_NULL;
    if (p == MPI_COMM_NULL) return pair;
    /* the probe's edges: a Cartesian grid's are in the real grid's places (the others MPI_PROC_NULL), a graph's
     * are the self edges alone; send block j holds the number of its self out-edge */
    int cart = t->kind == MPI_CART, nin = cart ? t->indegree : t->nself_in, nout = cart ? t->outdegree : t->nself_out;
    int n = (nin > nout ? nin : nout) + 1;
    int *send = malloc(sizeof(int) * (size_t)n), *recv = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) send[i] = recv[i] = -1;
    for (int m = 0; m < t->nself_out; m++) send[cart ? t->self_out[m] : m] = m;
    if (probe_call(p, call, form, send, recv, n) == MPI_SUCCESS)
        for (int k = 0; k < t->nself_in; k++) {
            int m = recv[cart ? t->self_in[k] : k];
            pair[k] = m >= 0 && m < t->nself_out ? m : -1;
        }
    free(send);
    free(recv);
    PMPI_Comm_free(&p);
    return pair;
}

/* blocks pos[0..n-1] of one side of the buffer as one datatype over it (MPI_DATATYPE_NULL: a block MPI would
 * refuse, the call is erroneous and the representative's error is the copy's) */
static MPI_Datatype blocks_type(blocks_t b, const int *pos, int n) {
    MPI_Aint lb, extent = 0;
    if (!b.types && (b.dt == MPI_DATATYPE_NULL || echo_check_buffer(NULL, 0, b.dt) != MPI_SUCCESS))
        return MPI_DATATYPE_NULL;
    if (!b.types) PMPI_Type_get_extent(b.dt, &lb, &extent);
    int *len = malloc(sizeof(int) * (size_t)n);
    MPI_Aint *disp = malloc(sizeof(MPI_Aint) * (size_t)n);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)n), made = MPI_DATATYPE_NULL;
    int ok = 1;
    for (int k = 0; k < n; k++) {
        int i = pos[k];
        len[k] = b.counts ? b.counts[i] : b.count;
        disp[k] = b.bdispls ? b.bdispls[i] : (MPI_Aint)(b.displs ? b.displs[i] : i * b.count) * extent;
        types[k] = b.types ? b.types[i] : b.dt;
        ok &= len[k] >= 0 && types[k] != MPI_DATATYPE_NULL && echo_check_buffer(NULL, 0, types[k]) == MPI_SUCCESS;
    }
    if (ok && PMPI_Type_create_struct(n, len, disp, types, &made) == MPI_SUCCESS) PMPI_Type_commit(&made);
    free(len);
    free(disp);
    free(types);
    return made;
}

/* A copy's own blocks of a neighbourhood collective, as one echo_own_t (its two types are made here: `made`,
 * freed by made_free once the own data is put or a request keeps its own duplicates); nothing on a
 * representative */
static void own_edges(echo_own_t *o, MPI_Datatype made[2], struct echo_topo *t, int call, int form,
                      const void *sendbuf, blocks_t send, void *recvbuf, blocks_t recv) {
    memset(o, 0, sizeof *o);
    made[0] = made[1] = MPI_DATATYPE_NULL;
    if (!t || !t->nself_in || echo_is_rep()) return; /* only a copy whose topology has self edges builds it */
    const int *pair = call == ALLGATHER ? NULL : pairing(t, call, form);
    int n = 0, *spos = malloc(sizeof(int) * (size_t)t->nself_in), *rpos = malloc(sizeof(int) * (size_t)t->nself_in);
    for (int k = 0; k < t->nself_in; k++) {
        if (pair && pair[k] < 0) continue;
        rpos[n] = t->self_in[k];
        spos[n++] = pair ? t->self_out[pair[k]] : 0; /* an allgather's send buffer is its one block */
    }
    if (n > 0) {
        made[0] = blocks_type(send, spos, n);
        made[1] = blocks_type(recv, rpos, n);
        if (made[0] != MPI_DATATYPE_NULL && made[1] != MPI_DATATYPE_NULL)
            echo_own_set(o, sendbuf, 1, made[0], recvbuf, 1, made[1]);
    }
    free(spos);
    free(rpos);
}

static void made_free(MPI_Datatype made[2]) {
    for (int i = 0; i < 2; i++)
        if (made[i] != MPI_DATATYPE_NULL) PMPI_Type_free(&made[i]);
}

/* Each collective in its three forms: blocking, nonblocking (the output is
 * forwarded when the request is retired) and persistent (the same at every
 * completion; the contribution is not checked at MPI_Start, which knows only
 * point-to-point sends).  One line per function names it for gen_wrappers.py. */
#define ECHO_DEFINE_NEIGHBOR(fn, call, SEND, RECV, params, args)                              \
    int echo_##fn params {                                                                    \
        NEIGHBORS(fn);                                                                        \
        contribute(#fn, comm, sendbuf, SEND);                                                 \
        echo_own_t own;                                                                       \
        MPI_Datatype made[2];                                                                 \
        own_edges(&own, made, t, call, BLOCKING, sendbuf, SEND, recvbuf, RECV);               \
        echo_own_keep(&own);                                                                  \
        if (echo_is_rep()) rc = P##fn args;                                                   \
        rc = echo_own_put(&own, deliver(recvbuf, RECV, rc));                                  \
        made_free(made);                                                                      \
        return rc;                                                                            \
    }

#define ECHO_DEFINE_INEIGHBOR(fn, call, SEND, RECV, params, args)                             \
    int echo_##fn params {                                                                    \
        NEIGHBORS(fn);                                                                        \
        MPI_Request real = MPI_REQUEST_NULL;                                                  \
        contribute(#fn, comm, sendbuf, SEND);                                                 \
        if (echo_is_rep()) rc = P##fn args;                                                   \
        *request = wrap(real, 0, recvbuf, RECV);                                              \
        echo_own_t own;                                                                       \
        MPI_Datatype made[2];                                                                 \
        own_edges(&own, made, t, call, NONBLOCKING, sendbuf, SEND, recvbuf, RECV);            \
        echo_request_own(*request, &own);                                                     \
        made_free(made);                                                                      \
        return rc;                                                                            \
    }

#define ECHO_DEFINE_NEIGHBOR_INIT(fn, call, SEND, RECV, params, args)                         \
    int echo_##fn params {                                                                    \
        NEIGHBORS(fn);                                                                        \
        MPI_Request real = MPI_REQUEST_NULL;                                                  \
        if (echo_is_rep()) rc = P##fn args;                                                   \
        *request = wrap(real, 1, recvbuf, RECV);                                              \
        echo_own_t own;                                                                       \
        MPI_Datatype made[2];                                                                 \
        own_edges(&own, made, t, call, PERSISTENT, sendbuf, SEND, recvbuf, RECV);             \
        echo_request_own(*request, &own);                                                     \
        made_free(made);                                                                      \
        return rc;                                                                            \
    }

/* parameters and real-call arguments of each collective */
#define P_ALLGATHER const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount, \
                    MPI_Datatype recvtype, MPI_Comm comm
#define A_ALLGATHER sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, c->real
#define P_ALLGATHERV const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, \
                     const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm
#define A_ALLGATHERV sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, c->real
#define P_ALLTOALLV const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, \
                    void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm
#define A_ALLTOALLV sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, c->real
#define P_ALLTOALLW const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[], \
                    const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const MPI_Aint rdispls[], \
                    const MPI_Datatype recvtypes[], MPI_Comm comm
#define A_ALLTOALLW sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, c->real
#define I_PARAMS , MPI_Request *request
#define I_ARGS , &real
#define INIT_PARAMS , MPI_Info info, MPI_Request *request
#define INIT_ARGS , info, &real

ECHO_DEFINE_NEIGHBOR(MPI_Neighbor_allgather, ALLGATHER, ALLGATHER_SEND, ALLGATHER_RECV, (P_ALLGATHER), (A_ALLGATHER))
ECHO_DEFINE_INEIGHBOR(MPI_Ineighbor_allgather, ALLGATHER, ALLGATHER_SEND, ALLGATHER_RECV,
                      (P_ALLGATHER I_PARAMS), (A_ALLGATHER I_ARGS))
ECHO_DEFINE_NEIGHBOR_INIT(MPI_Neighbor_allgather_init, ALLGATHER, ALLGATHER_SEND, ALLGATHER_RECV,
                          (P_ALLGATHER INIT_PARAMS), (A_ALLGATHER INIT_ARGS))

ECHO_DEFINE_NEIGHBOR(MPI_Neighbor_allgatherv, ALLGATHER, ALLGATHER_SEND, ALLGATHERV_RECV, (P_ALLGATHERV),
                     (A_ALLGATHERV))
ECHO_DEFINE_INEIGHBOR(MPI_Ineighbor_allgatherv, ALLGATHER, ALLGATHER_SEND, ALLGATHERV_RECV,
                      (P_ALLGATHERV I_PARAMS), (A_ALLGATHERV I_ARGS))
ECHO_DEFINE_NEIGHBOR_INIT(MPI_Neighbor_allgatherv_init, ALLGATHER, ALLGATHER_SEND, ALLGATHERV_RECV,
                          (P_ALLGATHERV INIT_PARAMS), (A_ALLGATHERV INIT_ARGS))

ECHO_DEFINE_NEIGHBOR(MPI_Neighbor_alltoall, ALLTOALL, ALLTOALL_SEND, ALLTOALL_RECV, (P_ALLGATHER), (A_ALLGATHER))
ECHO_DEFINE_INEIGHBOR(MPI_Ineighbor_alltoall, ALLTOALL, ALLTOALL_SEND, ALLTOALL_RECV,
                      (P_ALLGATHER I_PARAMS), (A_ALLGATHER I_ARGS))
ECHO_DEFINE_NEIGHBOR_INIT(MPI_Neighbor_alltoall_init, ALLTOALL, ALLTOALL_SEND, ALLTOALL_RECV,
                          (P_ALLGATHER INIT_PARAMS), (A_ALLGATHER INIT_ARGS))

ECHO_DEFINE_NEIGHBOR(MPI_Neighbor_alltoallv, ALLTOALLV, ALLTOALLV_SEND, ALLTOALLV_RECV, (P_ALLTOALLV),
                     (A_ALLTOALLV))
ECHO_DEFINE_INEIGHBOR(MPI_Ineighbor_alltoallv, ALLTOALLV, ALLTOALLV_SEND, ALLTOALLV_RECV,
                      (P_ALLTOALLV I_PARAMS), (A_ALLTOALLV I_ARGS))
ECHO_DEFINE_NEIGHBOR_INIT(MPI_Neighbor_alltoallv_init, ALLTOALLV, ALLTOALLV_SEND, ALLTOALLV_RECV,
                          (P_ALLTOALLV INIT_PARAMS), (A_ALLTOALLV INIT_ARGS))

ECHO_DEFINE_NEIGHBOR(MPI_Neighbor_alltoallw, ALLTOALLW, ALLTOALLW_SEND, ALLTOALLW_RECV, (P_ALLTOALLW),
                     (A_ALLTOALLW))
ECHO_DEFINE_INEIGHBOR(MPI_Ineighbor_alltoallw, ALLTOALLW, ALLTOALLW_SEND, ALLTOALLW_RECV,
                      (P_ALLTOALLW I_PARAMS), (A_ALLTOALLW I_ARGS))
ECHO_DEFINE_NEIGHBOR_INIT(MPI_Neighbor_alltoallw_init, ALLTOALLW, ALLTOALLW_SEND, ALLTOALLW_RECV,
                          (P_ALLTOALLW INIT_PARAMS), (A_ALLTOALLW INIT_ARGS))
