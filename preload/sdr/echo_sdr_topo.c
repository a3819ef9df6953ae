/* SDR mode: Cartesian topologies.
 *
 * A Cartesian communicator is a communicator (made by the replicated layer,
 * echo_sdr_comm.c) plus its grid: dims and periods, kept with it.  Every query
 * is a function of the grid and a rank alone (ranks numbered row-major, as the
 * standard numbers them), so each replica answers it by itself and every
 * replica answers alike; MPI_Cart_create does not reorder (the standard lets
 * it not), and MPI_Cart_sub is a split by the coordinates that are dropped.
 * Graph topologies and neighbourhood collectives are not replicated. */
#include "echo_sdr.h"

#include <stdlib.h>
#include <string.h>

static int *cart_new(int ndims, const int *dims, const int *periods) {
    int *cart = malloc(sizeof(int) * (size_t)(1 + 2 * ndims));
    cart[0] = ndims;
    for (int d = 0; d < ndims; d++) cart[1 + d] = dims[d], cart[1 + ndims + d] = periods[d] != 0;
    return cart;
}

/* the Cartesian grid of an application handle, NULL if it has none */
static const int *cart_of(MPI_Comm comm) {
    sdr_comm_t *c = sdr_comm_of(comm);
    return c ? c->cart : NULL;
}

static void coords_of(const int *cart, int rank, int *coords) {
    for (int d = cart[0] - 1; d >= 0; d--) {
        coords[d] = rank % cart[1 + d];
        rank /= cart[1 + d];
    }
}

int echo_sdr_MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder,
                             MPI_Comm *newcomm) {
    (void)reorder; /* ranks kept: allowed, and the same in every replica */
    sdr_comm_t *p = sdr_comm_of(comm);
    if (ndims < 0) return MPI_ERR_DIMS;
    int cells = 1;
    for (int d = 0; d < ndims; d++) {
        if (dims[d] <= 0) return MPI_ERR_DIMS;
        cells *= dims[d];
    }
    if (cells > p->size) return MPI_ERR_DIMS;
    int rc = sdr_comm_create(p, p->rank < cells ? 0 : MPI_UNDEFINED, p->rank, newcomm, 0);
    if (rc == MPI_SUCCESS && *newcomm != MPI_COMM_NULL) sdr_comm_of(*newcomm)->cart = cart_new(ndims, dims, periods);
    return rc;
}

/* the processes that share the coordinates of the dropped dimensions form one sub-grid, ranked row-major over
 * the kept ones */
int echo_sdr_MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm) {
    sdr_comm_t *p = sdr_comm_of(comm);
    if (!p->cart) return MPI_ERR_TOPOLOGY;
    int n = p->cart[0], *coords = malloc(sizeof(int) * (size_t)(n + 1));
    int *dims = malloc(sizeof(int) * (size_t)(n + 1)), *periods = malloc(sizeof(int) * (size_t)(n + 1));
    coords_of(p->cart, p->rank, coords);
    int color = 0, key = 0, kept = 0;
    for (int d = 0; d < n; d++)
        if (remain_dims[d]) {
            key = key * p->cart[1 + d] + coords[d];
            dims[kept] = p->cart[1 + d], periods[kept++] = p->cart[1 + n + d];
        } else {
            color = color * p->cart[1 + d] + coords[d];
        }
    int rc = sdr_comm_create(p, color, key, newcomm, 0);
    if (rc == MPI_SUCCESS) sdr_comm_of(*newcomm)->cart = cart_new(kept, dims, periods);
    free(coords), free(dims), free(periods);
    return rc;
}

int echo_sdr_MPI_Topo_test(MPI_Comm comm, int *status) {
    *status = cart_of(comm) ? MPI_CART : MPI_UNDEFINED;
    return MPI_SUCCESS;
}

int echo_sdr_MPI_Cartdim_get(MPI_Comm comm, int *ndims) {
    const int *cart = cart_of(comm);
    if (!cart) return MPI_ERR_TOPOLOGY;
    *ndims = cart[0];
    return MPI_SUCCESS;
}

int echo_sdr_MPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[]) {
    const int *cart = cart_of(comm);
    if (!cart) return MPI_ERR_TOPOLOGY;
    if (maxdims < cart[0]) return MPI_ERR_ARG;
    for (int d = 0; d < cart[0]; d++) dims[d] = cart[1 + d], periods[d] = cart[1 + cart[0] + d];
    coords_of(cart, sdr_comm_of(comm)->rank, coords);
    return MPI_SUCCESS;
}

int echo_sdr_MPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[]) {
    const int *cart = cart_of(comm);
    if (!cart) return MPI_ERR_TOPOLOGY;
    if (maxdims < cart[0] || rank < 0 || rank >= sdr_comm_of(comm)->size) return MPI_ERR_ARG;
    coords_of(cart, rank, coords);
    return MPI_SUCCESS;
}

/* periodic dimensions wrap; a coordinate outside a non-periodic one is erroneous */
int echo_sdr_MPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank) {
    const int *cart = cart_of(comm);
    if (!cart) return MPI_ERR_TOPOLOGY;
    int r = 0;
    for (int d = 0; d < cart[0]; d++) {
        int size = cart[1 + d], x = coords[d];
        if (cart[1 + cart[0] + d]) x = ((x % size) + size) % size;
        else if (x < 0 || x >= size) return MPI_ERR_ARG;
        r = r * size + x;
    }
    *rank = r;
    return MPI_SUCCESS;
}

int echo_sdr_MPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source, int *rank_dest) {
    const int *cart = cart_of(comm);
    if (!cart) return MPI_ERR_TOPOLOGY;
    int n = cart[0];
    if (direction < 0 || direction >= n) return MPI_ERR_ARG;
    int *coords = malloc(sizeof(int) * (size_t)n), here, size = cart[1 + direction];
    coords_of(cart, sdr_comm_of(comm)->rank, coords);
    here = coords[direction];
    int *out[2] = {rank_source, rank_dest}, step[2] = {-disp, disp};
    for (int i = 0; i < 2; i++) {
        int x = here + step[i];
        if (!cart[1 + n + direction] && (x < 0 || x >= size)) {
            *out[i] = MPI_PROC_NULL;
            continue;
        }
        coords[direction] = x;
        echo_sdr_MPI_Cart_rank(comm, coords, out[i]);
    }
    free(coords);
    return MPI_SUCCESS;
}
