/* Process topologies and neighbourhood collectives: periodic and non-periodic
 * Cartesian grids (shifts, coordinates, ranks, Cart_sub rows and columns), a
 * graph, distributed graphs (adjacent and not, weighted and not), every query,
 * a dup of each, and every neighbourhood collective blocking, nonblocking and
 * persistent (started twice).  Receive buffers start at -1, so the blocks of
 * MPI_PROC_NULL neighbours (left alone by MPI) show.  What is never sent (the
 * blocks for MPI_PROC_NULL, the gaps between blocks) holds this process's pid:
 * copies differ there, and the SDC check must not look at it. */
#include "battery.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CNT 2 /* ints per block */

static void print_ranks(const char *what, const int *v, int n) {
    printf("r%d: %s:", rank, what);
    for (int i = 0; i < n; i++) {
        if (v[i] == MPI_PROC_NULL) printf(" null");
        else printf(" %d", v[i]);
    }
    printf("\n");
}

static void degrees(MPI_Comm comm, int *in, int *out) {
    int kind, weighted, r;
    MPI_Topo_test(comm, &kind);
    if (kind == MPI_CART) {
        MPI_Cartdim_get(comm, in);
        *in *= 2;
        *out = *in;
    } else if (kind == MPI_GRAPH) {
        MPI_Comm_rank(comm, &r);
        MPI_Graph_neighbors_count(comm, r, in);
        *out = *in;
    } else {
        MPI_Dist_graph_neighbors_count(comm, in, out, &weighted);
    }
}

static void cart_queries(MPI_Comm cart, const char *name) {
    int r, s, kind, ndims, inter;
    MPI_Comm_rank(cart, &r);
    MPI_Comm_size(cart, &s);
    MPI_Topo_test(cart, &kind);
    MPI_Cartdim_get(cart, &ndims);
    MPI_Comm_test_inter(cart, &inter);
    SAY("%s: rank %d size %d cart %d ndims %d inter %d", name, r, s, kind == MPI_CART, ndims, inter);
    int dims[4], periods[4], coords[4], c2[4];
    MPI_Cart_get(cart, 4, dims, periods, coords);
    print_ranks("  dims", dims, ndims);
    print_ranks("  periods", periods, ndims);
    print_ranks("  coords", coords, ndims);
    for (int q = 0; q < s; q++) {
        int back;
        MPI_Cart_coords(cart, q, ndims, c2);
        MPI_Cart_rank(cart, c2, &back);
        printf("r%d:   rank %d coords", rank, q);
        for (int i = 0; i < ndims; i++) printf(" %d", c2[i]);
        printf(" back %d\n", back);
    }
    /* coordinates out of range wrap in periodic dimensions */
    int all_periodic = 1;
    for (int i = 0; i < ndims; i++) all_periodic &= periods[i];
    if (all_periodic && ndims > 0) {
        int wr;
        for (int i = 0; i < ndims; i++) c2[i] = coords[i] - dims[i] - 1;
        MPI_Cart_rank(cart, c2, &wr);
        SAY("  wrapped rank %d", wr);
    }
    for (int d = 0; d < ndims; d++) {
        int disps[] = {1, -1, 2, 0, 5};
        for (int k = 0; k < 5; k++) {
            int src, dst;
            MPI_Cart_shift(cart, d, disps[k], &src, &dst);
            int v[2] = {src, dst};
            char what[64];
            snprintf(what, sizeof what, "  shift dim %d by %d", d, disps[k]);
            print_ranks(what, v, 2);
        }
    }
}

static void graph_queries(MPI_Comm g, const char *name) {
    int kind, nnodes, nedges, r;
    MPI_Topo_test(g, &kind);
    MPI_Comm_rank(g, &r);
    MPI_Graphdims_get(g, &nnodes, &nedges);
    SAY("%s: rank %d graph %d nnodes %d nedges %d", name, r, kind == MPI_GRAPH, nnodes, nedges);
    int *index = malloc(sizeof(int) * (size_t)nnodes), *edges = malloc(sizeof(int) * (size_t)(nedges + 1));
    MPI_Graph_get(g, nnodes, nedges, index, edges);
    print_ranks("  index", index, nnodes);
    print_ranks("  edges", edges, nedges);
    for (int q = 0; q < nnodes; q++) {
        int n, nb[16];
        MPI_Graph_neighbors_count(g, q, &n);
        MPI_Graph_neighbors(g, q, 16, nb);
        char what[64];
        snprintf(what, sizeof what, "  neighbours of %d (%d)", q, n);
        print_ranks(what, nb, n);
    }
    free(index);
    free(edges);
}

