/* SDR mode: every collective, blocking and nonblocking, as a schedule
 * (echo_sdr_sched.c) of the replicated point-to-point layer.  Algorithms are
 * simple and deterministic: binomial trees for broadcast and reduction (the
 * reduction combines contiguous rank ranges in rank order, so it is right for
 * non-commutative operations and gives every replica the same bits), direct
 * exchanges for the rest.  Each collective has one builder; the blocking call
 * runs it, the nonblocking one returns it as a request. */
#include "echo_sdr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static MPI_Aint extent_of(MPI_Datatype t) {
    MPI_Aint lb, extent;
    PMPI_Type_get_extent(t, &lb, &extent);
    return extent;
}

/* block i of `count` elements of t */
static void *at(const void *buf, MPI_Aint i, int count, MPI_Datatype t) {
    return (char *)buf + i * count * extent_of(t);
}

static void *at_elem(const void *buf, int displ, MPI_Datatype t) { return (char *)buf + (MPI_Aint)displ * extent_of(t); }

/* ---- building blocks: each returns the round after its last ---- */

static int build_bcast(sdr_sched_t *s, int round, void *buf, int count, MPI_Datatype dt, int root) {
    sdr_comm_t *c = sdr_sched_comm(s);
    int n = c->size, vr = (c->rank - root + n) % n, mask = 1;
    while (mask < n) {
        if (vr & mask) {
            sdr_sched_recv(s, round, buf, count, dt, (vr - mask + root) % n);
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1)
        if (vr + mask < n) sdr_sched_send(s, round + 1, buf, count, dt, (vr + mask + root) % n);
    return round + 2;
}

/* the result reaches `root`'s recvbuf; `mine` is this process's contribution */
static int build_reduce(sdr_sched_t *s, int round, const void *mine, void *recvbuf, int count, MPI_Datatype dt,
                        MPI_Op op, int root) {
    sdr_comm_t *c = sdr_sched_comm(s);
    int n = c->size, me = c->rank, mask = 1, r = round;
    const void *acc = mine; /* ranks [me, me + mask) combined, lowest first */
    for (; mask < n; mask <<= 1, r++) {
        if (me & mask) {
            sdr_sched_send(s, r, acc, count, dt, me & ~mask);
            break;
        }
        if ((me | mask) < n) {
            void *theirs = sdr_sched_tmp(s, count, dt);
            sdr_sched_recv(s, r, theirs, count, dt, me | mask);
            sdr_sched_reduce(s, r, acc, theirs, count, dt, op); /* theirs = acc op theirs */
            acc = theirs;
        }
    }
    if (me == 0 && root == 0) {
        if (acc != recvbuf) sdr_sched_copy(s, r, acc, count, dt, recvbuf, count, dt);
    } else if (me == 0) {
        sdr_sched_send(s, r + 1, acc, count, dt, root);
    } else if (me == root) {
        sdr_sched_recv(s, r + 1, recvbuf, count, dt, 0);
    }
    return r + 2;
}

/* the round every process of c has passed after a build of depth `levels` (rounds are local: any bound works) */
static sdr_sched_t *fan_in_out(sdr_comm_t *c) {
    sdr_sched_t *s = sdr_sched_new(c);
    int n = c->size, me = c->rank, mask = 1, r = 0;
    for (; mask < n; mask <<= 1, r++) {
        if (me & mask) {
            sdr_sched_send(s, r, NULL, 0, MPI_BYTE, me & ~mask);
            break;
        }
        if ((me | mask) < n) sdr_sched_recv(s, r, NULL, 0, MPI_BYTE, me | mask);
    }
    build_bcast(s, r + 1, NULL, 0, MPI_BYTE, 0);
    return s;
}

/* ---- one builder per collective ---- */

static sdr_sched_t *bcast(void *buf, int count, MPI_Datatype dt, int root, sdr_comm_t *c) {
    sdr_sched_t *s = sdr_sched_new(c);
    build_bcast(s, 0, buf, count, dt, root);
    return s;
}

static sdr_sched_t *reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
                           sdr_comm_t *c) {
    sdr_sched_t *s = sdr_sched_new(c);
    build_reduce(s, 0, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, recvbuf, count, dt, op, root);
    return s;
}

