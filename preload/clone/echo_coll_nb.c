/* Nonblocking (MPI_I*) and persistent (MPI_*_init, MPI-4) collectives under
 * cloning.  Both are one function per collective: the representative starts the
 * real operation on the representatives' communicator, and every copy holds an
 * echo request that delivers, when a Wait/Test retires it, what the blocking
 * form would have forwarded (see echo_coll.c for which process gets what, also on
 * intercommunicators).
 *
 * The data a copy contributes is checked for silent corruption when a
 * nonblocking collective starts; a persistent one is not checked (its buffers are
 * read at each MPI_Start, which does not know the collective's layout). */
#include "echo_clone.h"
#include "echo_records.h"

#define NB(fn) echo_comm_t *c = echo_comm_get(comm, #fn); MPI_Request real = MPI_REQUEST_NULL; int rc = MPI_SUCCESS
#define SDC(fn, buf, count, dt) if (!persistent) echo_outgoing(#fn, 1, buf, count, dt, echo_comm_id(comm), -1)
#define CONTRIBUTION(sendbuf, recvbuf) ((sendbuf) == MPI_IN_PLACE ? (const void *)(recvbuf) : (sendbuf))
/* the representative starts the real operation: MPI_Ifn(args, &real) or MPI_fn_init(args, info, &real) */
#define START(ifn, initfn, ...) \
    if (echo_is_rep()) rc = persistent ? P##initfn(__VA_ARGS__, info, &real) : P##ifn(__VA_ARGS__, &real)
#define OUTPUT(buf, count, dt) echo_request_new(real, persistent, 0, buf, count, dt)
#define NOTHING echo_request_new(real, persistent, 0, NULL, 0, MPI_BYTE)
#define BLOCKS(buf, counts, displs, dt) echo_request_new_blocks(real, persistent, buf, echo_comm_peers(c), counts, displs, dt, NULL)
/* this copy's own block of the result (echo_own.c), kept at each start and put when the request is retired; on
 * an intercommunicator every block comes from the remote group */
#define OWN(src, scount, stype, dst, rcount, rtype)                                     \
    do {                                                                                \
        echo_own_t own;                                                                 \
        echo_own_set(&own, src, scount, stype, c->inter ? NULL : (dst), rcount, rtype); \
        echo_request_own(*request, &own);                                               \
    } while (0)
#define AT echo_block_at
static int barrier(MPI_Comm comm, MPI_Info info, int persistent, MPI_Request *request) {
    NB(MPI_Ibarrier);
    START(MPI_Ibarrier, MPI_Barrier_init, c->real);
    *request = NOTHING;
    return rc;
}
int echo_MPI_Ibarrier(MPI_Comm comm, MPI_Request *request) { return barrier(comm, MPI_INFO_NULL, 0, request); }
int echo_MPI_Barrier_init(MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    return barrier(comm, info, 1, request);
}

static int bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Info info,
                 int persistent, MPI_Request *request) {
    NB(MPI_Ibcast);
    if (echo_is_root(c, root)) SDC(MPI_Ibcast, buffer, count, datatype);
    START(MPI_Ibcast, MPI_Bcast_init, buffer, count, datatype, root, c->real);
    *request = echo_gets_from_root(c, root) ? OUTPUT(buffer, count, datatype) : NOTHING;
    return rc;
}
int echo_MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Request *request) {
    return bcast(buffer, count, datatype, root, comm, MPI_INFO_NULL, 0, request);
}
int echo_MPI_Bcast_init(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm, MPI_Info info,
                        MPI_Request *request) {
    return bcast(buffer, count, datatype, root, comm, info, 1, request);
}

static int reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                  MPI_Comm comm, MPI_Info info, int persistent, MPI_Request *request) {
    NB(MPI_Ireduce);
    if (echo_contributes(c, root)) SDC(MPI_Ireduce, CONTRIBUTION(sendbuf, recvbuf), count, datatype);
    START(MPI_Ireduce, MPI_Reduce_init, sendbuf, recvbuf, count, datatype, op, root, c->real);
    *request = echo_is_root(c, root) ? OUTPUT(recvbuf, count, datatype) : NOTHING;
    return rc;
}
int echo_MPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                     MPI_Comm comm, MPI_Request *request) {
    return reduce(sendbuf, recvbuf, count, datatype, op, root, comm, MPI_INFO_NULL, 0, request);
}
int echo_MPI_Reduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                         MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    return reduce(sendbuf, recvbuf, count, datatype, op, root, comm, info, 1, request);
}

