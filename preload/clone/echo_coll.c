/* Blocking collectives under cloning: representatives run the real collective
 * on the representatives' communicator; then every copy receives what its
 * representative's output buffers hold (and its return code).  A copy of a rank
 * that gets no output still waits for the return code, so copies stay in
 * lock-step with their representative at every collective.  On an
 * intercommunicator, outputs come from the remote group (echo_comm_peers) and
 * roots follow MPI_ROOT / MPI_PROC_NULL (echo_is_root and friends). */
#include "echo_clone.h"
#include "echo_records.h"

#include <stdlib.h>

#define COMM(fn) echo_comm_t *c = echo_comm_get(comm, #fn)
/* the data this copy contributes, checked for corruption before the real call */
#define SDC(fn, buf, count, dt) echo_outgoing(#fn, 1, buf, count, dt, echo_comm_id(comm), -1)
#define SDC_BLOCKS(fn, buf, counts, displs, dt) \
    echo_outgoing_blocks(#fn, buf, echo_comm_peers(c), counts, displs, dt, echo_comm_id(comm))
#define CONTRIBUTION(sendbuf, recvbuf) ((sendbuf) == MPI_IN_PLACE ? (const void *)(recvbuf) : (sendbuf))
/* this copy's own block of the result (echo_own.c): `src` goes to `dst` after the forward; on an
 * intercommunicator every block comes from the remote group */
#define OWN(src, scount, stype, dst, rcount, rtype)                          \
    echo_own_t own;                                                          \
    echo_own_set(&own, src, scount, stype, c->inter ? NULL : (dst), rcount, rtype); \
    echo_own_keep(&own)
#define AT echo_block_at

int echo_MPI_Barrier(MPI_Comm comm) {
    COMM(MPI_Barrier);
    /* a target may read its window after a barrier that follows other ranks' unlocks (or their stores into a
     * shared window): what this process wrote is on the others' boards first */
    if (echo_is_rep()) echo_win_before_barrier();
    return echo_win_after_barrier(echo_forward(NULL, 0, MPI_BYTE, ECHO_REP(PMPI_Barrier(c->real))));
}

int echo_MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
    COMM(MPI_Bcast);
    if (echo_is_root(c, root)) SDC(MPI_Bcast, buffer, count, datatype);
    int rc = ECHO_REP(PMPI_Bcast(buffer, count, datatype, root, c->real));
    return echo_gets_from_root(c, root) ? echo_forward(buffer, count, datatype, rc) : echo_forward(NULL, 0, MPI_BYTE, rc);
}

int echo_MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                    MPI_Comm comm) {
    COMM(MPI_Reduce);
    if (echo_contributes(c, root)) SDC(MPI_Reduce, CONTRIBUTION(sendbuf, recvbuf), count, datatype);
    int rc = ECHO_REP(PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, c->real));
    return echo_is_root(c, root) ? echo_forward(recvbuf, count, datatype, rc) : echo_forward(NULL, 0, MPI_BYTE, rc);
}

int echo_MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm) {
    COMM(MPI_Allreduce);
    SDC(MPI_Allreduce, CONTRIBUTION(sendbuf, recvbuf), count, datatype);
    return echo_forward(recvbuf, count, datatype, ECHO_REP(PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, c->real)));
}

int echo_MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
    COMM(MPI_Scan);
    SDC(MPI_Scan, CONTRIBUTION(sendbuf, recvbuf), count, datatype);
    return echo_forward(recvbuf, count, datatype, ECHO_REP(PMPI_Scan(sendbuf, recvbuf, count, datatype, op, c->real)));
}

int echo_MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                    MPI_Comm comm) {
    COMM(MPI_Exscan);
    SDC(MPI_Exscan, CONTRIBUTION(sendbuf, recvbuf), count, datatype);
    int rc = ECHO_REP(PMPI_Exscan(sendbuf, recvbuf, count, datatype, op, c->real));
    /* rank 0's receive buffer is left undefined by MPI: nothing to forward */
    return c->rank == 0 ? echo_forward(NULL, 0, MPI_BYTE, rc) : echo_forward(recvbuf, count, datatype, rc);
}