static sdr_sched_t *allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                              sdr_comm_t *c) {
    sdr_sched_t *s = sdr_sched_new(c);
    int r = build_reduce(s, 0, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, recvbuf, count, dt, op, 0);
    build_bcast(s, r, recvbuf, count, dt, 0);
    return s;
}

static sdr_sched_t *gatherv(const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf, const int *rcounts,
                            const int *displs, int rcount, MPI_Datatype rtype, int root, sdr_comm_t *c) {
    sdr_sched_t *s = sdr_sched_new(c);
    if (c->rank != root) {
        sdr_sched_send(s, 0, sendbuf, scount, stype, root);
        return s;
    }
    for (int i = 0; i < c->size; i++) {
        void *slot = rcounts ? at_elem(recvbuf, displs[i], rtype) : at(recvbuf, i, rcount, rtype);
        int cnt = rcounts ? rcounts[i] : rcount;
        if (i != root) sdr_sched_recv(s, 0, slot, cnt, rtype, i);
        else if (sendbuf != MPI_IN_PLACE) sdr_sched_copy(s, 0, sendbuf, scount, stype, slot, cnt, rtype);
    }
    return s;
}

static sdr_sched_t *scatterv(const void *sendbuf, const int *scounts, const int *displs, int scount,
                             MPI_Datatype stype, void *recvbuf, int rcount, MPI_Datatype rtype, int root,
                             sdr_comm_t *c) {
    sdr_sched_t *s = sdr_sched_new(c);
    if (c->rank != root) {
        sdr_sched_recv(s, 0, recvbuf, rcount, rtype, root);
        return s;
    }
    for (int i = 0; i < c->size; i++) {
        void *slot = scounts ? at_elem(sendbuf, displs[i], stype) : at(sendbuf, i, scount, stype);
        int cnt = scounts ? scounts[i] : scount;
        if (i != root) sdr_sched_send(s, 0, slot, cnt, stype, i);
        else if (recvbuf != MPI_IN_PLACE) sdr_sched_copy(s, 0, slot, cnt, stype, recvbuf, rcount, rtype);
    }
    return s;
}

/* gather to rank 0, then broadcast the whole receive buffer (as one datatype for v-layouts) */
static sdr_sched_t *allgatherv(const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf,
                               const int *rcounts, const int *displs, int rcount, MPI_Datatype rtype, sdr_comm_t *c) {
    sdr_sched_t *s = sdr_sched_new(c);
    int n = c->size, me = c->rank;
    if (sendbuf == MPI_IN_PLACE) { /* this process's block is already in place in recvbuf */
        sendbuf = rcounts ? at_elem(recvbuf, displs[me], rtype) : at(recvbuf, me, rcount, rtype);
        scount = rcounts ? rcounts[me] : rcount;
        stype = rtype;
        if (me == 0) sendbuf = MPI_IN_PLACE;
    }
    if (me != 0) sdr_sched_send(s, 0, sendbuf, scount, stype, 0);
    else
        for (int i = 0; i < n; i++) {
            void *slot = rcounts ? at_elem(recvbuf, displs[i], rtype) : at(recvbuf, i, rcount, rtype);
            int cnt = rcounts ? rcounts[i] : rcount;
            if (i != 0) sdr_sched_recv(s, 0, slot, cnt, rtype, i);
            else if (sendbuf != MPI_IN_PLACE) sdr_sched_copy(s, 0, sendbuf, scount, stype, slot, cnt, rtype);
        }
    if (!rcounts) {
        build_bcast(s, 1, recvbuf, n * rcount, rtype, 0);
        return s;
    }
    MPI_Datatype all;
    PMPI_Type_indexed(n, rcounts, displs, rtype, &all);
    PMPI_Type_commit(&all);
    sdr_sched_own_type(s, all);
    build_bcast(s, 1, recvbuf, 1, all, 0);
    return s;
}