/* Allreduce, Scan and Exscan share a shape: every process gets `count` elements
 * (Exscan: not rank 0, whose receive buffer MPI leaves undefined) */
enum { ALLREDUCE, SCAN, EXSCAN };
static int reduce_all(int which, const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                      MPI_Comm comm, MPI_Info info, int persistent, MPI_Request *request) {
    static const char *const names[] = {"MPI_Iallreduce", "MPI_Iscan", "MPI_Iexscan"};
    echo_comm_t *c = echo_comm_get(comm, names[which]);
    MPI_Request real = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
    if (!persistent) echo_outgoing(names[which], 1, CONTRIBUTION(sendbuf, recvbuf), count, datatype, echo_comm_id(comm), -1);
    if (which == ALLREDUCE) START(MPI_Iallreduce, MPI_Allreduce_init, sendbuf, recvbuf, count, datatype, op, c->real);
    if (which == SCAN) START(MPI_Iscan, MPI_Scan_init, sendbuf, recvbuf, count, datatype, op, c->real);
    if (which == EXSCAN) START(MPI_Iexscan, MPI_Exscan_init, sendbuf, recvbuf, count, datatype, op, c->real);
    *request = which == EXSCAN && c->rank == 0 ? NOTHING : OUTPUT(recvbuf, count, datatype);
    return rc;
}
int echo_MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                        MPI_Comm comm, MPI_Request *request) {
    return reduce_all(ALLREDUCE, sendbuf, recvbuf, count, datatype, op, comm, MPI_INFO_NULL, 0, request);
}
int echo_MPI_Allreduce_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                            MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    return reduce_all(ALLREDUCE, sendbuf, recvbuf, count, datatype, op, comm, info, 1, request);
}
int echo_MPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                   MPI_Request *request) {
    return reduce_all(SCAN, sendbuf, recvbuf, count, datatype, op, comm, MPI_INFO_NULL, 0, request);
}
int echo_MPI_Scan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                       MPI_Info info, MPI_Request *request) {
    return reduce_all(SCAN, sendbuf, recvbuf, count, datatype, op, comm, info, 1, request);
}
int echo_MPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                     MPI_Comm comm, MPI_Request *request) {
    return reduce_all(EXSCAN, sendbuf, recvbuf, count, datatype, op, comm, MPI_INFO_NULL, 0, request);
}
int echo_MPI_Exscan_init(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                         MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    return reduce_all(EXSCAN, sendbuf, recvbuf, count, datatype, op, comm, info, 1, request);
}

static int reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                          MPI_Op op, MPI_Comm comm, MPI_Info info, int persistent, MPI_Request *request) {
    NB(MPI_Ireduce_scatter);
    int total = 0;
    for (int i = 0; i < c->size; i++) total += recvcounts[i];
    SDC(MPI_Ireduce_scatter, CONTRIBUTION(sendbuf, recvbuf), total, datatype);
    START(MPI_Ireduce_scatter, MPI_Reduce_scatter_init, sendbuf, recvbuf, recvcounts, datatype, op, c->real);
    *request = OUTPUT(recvbuf, recvcounts[c->rank], datatype);
    return rc;
}
int echo_MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                             MPI_Op op, MPI_Comm comm, MPI_Request *request) {
    return reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, MPI_INFO_NULL, 0, request);
}
int echo_MPI_Reduce_scatter_init(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                                 MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    return reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, info, 1, request);
}

static int reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype, MPI_Op op,
                                MPI_Comm comm, MPI_Info info, int persistent, MPI_Request *request) {
    NB(MPI_Ireduce_scatter_block);
    SDC(MPI_Ireduce_scatter_block, CONTRIBUTION(sendbuf, recvbuf), recvcount * echo_comm_peers(c), datatype);
    START(MPI_Ireduce_scatter_block, MPI_Reduce_scatter_block_init, sendbuf, recvbuf, recvcount, datatype, op,
          c->real);
    *request = OUTPUT(recvbuf, recvcount, datatype);
    return rc;
}
int echo_MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                                   MPI_Op op, MPI_Comm comm, MPI_Request *request) {
    return reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, MPI_INFO_NULL, 0, request);
}
int echo_MPI_Reduce_scatter_block_init(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                                       MPI_Op op, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    return reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm, info, 1, request);
}

