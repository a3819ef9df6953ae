/* What MPI answers a copy's calls it does not make.
 *
 * A copy does not send, and does not post the receives its representative
 * posts, so MPI never looks at its arguments; yet a misused call (a negative
 * count, an invalid rank, tag or datatype) must return on the copy the error
 * class it returns on its representative and natively.  The copy asks MPI: it
 * makes the same call on a private communicator that returns errors, with the
 * peer replaced by MPI_PROC_NULL when the application's peer is valid (MPI then
 * checks count, datatype, buffer and tag, and returns at once), or kept when it
 * is not: a negative rank, or one >= the size of the application's
 * communicator (of its remote group) >= 1, is invalid in the private one too,
 * which has one process.  No message is involved: correct programs pay one
 * argument check (about 20 ns) per call on copies.
 *
 * The same probe tells the forwarding code whether a buffer description is one
 * MPI accepts, so that a call MPI rejected is forwarded without data instead of
 * making echo's own messages fail. */
#include "echo_internal.h"

static MPI_Comm probe_comm = MPI_COMM_NULL;

static MPI_Comm probe(void) {
    if (probe_comm == MPI_COMM_NULL) {
        PMPI_Comm_dup(MPI_COMM_SELF, &probe_comm);
        PMPI_Comm_set_errhandler(probe_comm, MPI_ERRORS_RETURN);
    }
    return probe_comm;
}

static int peer_ok(int peer, int size, int any) {
    return peer == MPI_PROC_NULL || (any && peer == MPI_ANY_SOURCE) || (peer >= 0 && peer < size);
}

/* the rank to ask MPI about: none if the application's is valid (among the `peers` processes of its
 * communicator, the remote group's for an intercommunicator), else one that is invalid here too */
static int probe_peer(int peer, int peers, int any) {
    return peer_ok(peer, peers, any) ? MPI_PROC_NULL : peer;
}

int echo_check_buffer(void *buf, int count, MPI_Datatype dt) {
    /* echo's own messages: always valid, and the common case */
    if (count >= 0 && (dt == MPI_BYTE || dt == MPI_INT || dt == MPI_PACKED)) return MPI_SUCCESS;
    return PMPI_Recv(buf, count, dt, MPI_PROC_NULL, 0, probe(), MPI_STATUS_IGNORE);
}

int echo_check_send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, int peers) {
    return PMPI_Send(buf, count, dt, probe_peer(dest, peers, 0), tag, probe());
}

int echo_check_recv(void *buf, int count, MPI_Datatype dt, int source, int tag, int peers) {
    return PMPI_Recv(buf, count, dt, probe_peer(source, peers, 1), tag, probe(), MPI_STATUS_IGNORE);
}

int echo_check_sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                        void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                        int peers) {
#if !ECHO_DECLARES(MPI_Isendrecv) /* an MPI-3 library: its Sendrecv checks them (the peers answer at once) */
    return PMPI_Sendrecv(sendbuf, sendcount, sendtype, probe_peer(dest, peers, 0), sendtag, recvbuf, recvcount,
                         recvtype, probe_peer(source, peers, 1), recvtag, probe(), MPI_STATUS_IGNORE);
#endif
    /* MPI checks the arguments of Isendrecv in its own order: ask Isendrecv itself where a peer is invalid (it
     * fails at once).  With both peers valid, Sendrecv checks the rest: MPICH 4.0's Isendrecv between two
     * MPI_PROC_NULL peers never completes (natively too) */
    int to = probe_peer(dest, peers, 0), from = probe_peer(source, peers, 1);
    if (to == MPI_PROC_NULL && from == MPI_PROC_NULL)
        return PMPI_Sendrecv(sendbuf, sendcount, sendtype, to, sendtag, recvbuf, recvcount, recvtype, from, recvtag,
                             probe(), MPI_STATUS_IGNORE);
    MPI_Request r;
    int rc = PMPI_Isendrecv(sendbuf, sendcount, sendtype, to, sendtag, recvbuf, recvcount, recvtype, from, recvtag,
                            probe(), &r);
    return rc == MPI_SUCCESS ? PMPI_Wait(&r, MPI_STATUS_IGNORE) : rc;
}

int echo_check_sendrecv_replace(void *buf, int count, MPI_Datatype dt, int dest, int sendtag, int source,
                                int recvtag, int peers) {
#if !ECHO_DECLARES(MPI_Isendrecv_replace)
    return PMPI_Sendrecv_replace(buf, count, dt, probe_peer(dest, peers, 0), sendtag, probe_peer(source, peers, 1),
                                 recvtag, probe(), MPI_STATUS_IGNORE);
#endif
    int to = probe_peer(dest, peers, 0), from = probe_peer(source, peers, 1);
    if (to == MPI_PROC_NULL && from == MPI_PROC_NULL) /* as above */
        return PMPI_Sendrecv_replace(buf, count, dt, to, sendtag, from, recvtag, probe(), MPI_STATUS_IGNORE);
    MPI_Request r;
    int rc = PMPI_Isendrecv_replace(buf, count, dt, to, sendtag, from, recvtag, probe(), &r);
    return rc == MPI_SUCCESS ? PMPI_Wait(&r, MPI_STATUS_IGNORE) : rc;
}

/* how a datatype was made: MPI-4's form where mpi.h has it, since MPICH refuses the int form for a type of more
 * than INT_MAX elements (a large-count call's, clone/echo_bigcount.c) */
int echo_type_combiner(MPI_Datatype dt, int *combiner) {
#if ECHO_DECLARES(MPI_Type_get_envelope_c)
    MPI_Count ni, na, nc, nd;
    return PMPI_Type_get_envelope_c(dt, &ni, &na, &nc, &nd, combiner);
#else
    int ni, na, nd;
    return PMPI_Type_get_envelope(dt, &ni, &na, &nd, combiner);
#endif
}

/* a derived datatype kept alive for a later use (a request's completion, a schedule): the application may free
 * its own meanwhile; named types are kept as they are */
int echo_type_keep(MPI_Datatype dt, MPI_Datatype *kept) {
    int combiner;
    *kept = dt;
    if (dt == MPI_DATATYPE_NULL || echo_check_buffer(NULL, 0, dt) != MPI_SUCCESS ||
        echo_type_combiner(dt, &combiner) != MPI_SUCCESS || combiner == MPI_COMBINER_NAMED)
        return 0;
    return PMPI_Type_dup(dt, kept) == MPI_SUCCESS;
}