/* w-layout: byte displacements and a type per peer; v- and plain layouts are given as w-layouts */
static sdr_sched_t *alltoallw(const void *sendbuf, const int *scounts, const MPI_Aint *sdispls,
                              const MPI_Datatype *stypes, void *recvbuf, const int *rcounts, const MPI_Aint *rdispls,
                              const MPI_Datatype *rtypes, sdr_comm_t *c) {
    sdr_sched_t *s = sdr_sched_new(c);
    int n = c->size, me = c->rank;
    int round = 0;
    if (sendbuf == MPI_IN_PLACE) { /* send from a copy of what recvbuf held */
        MPI_Aint hi = 0;
        for (int i = 0; i < n; i++) {
            MPI_Aint lb, ext;
            PMPI_Type_get_true_extent(rtypes[i], &lb, &ext);
            if (rcounts[i] > 0 && rdispls[i] + lb + ext * rcounts[i] > hi) hi = rdispls[i] + lb + ext * rcounts[i];
        }
        char *copy = sdr_sched_tmp(s, (int)hi, MPI_BYTE);
        sdr_sched_copy(s, 0, recvbuf, (int)hi, MPI_BYTE, copy, (int)hi, MPI_BYTE);
        sendbuf = copy, scounts = rcounts, sdispls = rdispls, stypes = rtypes;
        round = 1;
    }
    for (int i = 0; i < n; i++) {
        const char *out = (const char *)sendbuf + sdispls[i];
        char *in = (char *)recvbuf + rdispls[i];
        if (i == me) sdr_sched_copy(s, round, out, scounts[i], stypes[i], in, rcounts[i], rtypes[i]);
        else {
            sdr_sched_send(s, round, out, scounts[i], stypes[i], i);
            sdr_sched_recv(s, round, in, rcounts[i], rtypes[i], i);
        }
    }
    return s;
}

/* plain and v all-to-all: their layout as a w-layout (copied: the schedule outlives the caller's arrays) */
static sdr_sched_t *alltoallv(const void *sendbuf, const int *scounts, const int *sdispls, int scount,
                              MPI_Datatype stype, void *recvbuf, const int *rcounts, const int *rdispls, int rcount,
                              MPI_Datatype rtype, sdr_comm_t *c) {
    int n = c->size;
    int *counts = malloc(sizeof(int) * 2 * (size_t)n);
    MPI_Aint *displs = malloc(sizeof(MPI_Aint) * 2 * (size_t)n);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * 2 * (size_t)n);
    MPI_Aint sext = sendbuf == MPI_IN_PLACE ? 0 : extent_of(stype), rext = extent_of(rtype);
    for (int i = 0; i < n; i++) {
        counts[i] = scounts ? scounts[i] : scount;
        displs[i] = (scounts ? sdispls[i] : (MPI_Aint)i * scount) * sext;
        types[i] = stype;
        counts[n + i] = rcounts ? rcounts[i] : rcount;
        displs[n + i] = (rcounts ? rdispls[i] : (MPI_Aint)i * rcount) * rext;
        types[n + i] = rtype;
    }
    sdr_sched_t *s = alltoallw(sendbuf, counts, displs, types, recvbuf, counts + n, displs + n, types + n, c);
    free(counts);
    free(displs);
    free(types);
    return s;
}

/* reduce everything to rank 0, then scatter the blocks (v: counts[i] elements each) */
static sdr_sched_t *reduce_scatter(const void *sendbuf, void *recvbuf, const int *counts, int count,
                                   MPI_Datatype dt, MPI_Op op, sdr_comm_t *c) {
    sdr_sched_t *s = sdr_sched_new(c);
    int n = c->size, total = 0;
    int *displs = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) displs[i] = total, total += counts ? counts[i] : count;
    const void *mine = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    void *all = c->rank == 0 ? sdr_sched_tmp(s, total, dt) : NULL;
    int r = build_reduce(s, 0, mine, all, total, dt, op, 0);
    int mycount = counts ? counts[c->rank] : count;
    if (c->rank != 0) sdr_sched_recv(s, r, recvbuf, mycount, dt, 0);
    else
        for (int i = 0; i < n; i++) {
            void *block = at_elem(all, displs[i], dt);
            int cnt = counts ? counts[i] : count;
            if (i == 0) sdr_sched_copy(s, r, block, cnt, dt, recvbuf, cnt, dt);
            else sdr_sched_send(s, r, block, cnt, dt, i);
        }
    free(displs);
    return s;
}

