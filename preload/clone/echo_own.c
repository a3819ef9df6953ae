/* What MPI defines as the caller's own data is a copy's own (docs/replication.md, "A copy's own data").
 *
 * A copy receives its representative's output buffers, but part of some results is, by MPI's definition, the
 * caller's own contribution: its block of MPI_Allgather(v), the self block of MPI_Alltoall(v/w), the root's own
 * block of MPI_Gather(v) and of MPI_Scatter(v)'s receive, and a message a process sends to itself.  A program
 * may legitimately put there what differs between copies (ARMCI/Global Arrays allgather their buffers'
 * addresses and dereference their own slot: the representative's pointer is garbage in a copy).  So after the
 * representative's output arrived, a copy puts its own contribution back into its block, as MPI itself would.
 *
 * The contribution is packed before the forward (with MPI_IN_PLACE it is the block the forward overwrites) and
 * unpacked into the block after it: types of matching signatures pack to the same bytes.  The representative
 * does nothing here: its MPI did it. */
#include "echo_clone.h"

#include <stdlib.h>
#include <string.h>

static int type_ok(MPI_Datatype t) { return t != MPI_DATATYPE_NULL && echo_check_buffer(NULL, 0, t) == MPI_SUCCESS; }

void *echo_block_at(const void *buf, MPI_Aint index, MPI_Datatype dt) {
    MPI_Aint lb = 0, extent = 0;
    if (type_ok(dt)) PMPI_Type_get_extent(dt, &lb, &extent);
    return (char *)buf + index * extent;
}

void echo_own_set(echo_own_t *o, const void *src, int scount, MPI_Datatype stype, void *dst, int rcount,
                  MPI_Datatype rtype) {
    memset(o, 0, sizeof *o);
    /* the representative's MPI did it; without copies nobody needs it */
    if (echo_is_rep() || !echo_has_copies() || !dst || dst == MPI_IN_PLACE || rcount <= 0 || !type_ok(rtype)) return;
    if (src == MPI_IN_PLACE) { /* the block already holds the contribution: kept across the forward */
        src = dst;
        scount = rcount;
        stype = rtype;
    }
    if (scount <= 0 || !type_ok(stype)) return;
    int ssize = 0, rsize = 0;
    PMPI_Type_size(stype, &ssize);
    PMPI_Type_size(rtype, &rsize);
    if ((long long)ssize * scount != (long long)rsize * rcount) return; /* MPI's own error: left as forwarded */
    o->src = src;
    o->scount = scount;
    o->stype = stype;
    o->dst = dst;
    o->rcount = rcount;
    o->rtype = rtype;
    o->on = 1;
}

void echo_own_keep(echo_own_t *o) {
    if (!o->on) return;
    free(o->bytes);
    int psize = 0, pos = 0;
    PMPI_Pack_size(o->scount, o->stype, MPI_COMM_SELF, &psize);
    o->bytes = malloc(psize ? (size_t)psize : 1);
    PMPI_Pack(o->src, o->scount, o->stype, o->bytes, psize, &pos, MPI_COMM_SELF);
    o->size = pos;
}

int echo_own_put(echo_own_t *o, int rc) {
    if (!o->bytes) return rc;
    int cls = rc;
    if (rc != MPI_SUCCESS) PMPI_Error_class(rc, &cls);
    if (cls == MPI_SUCCESS) {
        int pos = 0;
        PMPI_Unpack(o->bytes, o->size, &pos, o->dst, o->rcount, o->rtype, MPI_COMM_SELF);
    }
    free(o->bytes);
    o->bytes = NULL;
    return rc;
}

/* ---- messages to itself ----
 * A copy sends nothing, so what it sends to itself is kept here (packed), by communicator and tag, in the order
 * it was sent.  When its representative's receive says the message came from itself, the copy takes the first
 * one it kept with that communicator and tag: MPI matches messages of one sender and communicator in the order
 * they were sent, and the status's tag is the one the matched message had. */
typedef struct self_msg {
    int32_t comm;
    int tag;
    unsigned char *bytes;
    int size;
    struct self_msg *next;
} self_msg_t;

static self_msg_t *kept_first, *kept_last;

int echo_self_rank(MPI_Comm comm) {
    echo_comm_t *c = echo_comm_find(comm);
    if (comm == MPI_COMM_WORLD && !c) return echo.app_rank;
    return c && !c->inter ? c->rank : -1;
}

void echo_self_send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm) {
    if (echo_is_rep() || !echo_has_copies() || dest < 0 || dest != echo_self_rank(comm) || count < 0 || !type_ok(dt))
        return;
    self_msg_t *m = calloc(1, sizeof *m);
    int psize = 0, pos = 0;
    if (count > 0) PMPI_Pack_size(count, dt, MPI_COMM_SELF, &psize);
    m->bytes = malloc(psize ? (size_t)psize : 1);
    if (count > 0) PMPI_Pack(buf, count, dt, m->bytes, psize, &pos, MPI_COMM_SELF);
    m->size = pos;
    m->comm = echo_comm_id(comm);
    m->tag = tag;
    if (kept_last) kept_last->next = m;
    else kept_first = m;
    kept_last = m;
}

void echo_self_receive(void *buf, int count, MPI_Datatype dt, const MPI_Status *status, int32_t comm, int self,
                       int rc) {
    if (echo_is_rep() || !echo_has_copies() || self < 0 || status->MPI_SOURCE != self || rc != MPI_SUCCESS) return;
    self_msg_t *prev = NULL, *m = kept_first;
    while (m && (m->comm != comm || m->tag != status->MPI_TAG)) prev = m, m = m->next;
    if (!m) return; /* sent before this copy kept them (cannot happen in a program that runs the same on every copy) */
    if (prev) prev->next = m->next;
    else kept_first = m->next;
    if (kept_last == m) kept_last = prev;
    int size = 0;
    if (count > 0 && type_ok(dt)) PMPI_Type_size(dt, &size);
    int k = size > 0 ? m->size / size : 0; /* whole elements; the representative's status says the same */
    if (k > count) k = count;
    int pos = 0;
    if (k > 0 && buf) PMPI_Unpack(m->bytes, m->size, &pos, buf, k, dt, MPI_COMM_SELF);
    free(m->bytes);
    free(m);
}
