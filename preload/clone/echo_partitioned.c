/* Partitioned point-to-point communication (MPI-4) under cloning.
 *
 * A partitioned request is a persistent echo request (echo_requests.c): the
 * representative holds the real one, copies hold nothing underneath and never
 * send.  Start/Startall, Wait/Test (and their all/any/some forms) and
 * Request_free are the echo request calls: completing a partitioned receive
 * forwards its whole buffer and status to copies, as for any persistent receive,
 * and the request can be started again.  What is particular to partitions:
 *
 * - Psend_init/Precv_init: copies return their representative's return code.
 *   MPI checks partitioned arguments inside its partitioned component, so
 *   there is no cheap form of the call a copy could ask (as copies do for
 *   sends), and initialization happens once per request.
 * - Pready, Pready_range, Pready_list: the representative marks the partitions
 *   ready.  On every copy the partition is the data it hands to MPI at this
 *   point, so the outgoing check (observers, silent data corruption) runs here,
 *   partition by partition, not at MPI_Start, when the partitions are not filled yet.
 * - A message to itself is the copy's own (echo_own.c): once every partition of its
 *   send is marked ready, a copy keeps the buffer, and takes it when the receive
 *   completes from itself.
 * - Parrived: the representative's answer.  Once a partition has arrived the
 *   program may read it before the request completes, so its elements travel
 *   to copies with the answer. */
#include "echo_clone.h"
#include "echo_records.h"

#include <limits.h>

/* Open MPI's partitioned component sets itself up at a process's first
 * partitioned call with a collective over the whole real MPI_COMM_WORLD (a
 * nonblocking dup that later calls progress), so every process of the job must
 * make one; natively every rank does.  Copies make no real partitioned call: at
 * their first they make one of their own, a matched pair on a private
 * communicator, freed at once (its own setup messages go to itself). */
static void join_partitioned_setup(void) {
    static MPI_Comm self = MPI_COMM_NULL;
    static char out, in;
    if (self != MPI_COMM_NULL) return;
    PMPI_Comm_dup(MPI_COMM_SELF, &self);
    MPI_Request pair[2];
    PMPI_Psend_init(&out, 1, 1, MPI_BYTE, 0, 0, self, MPI_INFO_NULL, &pair[0]);
    PMPI_Precv_init(&in, 1, 1, MPI_BYTE, 0, 0, self, MPI_INFO_NULL, &pair[1]);
    PMPI_Request_free(&pair[0]);
    PMPI_Request_free(&pair[1]);
}

static int init(const char *fn, int send, void *buf, int partitions, MPI_Count count, MPI_Datatype datatype,
                int peer, int tag, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    echo_comm_t *c = echo_comm_get(comm, fn);
    if (partitions > 0 && count > INT_MAX / partitions)
        echo_fatal("%s: %d partitions of %lld elements are more than echo forwards to copies at once (%d)", fn,
                   partitions, (long long)count, INT_MAX);
    MPI_Request real = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
    if (echo_is_rep())
        rc = send ? PMPI_Psend_init(buf, partitions, count, datatype, peer, tag, c->real, info, &real)
                  : PMPI_Precv_init(buf, partitions, count, datatype, peer, tag, c->real, info, &real);
    else
        join_partitioned_setup();
    rc = echo_forward(NULL, 0, MPI_BYTE, rc);
    if (rc != MPI_SUCCESS) return rc; /* MPI made no request */
    *request = echo_request_new_partitioned(real, send, buf, partitions, (int)count, datatype, peer, tag, comm);
    return rc;
}

int echo_MPI_Psend_init(const void *buf, int partitions, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
                        MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    return init("MPI_Psend_init", 1, (void *)buf, partitions, count, datatype, dest, tag, comm, info, request);
}

int echo_MPI_Precv_init(void *buf, int partitions, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                        MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    return init("MPI_Precv_init", 0, buf, partitions, count, datatype, source, tag, comm, info, request);
}

/* Where partition p starts; NULL if p is not one (MPI judges that call) */
static void *part_start(const echo_request_view_t *v, int p) {
    if (p < 0 || p >= v->partitions) return NULL;
    MPI_Aint lb, extent;
    PMPI_Type_get_extent(v->dt, &lb, &extent);
    return (char *)v->buf + (MPI_Aint)p * v->part_count * extent;
}

static void outgoing(const char *fn, const echo_request_view_t *v, int p) {
    void *part = part_start(v, p);
    if (part) echo_outgoing(fn, 0, part, v->part_count, v->dt, v->comm_id, v->peer);
}

int echo_MPI_Pready(int partition, MPI_Request request) {
    echo_request_view_t v;
    if (!echo_request_view(request, &v)) return PMPI_Pready(partition, request);
    outgoing("MPI_Pready", &v, partition);
    echo_request_ready(request, 1);
    return echo_is_rep() ? PMPI_Pready(partition, *v.real) : MPI_SUCCESS;
}

int echo_MPI_Pready_range(int partitionlow, int partitionhigh, MPI_Request request) {
    echo_request_view_t v;
    if (!echo_request_view(request, &v)) return PMPI_Pready_range(partitionlow, partitionhigh, request);
    for (int p = partitionlow; p <= partitionhigh; p++) outgoing("MPI_Pready_range", &v, p);
    echo_request_ready(request, partitionhigh - partitionlow + 1);
    return echo_is_rep() ? PMPI_Pready_range(partitionlow, partitionhigh, *v.real) : MPI_SUCCESS;
}

int echo_MPI_Pready_list(int length, int partitionlist[], MPI_Request request) {
    echo_request_view_t v;
    if (!echo_request_view(request, &v)) return PMPI_Pready_list(length, partitionlist, request);
    for (int i = 0; i < length; i++) outgoing("MPI_Pready_list", &v, partitionlist[i]);
    echo_request_ready(request, length);
    return echo_is_rep() ? PMPI_Pready_list(length, partitionlist, *v.real) : MPI_SUCCESS;
}

int echo_MPI_Parrived(MPI_Request request, int partition, int *flag) {
    echo_request_view_t v;
    if (!echo_request_view(request, &v)) return PMPI_Parrived(request, partition, flag);
    int rc = MPI_SUCCESS, arrived = 0;
    if (echo_is_rep()) rc = PMPI_Parrived(*v.real, partition, &arrived);
    rc = echo_forward(&arrived, 1, MPI_INT, rc);
    *flag = arrived;
    void *part = part_start(&v, partition);
    if (arrived && v.active && rc == MPI_SUCCESS && part) rc = echo_forward(part, v.part_count, v.dt, rc);
    return rc;
}