/* in rank order along a chain: rank r gets the prefix of ranks < r (exclusive) or <= r (inclusive) */
static sdr_sched_t *scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, int exclusive,
                         sdr_comm_t *c) {
    sdr_sched_t *s = sdr_sched_new(c);
    int me = c->rank, n = c->size;
    const void *mine = sendbuf;
    if (sendbuf == MPI_IN_PLACE) { /* recvbuf is overwritten by the result: keep the contribution */
        void *keep = sdr_sched_tmp(s, count, dt);
        sdr_sched_copy(s, 0, recvbuf, count, dt, keep, count, dt);
        mine = keep;
    }
    const void *out = mine; /* what goes to rank me+1: the prefix of ranks <= me */
    if (me > 0) {
        void *prefix = sdr_sched_tmp(s, count, dt);
        sdr_sched_recv(s, 1, prefix, count, dt, me - 1);
        void *incl = exclusive ? sdr_sched_tmp(s, count, dt) : recvbuf;
        sdr_sched_copy(s, 1, mine, count, dt, incl, count, dt);
        sdr_sched_reduce(s, 1, prefix, incl, count, dt, op); /* incl = prefix op mine */
        if (exclusive) sdr_sched_copy(s, 1, prefix, count, dt, recvbuf, count, dt);
        out = incl;
    } else if (!exclusive && sendbuf != MPI_IN_PLACE) {
        sdr_sched_copy(s, 1, mine, count, dt, recvbuf, count, dt);
    }
    if (me + 1 < n) sdr_sched_send(s, 2, out, count, dt, me + 1);
    return s;
}

/* ---- an intercommunicator's collectives (echo_sdr_inter.c makes it): the local group's collective, and its
 * leader's messages to the other group's ---- */

enum { TAG_LEADERS = 1 }; /* leaders' messages on the hidden communicator of both groups */

/* a buffer of count elements of dt (NULL for none), and the pointer MPI calls take */
static void *scratch(int count, MPI_Datatype dt, void **base) {
    MPI_Aint lb, extent, tlb, textent;
    PMPI_Type_get_extent(dt, &lb, &extent);
    PMPI_Type_get_true_extent(dt, &tlb, &textent);
    MPI_Aint bytes = count > 0 ? (MPI_Aint)(count - 1) * (extent < 0 ? -extent : extent) + textent : 1;
    *base = malloc((size_t)bytes + 1);
    return (char *)*base - tlb;
}

static int leader_send(sdr_comm_t *c, const void *buf, int count, MPI_Datatype dt, int remote) {
    return echo_sdr_MPI_Send(buf, count, dt, c->remote0 + remote, TAG_LEADERS, c->all->app);
}

static int leader_recv(sdr_comm_t *c, void *buf, int count, MPI_Datatype dt, int remote) {
    return echo_sdr_MPI_Recv(buf, count, dt, c->remote0 + remote, TAG_LEADERS, c->all->app, MPI_STATUS_IGNORE);
}

static int sdr_inter_barrier(sdr_comm_t *c) { return echo_sdr_MPI_Barrier(c->all->app); }

/* root: MPI_ROOT at the root, MPI_PROC_NULL at the rest of its group, its rank in the other group */
static int sdr_inter_bcast(sdr_comm_t *c, void *buf, int count, MPI_Datatype dt, int root) {
    if (root == MPI_PROC_NULL) return MPI_SUCCESS;
    if (root == MPI_ROOT) return leader_send(c, buf, count, dt, 0);
    if (root < 0 || root >= c->rsize) return MPI_ERR_ROOT;
    int rc = c->lrank == 0 ? leader_recv(c, buf, count, dt, root) : MPI_SUCCESS;
    return rc != MPI_SUCCESS ? rc : echo_sdr_MPI_Bcast(buf, count, dt, 0, c->local->app);
}