int echo_MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                            MPI_Op op, MPI_Comm comm) {
    COMM(MPI_Reduce_scatter);
    int total = 0;
    for (int i = 0; i < c->size; i++) total += recvcounts[i];
    SDC(MPI_Reduce_scatter, CONTRIBUTION(sendbuf, recvbuf), total, datatype);
    int rc = ECHO_REP(PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, c->real));
    return echo_forward(recvbuf, recvcounts[c->rank], datatype, rc);
}

int echo_MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                                  MPI_Op op, MPI_Comm comm) {
    COMM(MPI_Reduce_scatter_block);
    SDC(MPI_Reduce_scatter_block, CONTRIBUTION(sendbuf, recvbuf), recvcount * echo_comm_peers(c), datatype);
    int rc = ECHO_REP(PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, c->real));
    return echo_forward(recvbuf, recvcount, datatype, rc);
}

int echo_MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                    MPI_Datatype recvtype, int root, MPI_Comm comm) {
    COMM(MPI_Gather);
    if (echo_contributes(c, root)) SDC(MPI_Gather, sendbuf, sendcount, sendtype);
    int rc = ECHO_REP(PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, c->real));
    if (!echo_is_root(c, root)) return echo_forward(NULL, 0, MPI_BYTE, rc);
    OWN(sendbuf, sendcount, sendtype, AT(recvbuf, (MPI_Aint)root * recvcount, recvtype), recvcount, recvtype);
    return echo_own_put(&own, echo_forward(recvbuf, recvcount * echo_comm_peers(c), recvtype, rc));
}

int echo_MPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm) {
    COMM(MPI_Gatherv);
    if (echo_contributes(c, root)) SDC(MPI_Gatherv, sendbuf, sendcount, sendtype);
    int rc = ECHO_REP(PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, c->real));
    if (!echo_is_root(c, root)) return echo_forward(NULL, 0, MPI_BYTE, rc);
    OWN(sendbuf, sendcount, sendtype, c->inter ? NULL : AT(recvbuf, displs[root], recvtype),
        c->inter ? 0 : recvcounts[root], recvtype);
    return echo_own_put(&own, echo_forward_blocks(recvbuf, echo_comm_peers(c), recvcounts, displs, recvtype, rc));
}

int echo_MPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                     MPI_Datatype recvtype, int root, MPI_Comm comm) {
    COMM(MPI_Scatter);
    if (echo_is_root(c, root)) SDC(MPI_Scatter, sendbuf, sendcount * echo_comm_peers(c), sendtype);
    int rc = ECHO_REP(PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, c->real));
    /* (MPI_BOTTOM is NULL in Open MPI: "nothing" must be said with a count of 0) */
    if (!echo_contributes(c, root)) return echo_forward(NULL, 0, MPI_BYTE, rc);
    /* the root's own block of what it scatters is its own */
    int mine = !c->inter && c->rank == root;
    OWN(mine ? AT(sendbuf, (MPI_Aint)root * sendcount, sendtype) : NULL, sendcount, sendtype, mine ? recvbuf : NULL,
        recvcount, recvtype);
    return echo_own_put(&own, echo_forward(recvbuf, recvcount, recvtype, rc));
}

int echo_MPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                      void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
    COMM(MPI_Scatterv);
    if (echo_is_root(c, root)) SDC_BLOCKS(MPI_Scatterv, sendbuf, sendcounts, displs, sendtype);
    int rc = ECHO_REP(PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, c->real));
    /* (MPI_BOTTOM is NULL in Open MPI: "nothing" must be said with a count of 0) */
    if (!echo_contributes(c, root)) return echo_forward(NULL, 0, MPI_BYTE, rc);
    int mine = !c->inter && c->rank == root;
    OWN(mine ? AT(sendbuf, displs[root], sendtype) : NULL, mine ? sendcounts[root] : 0, sendtype,
        mine ? recvbuf : NULL, recvcount, recvtype);
    return echo_own_put(&own, echo_forward(recvbuf, recvcount, recvtype, rc));
}

