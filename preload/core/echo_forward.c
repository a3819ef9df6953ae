/* Forwarding from a representative to its copies over clone_comm (the channel: echo_channel.c).
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

/* The return code as a tag.  MPICH's error codes hold an index into the process's own error stack (and can
 * exceed MPI_TAG_UB, which is at least 32767): a copy is given the code's class.  Codes below RC_LIMIT travel
 * as they are; RAISED + class says the call returned MPI_SUCCESS after the application's error handler ran
 * with that class (MPICH 5), so that the copy runs its own handler and returns MPI_SUCCESS as well. */
#define RC_LIMIT 8192
#define RAISED RC_LIMIT

ECHO_TLS int echo_raised;

static int rc_tag(int rc) {
    if (rc >= RC_LIMIT) PMPI_Error_class(rc, &rc);
    if (rc == MPI_SUCCESS && echo_raised) rc = RAISED + (echo_raised < RC_LIMIT ? echo_raised : MPI_ERR_OTHER);
    return rc << 1;
}

static int rc_of_tag(int tag) {
    int rc = tag >> 1;
    echo_raised = rc >= RAISED ? rc - RAISED : 0;
    return rc >= RAISED ? MPI_SUCCESS : rc;
}

static int recv_from_rep(void *buf, int count, MPI_Datatype dt) {
    MPI_Status st;
    if (echo_clocks_parted || echo_clocks_threaded) echo_clock_step_over();
    echo_from_rep(buf, count, dt, MPI_ANY_TAG, &st);
    return st.MPI_TAG;
}

static void delivered(void *buf, int count, MPI_Datatype dt) {
    if (echo_hooks.delivered && buf && buf != MPI_IN_PLACE && count > 0) echo_hooks.delivered(buf, count, dt);
}

int echo_forward(void *buf, int count, MPI_Datatype dt, int rc) {
    if (!echo_has_copies() && !echo_hooks.delivered) return rc;
    /* MPI_IN_PLACE: nothing delivered here.  A call MPI rejected for its buffer
     * (a negative count, an invalid datatype) wrote nothing, and its
     * description could not carry echo's message: only the return code goes.
     * Both sides ask MPI about the same description (a NULL buffer is
     * MPI_BOTTOM, valid with a datatype of absolute addresses). */
    if (buf == MPI_IN_PLACE || echo_check_buffer(buf, count, dt) != MPI_SUCCESS) {
        buf = NULL;
        count = 0;
        dt = MPI_BYTE;
    }
    if (echo_has_copies()) {
        if (echo_is_rep()) echo_to_copies(buf, count, dt, rc_tag(rc));
        else rc = rc_of_tag(recv_from_rep(buf, count, dt));
    }
    delivered(buf, count, dt);
    return rc;
}

int echo_forward_bytes(void *data, size_t len, int rc) {
    return echo_forward(data, (int)len, MPI_BYTE, rc);
}

/* Elements a receive wrote to its buffer, by the representative's status: none
 * unless the call accepted its arguments and delivered (a truncated message
 * fills the buffer), all `count` for a partial last element. */
static int whole_buffer; /* echo_forward_status_whole: the status is not to be trusted for the count */

static int delivered_count(int count, MPI_Datatype dt, const MPI_Status *status, int rc) {
    int cls = rc;
    if (rc != MPI_SUCCESS) PMPI_Error_class(rc, &cls);
    if (count <= 0 || (cls != MPI_SUCCESS && cls != MPI_ERR_TRUNCATE && cls != MPI_ERR_IN_STATUS)) return 0;
    if (whole_buffer) return count;
    int k = count;
    PMPI_Get_count(status, dt, &k);
    return k == MPI_UNDEFINED || k > count ? count : k < 0 ? 0 : k;
}

static int forward_status(void *buf, int count, MPI_Datatype dt, MPI_Status *status, int *k, int rc);

int echo_forward_status(void *buf, int count, MPI_Datatype dt, MPI_Status *status, int rc) {
    int k = 0;
    if (echo_has_copies()) rc = forward_status(buf, count, dt, status, &k, rc);
    else if (echo_hooks.delivered) k = delivered_count(count, dt, status, rc);
    if (k > 0) delivered(buf, k, dt);
    return rc;
}

int echo_forward_status_whole(void *buf, int count, MPI_Datatype dt, MPI_Status *status, int rc) {
    whole_buffer = 1;
    rc = echo_forward_status(buf, count, dt, status, rc);
    whole_buffer = 0;
    return rc;
}

/* One message: the status, how many elements follow (the representative's
 * count, so a copy never interprets a status with a datatype MPI rejected), and
 * the elements if they fit; else the elements follow in a second message. */