static int sdr_inter_reduce(sdr_comm_t *c, const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                     int root) {
    if (root == MPI_PROC_NULL) return MPI_SUCCESS;
    if (root == MPI_ROOT) return leader_recv(c, recvbuf, count, dt, 0);
    if (root < 0 || root >= c->rsize) return MPI_ERR_ROOT;
    void *base = NULL, *tmp = c->lrank == 0 ? scratch(count, dt, &base) : NULL;
    int rc = echo_sdr_MPI_Reduce(sendbuf, tmp, count, dt, op, 0, c->local->app);
    if (rc == MPI_SUCCESS && c->lrank == 0) rc = leader_send(c, tmp, count, dt, root);
    free(base);
    return rc;
}

/* each group gets the other group's reduction: reduced in the group, swapped by the leaders, broadcast */
static int sdr_inter_allreduce(sdr_comm_t *c, const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op) {
    void *base = NULL, *tmp = c->lrank == 0 ? scratch(count, dt, &base) : NULL;
    int rc = echo_sdr_MPI_Reduce(sendbuf, tmp, count, dt, op, 0, c->local->app);
    if (rc == MPI_SUCCESS && c->lrank == 0)
        rc = echo_sdr_MPI_Sendrecv(tmp, count, dt, c->remote0, TAG_LEADERS, recvbuf, count, dt, c->remote0,
                                   TAG_LEADERS, c->all->app, MPI_STATUS_IGNORE);
    free(base);
    return rc != MPI_SUCCESS ? rc : echo_sdr_MPI_Bcast(recvbuf, count, dt, 0, c->local->app);
}

/* each group gets the other group's contributions in rank order: gathered, swapped by the leaders, broadcast */
static int sdr_inter_allgather(sdr_comm_t *c, const void *sendbuf, int scount, MPI_Datatype stype, void *recvbuf,
                        int rcount, MPI_Datatype rtype) {
    void *base = NULL, *tmp = c->lrank == 0 ? scratch(scount * c->lsize, stype, &base) : NULL;
    int rc = echo_sdr_MPI_Gather(sendbuf, scount, stype, tmp, scount, stype, 0, c->local->app);
    if (rc == MPI_SUCCESS && c->lrank == 0)
        rc = echo_sdr_MPI_Sendrecv(tmp, scount * c->lsize, stype, c->remote0, TAG_LEADERS, recvbuf,
                                   rcount * c->rsize, rtype, c->remote0, TAG_LEADERS, c->all->app, MPI_STATUS_IGNORE);
    free(base);
    return rc != MPI_SUCCESS ? rc : echo_sdr_MPI_Bcast(recvbuf, rcount * c->rsize, rtype, 0, c->local->app);
}

/* the other collectives on an intercommunicator stop the job naming the call (COMM, below) */
static int sdr_inter_refused(const char *fn) {
    char what[160];
    snprintf(what, sizeof what, "%s on an intercommunicator", strncmp(fn, "echo_sdr_", 9) ? fn : fn + 9);
    echo_unsupported(what);
    return MPI_ERR_OTHER;
}

/* ---- the calls ---- */

/* the collectives an intercommunicator has under SDR are the ones above (INTER); the others stop the job naming the
 * call */
#define COMM()                                                                                                 \
    sdr_comm_t *c = sdr_comm_of(comm);                                                                         \
    if (c->inter) return sdr_inter_refused(__func__)
#define INTER(call)                                                                                            \
    do {                                                                                                       \
        sdr_comm_t *i_ = sdr_comm_of(comm);                                                                    \
        if (i_->inter) return call;                                                                            \
    } while (0)
#define BLOCKING(builder) return sdr_sched_run(builder)
#define NONBLOCKING(builder)                                                                                   \
    do {                                                                                                       \
        sdr_sched_t *s_ = (builder);                                                                           \
        sdr_sched_start(s_);                                                                                   \
        *request = sdr_request_of_sched(s_, 0);                                                                \
        return MPI_SUCCESS;                                                                                    \
    } while (0)