static int gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, int persistent,
                  MPI_Request *request) {
    NB(MPI_Igather);
    if (echo_contributes(c, root)) SDC(MPI_Igather, sendbuf, sendcount, sendtype);
    START(MPI_Igather, MPI_Gather_init, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, c->real);
    *request = echo_is_root(c, root) ? OUTPUT(recvbuf, recvcount * echo_comm_peers(c), recvtype) : NOTHING;
    if (echo_is_root(c, root))
        OWN(sendbuf, sendcount, sendtype, AT(recvbuf, (MPI_Aint)root * recvcount, recvtype), recvcount, recvtype);
    return rc;
}
int echo_MPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                     MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request) {
    return gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, MPI_INFO_NULL, 0, request);
}
int echo_MPI_Gather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                         MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    return gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, info, 1, request);
}

static int gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, int persistent,
                   MPI_Request *request) {
    NB(MPI_Igatherv);
    if (echo_contributes(c, root)) SDC(MPI_Igatherv, sendbuf, sendcount, sendtype);
    START(MPI_Igatherv, MPI_Gatherv_init, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
          c->real);
    *request = echo_is_root(c, root) ? BLOCKS(recvbuf, recvcounts, displs, recvtype) : NOTHING;
    if (echo_is_root(c, root) && !c->inter)
        OWN(sendbuf, sendcount, sendtype, AT(recvbuf, displs[root], recvtype), recvcounts[root], recvtype);
    return rc;
}
int echo_MPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm,
                      MPI_Request *request) {
    return gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, MPI_INFO_NULL, 0,
                   request);
}
int echo_MPI_Gatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                          const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm,
                          MPI_Info info, MPI_Request *request) {
    return gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm, info, 1, request);
}

static int scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                   MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, int persistent,
                   MPI_Request *request) {
    NB(MPI_Iscatter);
    if (echo_is_root(c, root)) SDC(MPI_Iscatter, sendbuf, sendcount * echo_comm_peers(c), sendtype);
    START(MPI_Iscatter, MPI_Scatter_init, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, c->real);
    int gets = echo_contributes(c, root) && recvbuf != MPI_IN_PLACE;
    *request = gets ? OUTPUT(recvbuf, recvcount, recvtype) : NOTHING;
    if (gets && !c->inter && c->rank == root) /* the root's own block of what it scatters */
        OWN(AT(sendbuf, (MPI_Aint)root * sendcount, sendtype), sendcount, sendtype, recvbuf, recvcount, recvtype);
    return rc;
}
int echo_MPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                      MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request) {
    return scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, MPI_INFO_NULL, 0, request);
}
int echo_MPI_Scatter_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                          MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    return scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, info, 1, request);
}

static int scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                    void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Info info,
                    int persistent, MPI_Request *request) {
    NB(MPI_Iscatterv);
    if (echo_is_root(c, root) && !persistent)
        echo_outgoing_blocks("MPI_Iscatterv", sendbuf, echo_comm_peers(c), sendcounts, displs, sendtype,
                             echo_comm_id(comm));
    START(MPI_Iscatterv, MPI_Scatterv_init, sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
          c->real);
    int gets = echo_contributes(c, root) && recvbuf != MPI_IN_PLACE;
    *request = gets ? OUTPUT(recvbuf, recvcount, recvtype) : NOTHING;
    if (gets && !c->inter && c->rank == root)
        OWN(AT(sendbuf, displs[root], sendtype), sendcounts[root], sendtype, recvbuf, recvcount, recvtype);
    return rc;
}
int echo_MPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                       void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                       MPI_Request *request) {
    return scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, MPI_INFO_NULL, 0,
                    request);
}
int echo_MPI_Scatterv_init(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                           MPI_Info info, MPI_Request *request) {
    return scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm, info, 1,
                    request);
}

static int allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                     MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, int persistent, MPI_Request *request) {
    NB(MPI_Iallgather);
    SDC(MPI_Iallgather, sendbuf, sendcount, sendtype);
    START(MPI_Iallgather, MPI_Allgather_init, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, c->real);
    *request = OUTPUT(recvbuf, recvcount * echo_comm_peers(c), recvtype);
    OWN(sendbuf, sendcount, sendtype, AT(recvbuf, (MPI_Aint)c->rank * recvcount, recvtype), recvcount, recvtype);
    return rc;
}
int echo_MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                        MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
    return allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, MPI_INFO_NULL, 0, request);
}
int echo_MPI_Allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    return allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, 1, request);
}

