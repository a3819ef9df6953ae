/* Blocking point-to-point under cloning: representatives do the real call,
 * copies do not send (they return what MPI says of the call's arguments), and
 * every copy receives the representative's data and status (the source is
 * already an application rank: representatives' ranks in their communicators
 * are the application's ranks). */
#include "echo_clone.h"
#include "echo_records.h"

#define COPIES_DO_NOT_SEND(fn, buf, count, datatype, dest, tag, comm)                 \
    do {                                                                            \
        echo_comm_t *c = echo_comm_get(comm, #fn);                                  \
        echo_outgoing(#fn, 0, buf, count, datatype, echo_comm_id(comm), echo_peer(dest)); \
        if (echo_is_rep()) return P##fn(buf, count, datatype, dest, tag, c->real);      \
        int rc_ = echo_check_send(buf, count, datatype, dest, tag, echo_comm_peers(c)); \
        if (rc_ == MPI_SUCCESS) echo_self_send(buf, count, datatype, dest, tag, comm);  \
        return rc_;                                                                     \
    } while (0)

int echo_MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
    COPIES_DO_NOT_SEND(MPI_Send, buf, count, datatype, dest, tag, comm);
}
int echo_MPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
    COPIES_DO_NOT_SEND(MPI_Ssend, buf, count, datatype, dest, tag, comm);
}
int echo_MPI_Rsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
    COPIES_DO_NOT_SEND(MPI_Rsend, buf, count, datatype, dest, tag, comm);
}
int echo_MPI_Bsend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm) {
    COPIES_DO_NOT_SEND(MPI_Bsend, buf, count, datatype, dest, tag, comm);
}

int echo_MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                  MPI_Status *status) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Recv");
    MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
    int rc = echo_is_rep() ? PMPI_Recv(buf, count, datatype, source, tag, c->real, st) : MPI_SUCCESS;
    rc = echo_forward_status(buf, count, datatype, st, rc);
    echo_self_receive(buf, count, datatype, st, echo_comm_id(comm), echo_self_rank(comm), rc);
    return rc;
}

int echo_MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                      void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                      MPI_Comm comm, MPI_Status *status) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Sendrecv");
    echo_outgoing("MPI_Sendrecv", 0, sendbuf, sendcount, sendtype, echo_comm_id(comm), echo_peer(dest));
    MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
    echo_self_send(sendbuf, sendcount, sendtype, dest, sendtag, comm);
    int rc = echo_is_rep() ? PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount,
                                           recvtype, source, recvtag, c->real, st)
                           : MPI_SUCCESS;
    rc = echo_forward_status(recvbuf, recvcount, recvtype, st, rc);
    echo_self_receive(recvbuf, recvcount, recvtype, st, echo_comm_id(comm), echo_self_rank(comm), rc);
    return rc;
}

int echo_MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source,
                              int recvtag, MPI_Comm comm, MPI_Status *status) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Sendrecv_replace");
    echo_outgoing("MPI_Sendrecv_replace", 0, buf, count, datatype, echo_comm_id(comm), echo_peer(dest));
    MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
    echo_self_send(buf, count, datatype, dest, sendtag, comm);
    int rc = echo_is_rep()
                 ? PMPI_Sendrecv_replace(buf, count, datatype, dest, sendtag, source, recvtag, c->real, st)
                 : MPI_SUCCESS;
    rc = echo_forward_status(buf, count, datatype, st, rc);
    echo_self_receive(buf, count, datatype, st, echo_comm_id(comm), echo_self_rank(comm), rc);
    return rc;
}

int echo_MPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Probe");
    MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
    int rc = echo_is_rep() ? PMPI_Probe(source, tag, c->real, st) : MPI_SUCCESS;
    return echo_forward_status(NULL, 0, MPI_BYTE, st, rc);
}

int echo_MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Iprobe");
    struct { int flag; MPI_Status st; } r = {0};
    int rc = echo_is_rep() ? PMPI_Iprobe(source, tag, c->real, &r.flag, &r.st) : MPI_SUCCESS;
    rc = echo_forward_bytes(&r, sizeof r, rc);
    *flag = r.flag;
    if (status != MPI_STATUS_IGNORE && r.flag) echo_set_status(status, &r.st);
    return rc;
}