/* MPI-4 persistent collectives: the schedule is built once, each MPI_Start runs it again */
#define PERSISTENT(builder)                                                                                    \
    do {                                                                                                       \
        (void)info;                                                                                            \
        sdr_sched_t *s_ = (builder);                                                                           \
        sdr_sched_persist(s_);                                                                                 \
        *request = sdr_request_of_sched(s_, 1);                                                                \
        return MPI_SUCCESS;                                                                                    \
    } while (0)
#define ROOT_OK() if (root < 0 || root >= c->size) return MPI_ERR_ROOT

int echo_sdr_MPI_Barrier(MPI_Comm comm) {
    INTER(sdr_inter_barrier(i_));
    COMM();
    BLOCKING(fan_in_out(c));
}
int echo_sdr_MPI_Ibarrier(MPI_Comm comm, MPI_Request *request) {
    COMM();
    NONBLOCKING(fan_in_out(c));
}

int echo_sdr_MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
    INTER(sdr_inter_bcast(i_, buffer, count, datatype, root));
    COMM();
    ROOT_OK();
    BLOCKING(bcast(buffer, count, datatype, root, c));
}
int echo_sdr_MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                        MPI_Request *request) {
    COMM();
    ROOT_OK();
    NONBLOCKING(bcast(buffer, count, datatype, root, c));
}

int echo_sdr_MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                        MPI_Comm comm) {
    INTER(sdr_inter_reduce(i_, sendbuf, recvbuf, count, datatype, op, root));
    COMM();
    ROOT_OK();
    BLOCKING(reduce(sendbuf, recvbuf, count, datatype, op, root, c));
}
int echo_sdr_MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                         MPI_Comm comm, MPI_Request *request) {
    COMM();
    ROOT_OK();
    NONBLOCKING(reduce(sendbuf, recvbuf, count, datatype, op, root, c));
}

int echo_sdr_MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                           MPI_Comm comm) {
    INTER(sdr_inter_allreduce(i_, sendbuf, recvbuf, count, datatype, op));
    COMM();
    BLOCKING(allreduce(sendbuf, recvbuf, count, datatype, op, c));
}
int echo_sdr_MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                            MPI_Comm comm, MPI_Request *request) {
    COMM();
    NONBLOCKING(allreduce(sendbuf, recvbuf, count, datatype, op, c));
}

int echo_sdr_MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                        MPI_Datatype recvtype, int root, MPI_Comm comm) {
    COMM();
    ROOT_OK();
    BLOCKING(gatherv(sendbuf, sendcount, sendtype, recvbuf, NULL, NULL, recvcount, recvtype, root, c));
}
int echo_sdr_MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                         MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request) {
    COMM();
    ROOT_OK();
    NONBLOCKING(gatherv(sendbuf, sendcount, sendtype, recvbuf, NULL, NULL, recvcount, recvtype, root, c));
}
int echo_sdr_MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                         const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm) {
    COMM();
    ROOT_OK();
    BLOCKING(gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, 0, recvtype, root, c));
}
int echo_sdr_MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                          const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm,
                          MPI_Request *request) {
    COMM();
    ROOT_OK();
    NONBLOCKING(gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, 0, recvtype, root, c));
}

int echo_sdr_MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                         MPI_Datatype recvtype, int root, MPI_Comm comm) {
    COMM();
    ROOT_OK();
    BLOCKING(scatterv(sendbuf, NULL, NULL, sendcount, sendtype, recvbuf, recvcount, recvtype, root, c));
}
int echo_sdr_MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                          MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request) {
    COMM();
    ROOT_OK();
    NONBLOCKING(scatterv(sendbuf, NULL, NULL, sendcount, sendtype, recvbuf, recvcount, recvtype, root, c));
}
int echo_sdr_MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
    COMM();
    ROOT_OK();
    BLOCKING(scatterv(sendbuf, sendcounts, displs, 0, sendtype, recvbuf, recvcount, recvtype, root, c));
}
int echo_sdr_MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                           MPI_Request *request) {
    COMM();
    ROOT_OK();
    NONBLOCKING(scatterv(sendbuf, sendcounts, displs, 0, sendtype, recvbuf, recvcount, recvtype, root, c));
}