static int by_value(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

/* `arrival`: MPI orders the neighbours of a graph given edge by edge as the
 * edges arrive, so the lists are compared between copies only ("order:"), and
 * sorted (neighbour * 1000 + weight) as well. */
static void dist_queries(MPI_Comm g, const char *name, int arrival) {
    int kind, in, out, weighted, r;
    MPI_Topo_test(g, &kind);
    MPI_Comm_rank(g, &r);
    MPI_Dist_graph_neighbors_count(g, &in, &out, &weighted);
    SAY("%s: rank %d dist graph %d in %d out %d weighted %d", name, r, kind == MPI_DIST_GRAPH, in, out, weighted);
    int src[16], srcw[16], dst[16], dstw[16];
    for (int i = 0; i < 16; i++) srcw[i] = dstw[i] = -7; /* left alone when unweighted */
    MPI_Dist_graph_neighbors(g, 16, src, srcw, 16, dst, dstw);
    const char *order = arrival ? "order: " : "";
    char what[64];
    snprintf(what, sizeof what, "  %ssources", order);
    print_ranks(what, src, in);
    snprintf(what, sizeof what, "  %ssource weights", order);
    print_ranks(what, srcw, in);
    snprintf(what, sizeof what, "  %sdestinations", order);
    print_ranks(what, dst, out);
    snprintf(what, sizeof what, "  %sdestination weights", order);
    print_ranks(what, dstw, out);
    if (!arrival) return;
    for (int i = 0; i < in; i++) src[i] = src[i] * 1000 + srcw[i];
    for (int i = 0; i < out; i++) dst[i] = dst[i] * 1000 + dstw[i];
    qsort(src, (size_t)in, sizeof(int), by_value);
    qsort(dst, (size_t)out, sizeof(int), by_value);
    print_ranks("  sorted sources and weights", src, in);
    print_ranks("  sorted destinations and weights", dst, out);
}

/* Queries the standard calls erroneous, with errors returned: copies must
 * return the representative's error (and whatever it wrote). */
static void erroneous_queries(MPI_Comm grid, MPI_Comm ring) {
    MPI_Comm_set_errhandler(grid, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN);
    int rc[6], out[6] = {-9, -9, -9, -9, -9, -9}, coords[2] = {-9, -9};
    rc[0] = MPI_Cart_coords(grid, -1, 2, coords);
    rc[1] = MPI_Cart_shift(grid, -1, 1, &out[0], &out[1]);
    rc[2] = MPI_Cart_rank(grid, (int[]){-1, 0}, &out[2]);
    rc[3] = MPI_Graph_neighbors_count(grid, 0, &out[3]);
    rc[4] = MPI_Cartdim_get(ring, &out[4]);
    rc[5] = MPI_Graph_neighbors_count(ring, -1, &out[5]);
    for (int i = 0; i < 6; i++) MPI_Error_class(rc[i], &rc[i]);
    print_ranks("erroneous queries: error classes", rc, 6);
    print_ranks("  outputs", out, 6);
    print_ranks("  coords", coords, 2);
    MPI_Comm_set_errhandler(grid, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_set_errhandler(ring, MPI_ERRORS_ARE_FATAL);
}

/* The value rank `rank` sends in block b, element e, of round `round`. */
static int val(int b, int e, int round) { return 1000 * round + 100 * rank + 10 * b + e; }

enum { BLOCKING, NONBLOCKING, PERSISTENT };
static const char *form_name[] = {"", "I", "init "};

/* Complete a request made by a nonblocking or persistent call (persistent:
 * start, wait; twice, with new data) and print the receive buffer after each. */
static void show(const char *what, int form, int round, const int *recv, int nrecv, int arrival) {
    char line[96];
    snprintf(line, sizeof line, "  %s%s%s round %d", arrival ? "order: " : "", form_name[form], what, round);
    print_ranks(line, recv, nrecv);
    if (!arrival) return;
    int *sorted = malloc(sizeof(int) * (size_t)nrecv);
    memcpy(sorted, recv, sizeof(int) * (size_t)nrecv);
    qsort(sorted, (size_t)nrecv, sizeof(int), by_value);
    snprintf(line, sizeof line, "  %s%s round %d sorted", form_name[form], what, round);
    print_ranks(line, sorted, nrecv);
    free(sorted);
}

/* `arrival`: the blocks come in the order of the neighbours, which may be arrival order (see dist_queries) */
static void neighbor_collectives(MPI_Comm comm, const char *name, int arrival) {
    int in, out;
    degrees(comm, &in, &out);
    SAY("%s: neighbour collectives, in %d out %d", name, in, out);
    int nsend = out * CNT * 2 + 2, nrecv = in * CNT * 2 + 2;
    int *send = malloc(sizeof(int) * (size_t)nsend), *recv = malloc(sizeof(int) * (size_t)nrecv);
    int *rcounts = malloc(sizeof(int) * (size_t)(in + 1)), *rdispls = malloc(sizeof(int) * (size_t)(in + 1));
    int *scounts = malloc(sizeof(int) * (size_t)(out + 1)), *sdispls = malloc(sizeof(int) * (size_t)(out + 1));
    MPI_Aint *rb = malloc(sizeof(MPI_Aint) * (size_t)(in + 1)), *sb = malloc(sizeof(MPI_Aint) * (size_t)(out + 1));
    MPI_Datatype *rtypes = malloc(sizeof(MPI_Datatype) * (size_t)(in + 1));
    MPI_Datatype *stypes = malloc(sizeof(MPI_Datatype) * (size_t)(out + 1));
    MPI_Datatype pair; /* receives alltoallw blocks as one pair of ints */
    MPI_Type_contiguous(CNT, MPI_INT, &pair);
    MPI_Type_commit(&pair);
    /* v and w layouts: blocks in reverse order with a one-int gap after each */
    for (int i = 0; i < in; i++) {
        rcounts[i] = CNT;
        rdispls[i] = (in - 1 - i) * (CNT + 1);
        rb[i] = (MPI_Aint)rdispls[i] * (MPI_Aint)sizeof(int);
        rtypes[i] = pair;
    }
    for (int i = 0; i < out; i++) {
        scounts[i] = CNT;
        sdispls[i] = (out - 1 - i) * (CNT + 1);
        sb[i] = (MPI_Aint)sdispls[i] * (MPI_Aint)sizeof(int);
        stypes[i] = MPI_INT;
    }
    int wcounts[16];
    for (int i = 0; i < in && i < 16; i++) wcounts[i] = 1; /* one pair per block */
    /* the destinations, in block order: a grid's edges have none (MPI_PROC_NULL) */
    int kind, *dests = calloc((size_t)out + 1, sizeof(int));
    MPI_Topo_test(comm, &kind);
    for (int d = 0; kind == MPI_CART && d < out / 2; d++) MPI_Cart_shift(comm, d, 1, &dests[2 * d], &dests[2 * d + 1]);

    for (int form = BLOCKING; form <= PERSISTENT; form++) {
        for (int op = 0; op < 5; op++) {
            static const char *ops[] = {"allgather", "allgatherv", "alltoall", "alltoallv", "alltoallw"};
            MPI_Request req = MPI_REQUEST_NULL;
            int rounds = form == PERSISTENT ? 2 : 1;
            for (int round = 0; round < rounds; round++) {
                for (int i = 0; i < nsend; i++) send[i] = (int)getpid();
                for (int i = 0; i < nrecv; i++) recv[i] = -1;
                /* allgather(v) sends one block; alltoall one per neighbour, alltoallv/w at sdispls */
                for (int b = 0; b < out; b++)
                    for (int e = 0; e < CNT && (op <= 1 || dests[b] != MPI_PROC_NULL); e++) {
                        int at = op <= 1 ? e : op == 2 ? b * CNT + e : sdispls[b] + e;
                        send[at] = op <= 1 ? val(0, e, round) : val(b, e, round);
                    }
                if (op <= 1 && out == 0)
                    for (int e = 0; e < CNT; e++) send[e] = val(0, e, round);
                if (form == PERSISTENT && round > 0) {
                    MPI_Start(&req);
                    MPI_Wait(&req, MPI_STATUS_IGNORE);
                    show(ops[op], form, round, recv, nrecv, arrival);
                    continue;
                }
                int b = form == BLOCKING, nb = form == NONBLOCKING;
                switch (op) {
                case 0:
                    if (b) MPI_Neighbor_allgather(send, CNT, MPI_INT, recv, CNT, MPI_INT, comm);
                    else if (nb) MPI_Ineighbor_allgather(send, CNT, MPI_INT, recv, CNT, MPI_INT, comm, &req);
                    else MPI_Neighbor_allgather_init(send, CNT, MPI_INT, recv, CNT, MPI_INT, comm, MPI_INFO_NULL, &req);
                    break;
                case 1:
                    if (b) MPI_Neighbor_allgatherv(send, CNT, MPI_INT, recv, rcounts, rdispls, MPI_INT, comm);
                    else if (nb)
                        MPI_Ineighbor_allgatherv(send, CNT, MPI_INT, recv, rcounts, rdispls, MPI_INT, comm, &req);
                    else MPI_Neighbor_allgatherv_init(send, CNT, MPI_INT, recv, rcounts, rdispls, MPI_INT, comm,
                                                      MPI_INFO_NULL, &req);
                    break;
                case 2:
                    if (b) MPI_Neighbor_alltoall(send, CNT, MPI_INT, recv, CNT, MPI_INT, comm);
                    else if (nb) MPI_Ineighbor_alltoall(send, CNT, MPI_INT, recv, CNT, MPI_INT, comm, &req);
                    else MPI_Neighbor_alltoall_init(send, CNT, MPI_INT, recv, CNT, MPI_INT, comm, MPI_INFO_NULL, &req);
                    break;
                case 3:
                    if (b)
                        MPI_Neighbor_alltoallv(send, scounts, sdispls, MPI_INT, recv, rcounts, rdispls, MPI_INT, comm);
                    else if (nb)
                        MPI_Ineighbor_alltoallv(send, scounts, sdispls, MPI_INT, recv, rcounts, rdispls, MPI_INT, comm,
                                                &req);
                    else MPI_Neighbor_alltoallv_init(send, scounts, sdispls, MPI_INT, recv, rcounts, rdispls, MPI_INT,
                                                     comm, MPI_INFO_NULL, &req);
                    break;
                default:
                    if (b) MPI_Neighbor_alltoallw(send, scounts, sb, stypes, recv, wcounts, rb, rtypes, comm);
                    else if (nb)
                        MPI_Ineighbor_alltoallw(send, scounts, sb, stypes, recv, wcounts, rb, rtypes, comm, &req);
                    else MPI_Neighbor_alltoallw_init(send, scounts, sb, stypes, recv, wcounts, rb, rtypes, comm,
                                                     MPI_INFO_NULL, &req);
                    break;
                }
                if (form == PERSISTENT) MPI_Start(&req);
                if (form != BLOCKING) MPI_Wait(&req, MPI_STATUS_IGNORE);
                show(ops[op], form, round, recv, nrecv, arrival);
            }
            if (form == PERSISTENT) MPI_Request_free(&req);
        }
    }
    MPI_Type_free(&pair);
    free(send); free(recv); free(rcounts); free(rdispls); free(scounts); free(sdispls);
    free(rb); free(sb); free(rtypes); free(stypes); free(dests);
}

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    int dims[2] = {0, 0}, kind;
    MPI_Dims_create(size, 2, dims);
    SAY("dims %d x %d", dims[0], dims[1]);
    MPI_Topo_test(MPI_COMM_WORLD, &kind);
    SAY("world topology undefined %d", kind == MPI_UNDEFINED);

    /* periodic grid, reorder allowed: the copies' rank must follow */
    MPI_Comm torus, grid;
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, (int[]){1, 1}, 1, &torus);
    cart_queries(torus, "torus");
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, (int[]){0, 0}, 0, &grid);
    cart_queries(grid, "grid");

    /* Cart_sub: rows and columns of the grid, a sum over each */
    for (int keep = 0; keep < 2; keep++) {
        MPI_Comm sub;
        int remain[2] = {keep == 0, keep == 1}, sum;
        MPI_Cart_sub(grid, remain, &sub);
        cart_queries(sub, keep == 0 ? "column" : "row");
        MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, sub);
        SAY("  sum of world ranks %d", sum);
        MPI_Comm_free(&sub);
    }

    /* a line that leaves out the last rank (when there is more than one) */
    MPI_Comm line;
    int n1 = size > 1 ? size - 1 : 1;
    MPI_Cart_create(MPI_COMM_WORLD, 1, &n1, (int[]){0}, 0, &line);
    if (line == MPI_COMM_NULL) {
        SAY("not on the line");
    } else {
        cart_queries(line, "line");
        MPI_Comm_free(&line);
    }

    /* a dup keeps the topology */
    MPI_Comm torus2;
    MPI_Comm_dup(torus, &torus2);
    cart_queries(torus2, "torus dup");

    int mapped;
    MPI_Cart_map(MPI_COMM_WORLD, 2, dims, (int[]){1, 1}, &mapped);
    SAY("cart map %d", mapped);

    /* a ring as a graph: node i next to i-1 and i+1 */
    int *index = malloc(sizeof(int) * (size_t)size), *edges = malloc(sizeof(int) * (size_t)(2 * size));
    for (int i = 0; i < size; i++) {
        index[i] = 2 * (i + 1);
        edges[2 * i] = (i + size - 1) % size;
        edges[2 * i + 1] = (i + 1) % size;
    }
    MPI_Graph_map(MPI_COMM_WORLD, size, index, edges, &mapped);
    SAY("graph map %d", mapped);
    MPI_Comm ring, ring2;
    MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 1, &ring);
    graph_queries(ring, "ring");
    MPI_Comm_dup(ring, &ring2);
    graph_queries(ring2, "ring dup");

    /* distributed graphs: adjacent (from i-1 and i-2, to i+1 and i+2) with and
     * without weights, and one given edge by edge (to i+1 and i+3, weighted) */
    int srcs[2] = {(rank + size - 1) % size, (rank + 2 * size - 2) % size};
    int dsts[2] = {(rank + 1) % size, (rank + 2) % size};
    int sw[2] = {10 + rank, 20 + rank}, dw[2] = {30 + rank, 40 + rank};
    MPI_Comm adj, adj_unweighted, edgewise, edgewise2;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, srcs, sw, 2, dsts, dw, MPI_INFO_NULL, 0, &adj);
    dist_queries(adj, "adjacent", 0);
    /* GCC takes MPI_UNWEIGHTED, a sentinel address, for an array it would read */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, srcs, MPI_UNWEIGHTED, 2, dsts, MPI_UNWEIGHTED, MPI_INFO_NULL,
                                   1, &adj_unweighted);
#pragma GCC diagnostic pop
    dist_queries(adj_unweighted, "adjacent unweighted", 0);
    int targets[2] = {(rank + 1) % size, (rank + 3) % size}, weights[2] = {rank, rank + 5};
    MPI_Dist_graph_create(MPI_COMM_WORLD, 1, &rank, (int[]){2}, targets, weights, MPI_INFO_NULL, 0, &edgewise);
    dist_queries(edgewise, "edgewise", 1);
    MPI_Comm_dup(edgewise, &edgewise2);
    dist_queries(edgewise2, "edgewise dup", 1);

    erroneous_queries(grid, ring);

    neighbor_collectives(torus, "torus", 0);
    neighbor_collectives(grid, "grid", 0);
    neighbor_collectives(torus2, "torus dup", 0);
    neighbor_collectives(ring, "ring", 0);
    neighbor_collectives(adj, "adjacent", 0);
    neighbor_collectives(edgewise, "edgewise", 1);

    MPI_Comm all[] = {torus, grid, torus2, ring, ring2, adj, adj_unweighted, edgewise, edgewise2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) MPI_Comm_free(&all[i]);
    free(index);
    free(edges);
    SAY("done");
    MPI_Finalize();
    return 0;
}
