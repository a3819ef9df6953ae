/* Forwarding from a representative to its copies over clone_comm.
 *
 * Both sides call the same function at the same point of the program: the
 * representative sends, copies receive.  Messages on clone_comm are matched in
 * program order (MPI's non-overtaking rule), so no sequence numbers are needed.
 * The return code of the real call travels as the tag: copies return exactly
 * what the representative got.  A received message's status rides in the same
 * message as small data (one message per copy, which keeps latency low). */
#include "echo_internal.h"

#include <stdlib.h>
#include <string.h>

#define SMALL_PACKED 8192
#define TAG_LARGE 1 /* low bit of the tag: the data follows in a second message */
#define MAX_INLINE_COPIES 16

static int send_to_copies(const void *buf, int count, MPI_Datatype dt, int tag) {
    MPI_Request reqs[MAX_INLINE_COPIES];
    MPI_Request *r = echo.ncopies - 1 <= MAX_INLINE_COPIES ? reqs : malloc(sizeof *r * (size_t)echo.ncopies);
    for (int c = 1; c < echo.ncopies; c++) PMPI_Isend(buf, count, dt, c, tag, echo.clone_comm, &r[c - 1]);
    int rc = PMPI_Waitall(echo.ncopies - 1, r, MPI_STATUSES_IGNORE);
    if (r != reqs) free(r);
    return rc;
}

static int recv_from_rep(void *buf, int count, MPI_Datatype dt) {
    MPI_Status st;
    PMPI_Recv(buf, count, dt, 0, MPI_ANY_TAG, echo.clone_comm, &st);
    return st.MPI_TAG;
}

static void delivered(void *buf, int count, MPI_Datatype dt) {
    if (echo_hooks.delivered && buf && buf != MPI_IN_PLACE && count > 0) echo_hooks.delivered(buf, count, dt);
}

int echo_forward(void *buf, int count, MPI_Datatype dt, int rc) {
    if (buf == MPI_IN_PLACE) { buf = NULL; count = 0; dt = MPI_BYTE; }
    if (echo_has_copies()) {
        if (echo_is_rep()) send_to_copies(buf, count, dt, rc << 1);
        else rc = recv_from_rep(buf, count, dt) >> 1;
    }
    delivered(buf, count, dt);
    return rc;
}

int echo_forward_bytes(void *data, size_t len, int rc) {
    return echo_forward(data, (int)len, MPI_BYTE, rc);
}

static int forward_status(void *buf, int count, MPI_Datatype dt, MPI_Status *status, int rc);

int echo_forward_status(void *buf, int count, MPI_Datatype dt, MPI_Status *status, int rc) {
    if (echo_has_copies()) rc = forward_status(buf, count, dt, status, rc);
    if (echo_hooks.delivered && count > 0) {
        int k = count;
        PMPI_Get_count(status, dt, &k);
        delivered(buf, k == MPI_UNDEFINED || k > count ? count : k, dt);
    }
    return rc;
}

static int forward_status(void *buf, int count, MPI_Datatype dt, MPI_Status *status, int rc) {
    char packed[SMALL_PACKED];
    int pos = 0;
    if (echo_is_rep()) {
        int k = 0, psize = 0;
        if (count > 0) {
            PMPI_Get_count(status, dt, &k);
            if (k == MPI_UNDEFINED || k > count) k = count; /* a partial element: send it all */
            PMPI_Pack_size(k, dt, echo.clone_comm, &psize);
        }
        memcpy(packed, status, sizeof *status);
        pos = (int)sizeof *status;
        if (psize <= SMALL_PACKED - pos) {
            if (k > 0) PMPI_Pack(buf, k, dt, packed, SMALL_PACKED, &pos, echo.clone_comm);
            send_to_copies(packed, pos, MPI_PACKED, rc << 1);
        } else {
            send_to_copies(packed, pos, MPI_PACKED, (rc << 1) | TAG_LARGE);
            send_to_copies(buf, k, dt, rc << 1);
        }
        return rc;
    }
    MPI_Status st;
    PMPI_Recv(packed, SMALL_PACKED, MPI_PACKED, 0, MPI_ANY_TAG, echo.clone_comm, &st);
    memcpy(status, packed, sizeof *status);
    pos = (int)sizeof *status;
    if (st.MPI_TAG & TAG_LARGE) {
        recv_from_rep(buf, count, dt);
    } else if (count > 0) {
        int k;
        PMPI_Get_count(status, dt, &k);
        if (k == MPI_UNDEFINED || k > count) k = count;
        if (k > 0) PMPI_Unpack(packed, SMALL_PACKED, &pos, buf, k, dt, echo.clone_comm);
    }
    return st.MPI_TAG >> 1;
}

int echo_forward_blocks(void *buf, int n, const int *counts, const int *displs, MPI_Datatype dt, int rc) {
    if (!echo_has_copies() && !echo_hooks.delivered) return rc;
    if (buf == MPI_IN_PLACE) return echo_forward(NULL, 0, MPI_BYTE, rc);
    MPI_Datatype t;
    PMPI_Type_indexed(n, counts, displs, dt, &t);
    PMPI_Type_commit(&t);
    rc = echo_forward(buf, 1, t, rc);
    PMPI_Type_free(&t);
    return rc;
}

int echo_forward_wblocks(void *buf, int n, const int *counts, const int *bdispls, const MPI_Datatype *types, int rc) {
    if (!echo_has_copies() && !echo_hooks.delivered) return rc;
    if (buf == MPI_IN_PLACE) return echo_forward(NULL, 0, MPI_BYTE, rc);
    MPI_Aint *d = malloc(sizeof *d * (size_t)n);
    for (int i = 0; i < n; i++) d[i] = bdispls[i];
    MPI_Datatype t;
    PMPI_Type_create_struct(n, counts, d, (MPI_Datatype *)types, &t);
    PMPI_Type_commit(&t);
    rc = echo_forward(buf, 1, t, rc);
    PMPI_Type_free(&t);
    free(d);
    return rc;
}