/* Matched probes: the representative holds the real message; a copy holds a
 * placeholder and receives the data when it "receives" the message, exactly as
 * for MPI_Recv.  Mrecv/Imrecv name no communicator, so the messages of
 * replicated communicators are remembered (a copy's placeholders are distinct
 * addresses, never given to MPI): any other message comes from a process-local
 * communicator (MPI_COMM_SELF) and goes to MPI as it is. */
#define MAX_MESSAGES 256
/* with the communicator's id and the caller's rank in it: a message a copy sent itself is its own (echo_own.c) */
static struct { MPI_Message m; int32_t comm; int self; } replicated[MAX_MESSAGES];
static int nreplicated;

static MPI_Message remember(MPI_Message real, MPI_Comm comm) {
    if (nreplicated == MAX_MESSAGES)
        echo_fatal("more than %d matched-probe messages are waiting to be received", MAX_MESSAGES);
    MPI_Message m = real;
    if (!echo_is_rep()) {
        int slot = 0; /* a placeholder no waiting message uses */
        for (int i = 0; i < nreplicated; i++)
            if (replicated[i].m == echo_placeholder_message(slot)) slot++, i = -1;
        m = echo_placeholder_message(slot);
    }
    replicated[nreplicated].m = m;
    replicated[nreplicated].comm = echo_comm_id(comm);
    replicated[nreplicated++].self = echo_self_rank(comm);
    return m;
}

int echo_message_take(MPI_Message m, int32_t *comm, int *self) {
    for (int i = 0; i < nreplicated; i++)
        if (replicated[i].m == m) {
            *comm = replicated[i].comm;
            *self = replicated[i].self;
            replicated[i] = replicated[--nreplicated];
            return 1;
        }
    return 0;
}

int echo_MPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Mprobe");
    MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
    int rc = MPI_SUCCESS;
    if (echo_is_rep()) rc = PMPI_Mprobe(source, tag, c->real, message, st);
    rc = echo_forward_status(NULL, 0, MPI_BYTE, st, rc);
    /* a probe of MPI_PROC_NULL gives MPI_MESSAGE_NO_PROC everywhere: each process receives it itself */
    if (rc == MPI_SUCCESS)
        *message = st->MPI_SOURCE == MPI_PROC_NULL ? MPI_MESSAGE_NO_PROC
                                                    : remember(echo_is_rep() ? *message : MPI_MESSAGE_NULL, comm);
    return rc;
}

int echo_MPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *status) {
    echo_comm_t *c = echo_comm_get(comm, "MPI_Improbe");
    struct { int flag; MPI_Status st; } r = {0};
    int rc = MPI_SUCCESS;
    if (echo_is_rep()) rc = PMPI_Improbe(source, tag, c->real, &r.flag, message, &r.st);
    rc = echo_forward_bytes(&r, sizeof r, rc);
    *flag = r.flag;
    if (r.flag && rc == MPI_SUCCESS)
        *message = r.st.MPI_SOURCE == MPI_PROC_NULL ? MPI_MESSAGE_NO_PROC
                                                     : remember(echo_is_rep() ? *message : MPI_MESSAGE_NULL, comm);
    if (status != MPI_STATUS_IGNORE && r.flag) echo_set_status(status, &r.st);
    return rc;
}

int echo_MPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status) {
    int32_t comm_id;
    int self;
    if (!echo_message_take(*message, &comm_id, &self))
        return PMPI_Mrecv(buf, count, datatype, message, status); /* local */
    MPI_Status local, *st = status == MPI_STATUS_IGNORE ? &local : status;
    int rc = MPI_SUCCESS;
    if (echo_is_rep()) rc = PMPI_Mrecv(buf, count, datatype, message, st);
    else *message = MPI_MESSAGE_NULL;
    rc = echo_forward_status(buf, count, datatype, st, rc);
    echo_self_receive(buf, count, datatype, st, comm_id, self, rc); /* a message the copy sent itself: its own */
    return rc;
}