int echo_sdr_MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
    INTER(sdr_inter_allgather(i_, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype));
    COMM();
    BLOCKING(allgatherv(sendbuf, sendcount, sendtype, recvbuf, NULL, NULL, recvcount, recvtype, c));
}
int echo_sdr_MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                            int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
    COMM();
    NONBLOCKING(allgatherv(sendbuf, sendcount, sendtype, recvbuf, NULL, NULL, recvcount, recvtype, c));
}
int echo_sdr_MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                            const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
    COMM();
    BLOCKING(allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, 0, recvtype, c));
}
int echo_sdr_MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                             const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Request *request) {
    COMM();
    NONBLOCKING(allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, 0, recvtype, c));
}

int echo_sdr_MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                          MPI_Datatype recvtype, MPI_Comm comm) {
    COMM();
    BLOCKING(alltoallv(sendbuf, NULL, NULL, sendcount, sendtype, recvbuf, NULL, NULL, recvcount, recvtype, c));
}
int echo_sdr_MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
    COMM();
    NONBLOCKING(alltoallv(sendbuf, NULL, NULL, sendcount, sendtype, recvbuf, NULL, NULL, recvcount, recvtype, c));
}
int echo_sdr_MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                           void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                           MPI_Comm comm) {
    COMM();
    BLOCKING(alltoallv(sendbuf, sendcounts, sdispls, 0, sendtype, recvbuf, recvcounts, rdispls, 0, recvtype, c));
}
int echo_sdr_MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                            void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                            MPI_Comm comm, MPI_Request *request) {
    COMM();
    NONBLOCKING(alltoallv(sendbuf, sendcounts, sdispls, 0, sendtype, recvbuf, recvcounts, rdispls, 0, recvtype, c));
}

static sdr_sched_t *alltoallw_int(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                  const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                                  const int rdispls[], const MPI_Datatype recvtypes[], sdr_comm_t *c) {
    int n = c->size;
    MPI_Aint *sd = malloc(sizeof(MPI_Aint) * (size_t)n), *rd = malloc(sizeof(MPI_Aint) * (size_t)n);
    for (int i = 0; i < n; i++) {
        sd[i] = sendbuf == MPI_IN_PLACE ? 0 : sdispls[i];
        rd[i] = rdispls[i];
    }
    sdr_sched_t *s = alltoallw(sendbuf, sendcounts, sd, sendtypes, recvbuf, recvcounts, rd, recvtypes, c);
    free(sd);
    free(rd);
    return s;
}
int echo_sdr_MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                           const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[],
                           const MPI_Datatype recvtypes[], MPI_Comm comm) {
    COMM();
    BLOCKING(alltoallw_int(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, c));
}
int echo_sdr_MPI_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                            const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                            const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                            MPI_Request *request) {
    COMM();
    NONBLOCKING(alltoallw_int(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, c));
}

int echo_sdr_MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                                      MPI_Op op, MPI_Comm comm) {
    COMM();
    BLOCKING(reduce_scatter(sendbuf, recvbuf, NULL, recvcount, datatype, op, c));
}
int echo_sdr_MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                                       MPI_Op op, MPI_Comm comm, MPI_Request *request) {
    COMM();
    NONBLOCKING(reduce_scatter(sendbuf, recvbuf, NULL, recvcount, datatype, op, c));
}
int echo_sdr_MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                                MPI_Op op, MPI_Comm comm) {
    COMM();
    BLOCKING(reduce_scatter(sendbuf, recvbuf, recvcounts, 0, datatype, op, c));
}
int echo_sdr_MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                                 MPI_Op op, MPI_Comm comm, MPI_Request *request) {
    COMM();
    NONBLOCKING(reduce_scatter(sendbuf, recvbuf, recvcounts, 0, datatype, op, c));
}

