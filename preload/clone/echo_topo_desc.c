/* A process topology's description: read from the representative's real communicator (echo_topo_describe, what
 * MPI's own queries answer on it), carried to the copies with the communicator (echo_comm.c) and parsed on both
 * sides (echo_topo_new).  It uses nothing of the clone layer: registration calls it, and the constructors, queries
 * and neighbourhood collectives that use the parsed description are echo_topo.c's. */
#include "echo_topo_desc.h"

#include <stdlib.h>
#include <string.h>

int echo_topo_describe(MPI_Comm real, int **desc) {
    int kind, n = 0, *d = NULL;
    *desc = NULL;
    if (PMPI_Topo_test(real, &kind) != MPI_SUCCESS) return 0;
    if (kind == MPI_CART) {
        int ndims;
        PMPI_Cartdim_get(real, &ndims);
        n = 2 + 2 * ndims;
        d = malloc(sizeof(int) * (size_t)(n + ndims));
        d[1] = ndims;
        PMPI_Cart_get(real, ndims, d + 2, d + 2 + ndims, d + n); /* own coordinates: scratch */
    } else if (kind == MPI_GRAPH) {
        int nnodes, nedges;
        PMPI_Graphdims_get(real, &nnodes, &nedges);
        n = 3 + nnodes + nedges;
        d = malloc(sizeof(int) * (size_t)n);
        d[1] = nnodes;
        d[2] = nedges;
        PMPI_Graph_get(real, nnodes, nedges, d + 3, d + 3 + nnodes);
    } else if (kind == MPI_DIST_GRAPH) {
        int in, out, weighted;
        PMPI_Dist_graph_neighbors_count(real, &in, &out, &weighted);
        n = 6 + 2 * in + 2 * out;
        d = malloc(sizeof(int) * (size_t)n);
        d[1] = in;
        d[2] = out;
        d[3] = weighted;
        int *src = d + 6, *srcw = src + in, *dst = srcw + in, *dstw = dst + out;
        /* weights are non-negative: a -1 left in place means MPI does not write them */
        for (int i = 0; i < in; i++) srcw[i] = -1;
        for (int i = 0; i < out; i++) dstw[i] = -1;
        PMPI_Dist_graph_neighbors(real, in, src, srcw, out, dst, dstw);
        d[4] = in > 0 && srcw[0] != -1;
        d[5] = out > 0 && dstw[0] != -1;
    } else {
        return 0;
    }
    d[0] = kind;
    *desc = d;
    return n;
}

struct echo_topo *echo_topo_new(const int *desc, int n, int rank, int size) {
    if (n == 0) return NULL;
    struct echo_topo *t = calloc(1, sizeof *t);
    t->desc = malloc(sizeof(int) * (size_t)n);
    memcpy(t->desc, desc, sizeof(int) * (size_t)n);
    const int *d = t->desc;
    t->kind = d[0];
    t->rank = rank;
    t->size = size;
    if (t->kind == MPI_CART) {
        t->ndims = d[1];
        t->dims = d + 2;
        t->periods = d + 2 + t->ndims;
        t->coords = malloc(sizeof(int) * (size_t)(t->ndims + 1));
        coords_of(t, rank, t->coords);
        /* per dimension, the source then the destination of a shift by +1 */
        t->cart_neighbors = malloc(sizeof(int) * (size_t)(2 * t->ndims + 1));
        for (int i = 0; i < t->ndims; i++) {
            t->cart_neighbors[2 * i] = shifted(t, i, -1);
            t->cart_neighbors[2 * i + 1] = shifted(t, i, 1);
        }
        t->indegree = t->outdegree = 2 * t->ndims;
        t->in = t->out = t->cart_neighbors;
    } else if (t->kind == MPI_GRAPH) {
        t->nnodes = d[1];
        t->nedges = d[2];
        t->index = d + 3;
        t->edges = d + 3 + t->nnodes;
        int first = rank == 0 ? 0 : t->index[rank - 1];
        t->indegree = t->outdegree = t->index[rank] - first;
        t->in = t->out = t->edges + first;
    } else {
        t->indegree = d[1];
        t->outdegree = d[2];
        t->weighted = d[3];
        t->in = d + 6;
        t->inw = d[4] ? t->in + t->indegree : NULL;
        t->out = d + 6 + 2 * t->indegree;
        t->outw = d[5] ? t->out + t->outdegree : NULL;
    }
    t->self_in = malloc(sizeof(int) * (size_t)(t->indegree + 1));
    t->self_out = malloc(sizeof(int) * (size_t)(t->outdegree + 1));
    for (int i = 0; i < t->indegree; i++)
        if (t->in[i] == rank) t->self_in[t->nself_in++] = i;
    for (int i = 0; i < t->outdegree; i++)
        if (t->out[i] == rank) t->self_out[t->nself_out++] = i;
    return t;
}

void echo_topo_free(struct echo_topo *t) {
    if (!t) return;
    free(t->coords);
    free(t->cart_neighbors);
    free(t->self_in);
    free(t->self_out);
    for (int i = 0; i < 9; i++) free(t->pairing[i]);
    free(t->desc);
    free(t);
}