static int forward_status(void *buf, int count, MPI_Datatype dt, MPI_Status *status, int *k, int rc) {
    char packed[SMALL_PACKED];
    const int header = (int)(sizeof *status + sizeof *k);
    int pos = header;
    if (echo_is_rep()) {
        int psize = 0;
        MPI_Count tsize = 0;
        *k = delivered_count(count, dt, status, rc);
        if (*k > 0) PMPI_Type_size_x(dt, &tsize);
        /* a message of 2 GB or more (MPICH's pt2pt/large_message): its packed size overflows an int */
        if (*k > 0 && (MPI_Count)*k * tsize <= SMALL_PACKED) PMPI_Pack_size(*k, dt, echo.clone_comm, &psize);
        else if (*k > 0) psize = SMALL_PACKED + 1;
        memcpy(packed, status, sizeof *status);
        memcpy(packed + sizeof *status, k, sizeof *k);
        /* MPI_BOTTOM (NULL, with a datatype of absolute addresses): Open MPI will not
         * unpack into it, so its data always travels as a message of its own */
        if (psize <= SMALL_PACKED - pos && (buf != NULL || *k == 0)) {
            if (*k > 0) PMPI_Pack(buf, *k, dt, packed, SMALL_PACKED, &pos, echo.clone_comm);
            echo_to_copies(packed, pos, MPI_PACKED, rc_tag(rc));
        } else {
            echo_to_copies(packed, pos, MPI_PACKED, rc_tag(rc) | TAG_LARGE);
            echo_to_copies(buf, *k, dt, rc_tag(rc));
        }
        return rc;
    }
    MPI_Status st;
    if (echo_clocks_parted || echo_clocks_threaded) echo_clock_step_over();
    echo_from_rep(packed, SMALL_PACKED, MPI_PACKED, MPI_ANY_TAG, &st);
    memcpy(status, packed, sizeof *status);
    memcpy(k, packed + sizeof *status, sizeof *k);
    if (st.MPI_TAG & TAG_LARGE) recv_from_rep(buf, *k, dt);
    else if (*k > 0) PMPI_Unpack(packed, SMALL_PACKED, &pos, buf, *k, dt, echo.clone_comm);
    return rc_of_tag(st.MPI_TAG);
}

/* A v/w-collective's output description MPI accepts (else the call failed and wrote nothing) */
static int blocks_ok(int n, const int *counts, MPI_Datatype dt, const MPI_Datatype *types) {
    for (int i = 0; i < n; i++)
        if (counts[i] < 0 || (types && echo_check_buffer(NULL, 0, types[i]) != MPI_SUCCESS)) return 0;
    return types || echo_check_buffer(NULL, 0, dt) == MPI_SUCCESS;
}

MPI_Datatype echo_blocks_type(void *buf, int n, const int *counts, const int *displs, MPI_Datatype dt,
                              const MPI_Datatype *types) {
    if (buf == MPI_IN_PLACE || !blocks_ok(n, counts, types ? MPI_BYTE : dt, types)) return MPI_DATATYPE_NULL;
    MPI_Datatype t;
    if (types) { /* w-collectives: byte displacements, a type per block */
        MPI_Aint *d = malloc(sizeof *d * (size_t)n);
        for (int i = 0; i < n; i++) d[i] = displs[i];
        PMPI_Type_create_struct(n, counts, d, (MPI_Datatype *)types, &t);
        free(d);
    } else {
        PMPI_Type_indexed(n, counts, displs, dt, &t);
    }
    PMPI_Type_commit(&t);
    return t;
}

static int forward_layout(void *buf, MPI_Datatype t, int rc) {
    if (t == MPI_DATATYPE_NULL) return echo_forward(NULL, 0, MPI_BYTE, rc);
    rc = echo_forward(buf, 1, t, rc);
    PMPI_Type_free(&t);
    return rc;
}

int echo_forward_blocks(void *buf, int n, const int *counts, const int *displs, MPI_Datatype dt, int rc) {
    if (!echo_has_copies() && !echo_hooks.delivered) return rc;
    return forward_layout(buf, echo_blocks_type(buf, n, counts, displs, dt, NULL), rc);
}

int echo_forward_wblocks(void *buf, int n, const int *counts, const int *bdispls, const MPI_Datatype *types, int rc) {
    if (!echo_has_copies() && !echo_hooks.delivered) return rc;
    return forward_layout(buf, echo_blocks_type(buf, n, counts, bdispls, MPI_BYTE, types), rc);
}

/* An info object the representative got from MPI (its hints, "key\0value\0"
 * each), rebuilt on every copy as a new info object. */
int echo_forward_info(MPI_Info *info, int rc) {
    if (!echo_has_copies()) return rc;
    char *text = NULL;
    size_t len = 0;
    if (echo_is_rep() && rc == MPI_SUCCESS) {
        int nkeys = 0;
        PMPI_Info_get_nkeys(*info, &nkeys);
        for (int i = 0; i < nkeys; i++) {
            char key[MPI_MAX_INFO_KEY + 1];
            int vlen = 0, flag;
            PMPI_Info_get_nthkey(*info, i, key);
            /* the value's size, with its NUL (a buffer all the same: MPICH 4.0 refuses NULL) */
            PMPI_Info_get_string(*info, key, &vlen, &(char){0}, &flag);
            size_t klen = strlen(key) + 1;
            text = realloc(text, len + klen + (size_t)vlen + 1);
            memcpy(text + len, key, klen);
            len += klen;
            PMPI_Info_get_string(*info, key, &vlen, text + len, &flag);
            len += strlen(text + len) + 1;
        }
    }
    rc = echo_forward_bytes(&len, sizeof len, rc);
    if (!echo_is_rep()) text = malloc(len + 1);
    echo_forward_bytes(text, len, rc);
    if (!echo_is_rep() && rc == MPI_SUCCESS) {
        PMPI_Info_create(info);
        for (size_t at = 0; at < len;) {
            const char *key = text + at, *value = key + strlen(key) + 1;
            PMPI_Info_set(*info, key, value);
            at = (size_t)(value - text) + strlen(value) + 1;
        }
    }
    free(text);
    return rc;
}