static int allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                      const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                      int persistent, MPI_Request *request) {
    NB(MPI_Iallgatherv);
    SDC(MPI_Iallgatherv, sendbuf, sendcount, sendtype);
    START(MPI_Iallgatherv, MPI_Allgatherv_init, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
          c->real);
    *request = BLOCKS(recvbuf, recvcounts, displs, recvtype);
    if (!c->inter) OWN(sendbuf, sendcount, sendtype, AT(recvbuf, displs[c->rank], recvtype), recvcounts[c->rank], recvtype);
    return rc;
}
int echo_MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                         const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                         MPI_Request *request) {
    return allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, MPI_INFO_NULL, 0,
                      request);
}
int echo_MPI_Allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                             const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Info info, MPI_Request *request) {
    return allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm, info, 1, request);
}

static int alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                    MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, int persistent, MPI_Request *request) {
    NB(MPI_Ialltoall);
    SDC(MPI_Ialltoall, sendbuf, sendcount * echo_comm_peers(c), sendtype);
    START(MPI_Ialltoall, MPI_Alltoall_init, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, c->real);
    *request = OUTPUT(recvbuf, recvcount * echo_comm_peers(c), recvtype);
    OWN(sendbuf == MPI_IN_PLACE ? MPI_IN_PLACE : AT(sendbuf, (MPI_Aint)c->rank * sendcount, sendtype), sendcount,
        sendtype, AT(recvbuf, (MPI_Aint)c->rank * recvcount, recvtype), recvcount, recvtype);
    return rc;
}
int echo_MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                       MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request) {
    return alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, MPI_INFO_NULL, 0, request);
}
int echo_MPI_Alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    return alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, 1, request);
}

static int alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                     void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                     MPI_Info info, int persistent, MPI_Request *request) {
    NB(MPI_Ialltoallv);
    if (!persistent)
        echo_outgoing_blocks("MPI_Ialltoallv", sendbuf, echo_comm_peers(c), sendcounts, sdispls, sendtype,
                             echo_comm_id(comm));
    START(MPI_Ialltoallv, MPI_Alltoallv_init, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
          recvtype, c->real);
    *request = BLOCKS(recvbuf, recvcounts, rdispls, recvtype);
    if (!c->inter) {
        int me = c->rank, in_place = sendbuf == MPI_IN_PLACE;
        OWN(in_place ? MPI_IN_PLACE : AT(sendbuf, sdispls[me], sendtype), in_place ? 0 : sendcounts[me], sendtype,
            AT(recvbuf, rdispls[me], recvtype), recvcounts[me], recvtype);
    }
    return rc;
}
int echo_MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                        void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                        MPI_Comm comm, MPI_Request *request) {
    return alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm,
                     MPI_INFO_NULL, 0, request);
}
int echo_MPI_Alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                            void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                            MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    return alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm, info, 1,
                     request);
}

static int alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[], const MPI_Datatype sendtypes[],
                     void *recvbuf, const int recvcounts[], const int rdispls[], const MPI_Datatype recvtypes[],
                     MPI_Comm comm, MPI_Info info, int persistent, MPI_Request *request) {
    NB(MPI_Ialltoallw);
    if (!persistent)
        echo_outgoing_wblocks("MPI_Ialltoallw", sendbuf, echo_comm_peers(c), sendcounts, sdispls, sendtypes,
                              echo_comm_id(comm));
    START(MPI_Ialltoallw, MPI_Alltoallw_init, sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls,
          recvtypes, c->real);
    *request = echo_request_new_blocks(real, persistent, recvbuf, echo_comm_peers(c), recvcounts, rdispls, MPI_BYTE,
                                       recvtypes);
    if (!c->inter) { /* w: byte displacements */
        int me = c->rank, in_place = sendbuf == MPI_IN_PLACE;
        OWN(in_place ? MPI_IN_PLACE : (const char *)sendbuf + sdispls[me], in_place ? 0 : sendcounts[me],
            in_place ? MPI_BYTE : sendtypes[me], (char *)recvbuf + rdispls[me], recvcounts[me], recvtypes[me]);
    }
    return rc;
}
int echo_MPI_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                        const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[],
                        const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Request *request) {
    return alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm,
                     MPI_INFO_NULL, 0, request);
}
int echo_MPI_Alltoallw_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                            const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[], const int rdispls[],
                            const MPI_Datatype recvtypes[], MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    return alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf, recvcounts, rdispls, recvtypes, comm, info, 1,
                     request);
}
