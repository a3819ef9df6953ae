/* A process topology's description, parsed (struct echo_topo): what MPI's own queries answer on the
 * representative's communicator (echo_topo_desc.c reads it and parses it), and the arithmetic of a Cartesian grid.
 * The creation, the queries and the neighbourhood collectives (echo_topo.c) read it; communicator registration
 * (echo_comm.c) carries it to the copies. */
#ifndef ECHO_TOPO_DESC_H
#define ECHO_TOPO_DESC_H
#include "echo_clone.h"

struct echo_topo {
    int kind;       /* MPI_CART, MPI_GRAPH or MPI_DIST_GRAPH */
    int rank, size; /* of this process in the communicator */
    int *desc;      /* the description; the arrays below point into it */
    /* MPI_CART: desc = kind, ndims, dims[ndims], periods[ndims] */
    int ndims;
    const int *dims, *periods;
    int *coords;    /* this process's, row-major from its rank (as the standard numbers them) */
    /* MPI_GRAPH: desc = kind, nnodes, nedges, index[nnodes], edges[nedges] */
    int nnodes, nedges;
    const int *index, *edges;
    /* MPI_DIST_GRAPH: desc = kind, indegree, outdegree, weighted, has_inw, has_outw,
     * sources[in], sourceweights[in], destinations[out], destweights[out];
     * has_*w: whether MPI's query writes those weights (else it leaves them alone) */
    int weighted;
    const int *inw, *outw; /* NULL when MPI leaves them alone */
    /* every kind: the neighbours in the order of the collectives' buffer blocks
     * (MPI_PROC_NULL keeps its block) */
    int indegree, outdegree;
    const int *in, *out;
    int *cart_neighbors; /* MPI_CART: in == out == this */
    /* self edges (a periodic dimension of size 1, a graph's edge to itself): their positions in `in` and `out`,
     * and per all-to-all call (PAIR_CALLS), which self out-edge's block MPI delivers on each self in-edge
     * (probed at the call's first use on a copy: echo_own.c's own data, and MPIs pair them differently) */
    int nself_in, nself_out;
    int *self_in, *self_out;
    int *pairing[9];
};

/* row-major coordinates of `rank` (MPI numbers a Cartesian grid that way) */
static inline void coords_of(const struct echo_topo *t, int rank, int *coords) {
    for (int i = t->ndims - 1; i >= 0; i--) {
        coords[i] = rank % t->dims[i];
        rank /= t->dims[i];
    }
}

/* a coordinate of a periodic dimension wraps into range (others are in range already) */
static inline long wrapped(long x, long dim) { return ((x % dim) + dim) % dim; }

static inline int rank_of(const struct echo_topo *t, const int *coords) {
    int rank = 0;
    for (int i = 0; i < t->ndims; i++) rank = rank * t->dims[i] + (int)wrapped(coords[i], t->dims[i]);
    return rank;
}

/* the rank `disp` steps from this process along `dir`, MPI_PROC_NULL off a non-periodic edge */
static inline int shifted(const struct echo_topo *t, int dir, long disp) {
    long x = t->coords[dir] + disp, dim = t->dims[dir], stride = 1;
    if (!t->periods[dir] && (x < 0 || x >= dim)) return MPI_PROC_NULL;
    for (int i = dir + 1; i < t->ndims; i++) stride *= t->dims[i];
    return t->rank + (int)((wrapped(x, dim) - t->coords[dir]) * stride);
}

#endif