int echo_sdr_MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                      MPI_Comm comm) {
    COMM();
    BLOCKING(scan(sendbuf, recvbuf, count, datatype, op, 0, c));
}
int echo_sdr_MPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm, MPI_Request *request) {
    COMM();
    NONBLOCKING(scan(sendbuf, recvbuf, count, datatype, op, 0, c));
}
int echo_sdr_MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                        MPI_Comm comm) {
    COMM();
    BLOCKING(scan(sendbuf, recvbuf, count, datatype, op, 1, c));
}
int echo_sdr_MPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                         MPI_Comm comm, MPI_Request *request) {
    COMM();
    NONBLOCKING(scan(sendbuf, recvbuf, count, datatype, op, 1, c));
}

/* ---- persistent collectives ---- */

int echo_sdr_MPI_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    COMM();
    PERSISTENT(fan_in_out(c));
}
int echo_sdr_MPI_Bcast_init(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Info info,
                            MPI_Request *request) {
    COMM();
    ROOT_OK();
    PERSISTENT(bcast(buffer, count, datatype, root, c));
}
int echo_sdr_MPI_Reduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                             int root, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    COMM();
    ROOT_OK();
    PERSISTENT(reduce(sendbuf, recvbuf, count, datatype, op, root, c));
}
int echo_sdr_MPI_Allreduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                                MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    COMM();
    PERSISTENT(allreduce(sendbuf, recvbuf, count, datatype, op, c));
}
int echo_sdr_MPI_Gather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                             int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                             MPI_Request *request) {
    COMM();
    ROOT_OK();
    PERSISTENT(gatherv(sendbuf, sendcount, sendtype, recvbuf, NULL, NULL, recvcount, recvtype, root, c));
}
int echo_sdr_MPI_Gatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                              const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                              MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    COMM();
    ROOT_OK();
    PERSISTENT(gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, 0, recvtype, root, c));
}
int echo_sdr_MPI_Scatter_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                              int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                              MPI_Request *request) {
    COMM();
    ROOT_OK();
    PERSISTENT(scatterv(sendbuf, NULL, NULL, sendcount, sendtype, recvbuf, recvcount, recvtype, root, c));
}
int echo_sdr_MPI_Scatterv_init(const void *sendbuf, const int sendcounts[], const int displs[],
                               MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                               MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    COMM();
    ROOT_OK();
    PERSISTENT(scatterv(sendbuf, sendcounts, displs, 0, sendtype, recvbuf, recvcount, recvtype, root, c));
}
int echo_sdr_MPI_Allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                MPI_Request *request) {
    COMM();
    PERSISTENT(allgatherv(sendbuf, sendcount, sendtype, recvbuf, NULL, NULL, recvcount, recvtype, c));
}
int echo_sdr_MPI_Allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                                 MPI_Info info, MPI_Request *request) {
    COMM();
    PERSISTENT(allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, 0, recvtype, c));
}
int echo_sdr_MPI_Alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                               int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                               MPI_Request *request) {
    COMM();
    PERSISTENT(alltoallv(sendbuf, NULL, NULL, sendcount, sendtype, recvbuf, NULL, NULL, recvcount, recvtype, c));
}
int echo_sdr_MPI_Alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                                MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    COMM();
    PERSISTENT(alltoallv(sendbuf, sendcounts, sdispls, 0, sendtype, recvbuf, recvcounts, rdispls, 0, recvtype, c));
}
int echo_sdr_MPI_Alltoallw_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                                const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info,
                                MPI_Request *request) {
    COMM();
    PERSISTENT(alltoallw_int(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, c));
}
int echo_sdr_MPI_Reduce_scatter_block_init(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                                           MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    COMM();
    PERSISTENT(reduce_scatter(sendbuf, recvbuf, NULL, recvcount, datatype, op, c));
}
int echo_sdr_MPI_Reduce_scatter_init(const void *sendbuf, void *recvbuf, const int recvcounts[],
                                     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                     MPI_Request *request) {
    COMM();
    PERSISTENT(reduce_scatter(sendbuf, recvbuf, recvcounts, 0, datatype, op, c));
}
int echo_sdr_MPI_Scan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                           MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    COMM();
    PERSISTENT(scan(sendbuf, recvbuf, count, datatype, op, 0, c));
}
int echo_sdr_MPI_Exscan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                             MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    COMM();
    PERSISTENT(scan(sendbuf, recvbuf, count, datatype, op, 1, c));
}