int echo_MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                       MPI_Datatype recvtype, MPI_Comm comm) {
    COMM(MPI_Allgather);
    SDC(MPI_Allgather, sendbuf, sendcount, sendtype);
    OWN(sendbuf, sendcount, sendtype, AT(recvbuf, (MPI_Aint)c->rank * recvcount, recvtype), recvcount, recvtype);
    int rc = ECHO_REP(PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, c->real));
    return echo_own_put(&own, echo_forward(recvbuf, recvcount * echo_comm_peers(c), recvtype, rc));
}

int echo_MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm) {
    COMM(MPI_Allgatherv);
    SDC(MPI_Allgatherv, sendbuf, sendcount, sendtype);
    OWN(sendbuf, sendcount, sendtype, c->inter ? NULL : AT(recvbuf, displs[c->rank], recvtype),
        c->inter ? 0 : recvcounts[c->rank], recvtype);
    int rc = ECHO_REP(PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, c->real));
    return echo_own_put(&own, echo_forward_blocks(recvbuf, echo_comm_peers(c), recvcounts, displs, recvtype, rc));
}

int echo_MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                      MPI_Datatype recvtype, MPI_Comm comm) {
    COMM(MPI_Alltoall);
    SDC(MPI_Alltoall, sendbuf, sendcount * echo_comm_peers(c), sendtype);
    OWN(sendbuf == MPI_IN_PLACE ? MPI_IN_PLACE : AT(sendbuf, (MPI_Aint)c->rank * sendcount, sendtype), sendcount,
        sendtype, AT(recvbuf, (MPI_Aint)c->rank * recvcount, recvtype), recvcount, recvtype);
    int rc = ECHO_REP(PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, c->real));
    return echo_own_put(&own, echo_forward(recvbuf, recvcount * echo_comm_peers(c), recvtype, rc));
}

int echo_MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                       void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                       MPI_Comm comm) {
    COMM(MPI_Alltoallv);
    SDC_BLOCKS(MPI_Alltoallv, sendbuf, sendcounts, sdispls, sendtype);
    int me = c->inter ? 0 : c->rank, in_place = sendbuf == MPI_IN_PLACE;
    OWN(in_place ? MPI_IN_PLACE : AT(sendbuf, sdispls[me], sendtype), in_place ? 0 : sendcounts[me], sendtype,
        c->inter ? NULL : AT(recvbuf, rdispls[me], recvtype), recvcounts[me], recvtype);
    int rc = ECHO_REP(PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                  c->real));
    return echo_own_put(&own, echo_forward_blocks(recvbuf, echo_comm_peers(c), recvcounts, rdispls, recvtype, rc));
}

int echo_MPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                       const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[],
                       const MPI_Datatype recvtypes[], MPI_Comm comm) {
    COMM(MPI_Alltoallw);
    echo_outgoing_wblocks("MPI_Alltoallw", sendbuf, echo_comm_peers(c), sendcounts, sdispls, sendtypes, echo_comm_id(comm));
    int me = c->inter ? 0 : c->rank, in_place = sendbuf == MPI_IN_PLACE; /* w: byte displacements */
    OWN(in_place ? MPI_IN_PLACE : (const char *)sendbuf + sdispls[me], in_place ? 0 : sendcounts[me],
        in_place ? MPI_BYTE : sendtypes[me], c->inter ? NULL : (char *)recvbuf + rdispls[me], recvcounts[me],
        recvtypes[me]);
    int rc = ECHO_REP(PMPI_Alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes,
                  c->real));
    return echo_own_put(&own, echo_forward_wblocks(recvbuf, echo_comm_peers(c), recvcounts, rdispls, recvtypes, rc));
}
