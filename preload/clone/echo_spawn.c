/* Dynamic processes under cloning.
 *
 * MPI_Comm_spawn(_multiple): the representatives spawn the children once, and
 * the children are not cloned: they run natively (Open MPI's mpirun does not
 * pass echo's environment to spawned processes; under MPICH's hydra, which
 * does, the library steps aside in them: echo_process.c's spawned_child).  The intercommunicator is real on
 * the representatives; copies get a stand-in that answers rank, size and remote
 * size as their representative's does, and receive what the representative
 * receives from the children.  Children that ask for their parent
 * (MPI_Comm_get_parent) see the representatives only.
 * MPI_Comm_accept/connect work the same way; name publishing is done once, by
 * the representatives.  MPI_Comm_join (a socket per process) is not supported with
 * clones. */
#include "echo_clone.h"

#include <string.h>


/* the communicator MPI uses: a replicated one's real handle, or MPI_COMM_SELF
 * (and what derives from it) as it is: the representative's own */
static MPI_Comm real_comm(MPI_Comm comm) {
    echo_comm_t *c = echo_comm_find(comm);
    return c ? c->real : comm;
}

static int spawned(MPI_Comm comm, MPI_Comm *intercomm, int *errcodes, int n, int rc) {
    if (errcodes != MPI_ERRCODES_IGNORE) rc = echo_forward(errcodes, n, MPI_INT, rc);
    return echo_comm_register_new(comm, intercomm, rc, 0);
}

int echo_MPI_Comm_spawn(const char *command, char *argv[], int maxprocs, MPI_Info info, int root, MPI_Comm comm,
                        MPI_Comm *intercomm, int array_of_errcodes[]) {
    int rc = ECHO_REP(PMPI_Comm_spawn(command, argv, maxprocs, info, root, real_comm(comm), intercomm,
                                  array_of_errcodes));
    /* maxprocs is significant at the root only: the error codes travel with the count spawned */
    int n = 0;
    if (echo_is_rep() && rc == MPI_SUCCESS) PMPI_Comm_remote_size(*intercomm, &n);
    rc = echo_forward(&n, 1, MPI_INT, rc);
    return spawned(comm, intercomm, array_of_errcodes, n, rc);
}

int echo_MPI_Comm_spawn_multiple(int count, char *array_of_commands[], char **array_of_argv[],
                                 const int array_of_maxprocs[], const MPI_Info array_of_info[], int root,
                                 MPI_Comm comm, MPI_Comm *intercomm, int array_of_errcodes[]) {
    int rc = ECHO_REP(PMPI_Comm_spawn_multiple(count, array_of_commands, array_of_argv, array_of_maxprocs, array_of_info,
                                           root, real_comm(comm), intercomm, array_of_errcodes));
    int n = 0; /* the error codes travel with the count spawned, known on every rank */
    if (echo_is_rep() && rc == MPI_SUCCESS) PMPI_Comm_remote_size(*intercomm, &n);
    rc = echo_forward(&n, 1, MPI_INT, rc);
    return spawned(comm, intercomm, array_of_errcodes, n, rc);
}

int echo_MPI_Comm_get_parent(MPI_Comm *parent) {
    /* an echo job is never spawned by another (its children run natively) */
    return PMPI_Comm_get_parent(parent);
}

int echo_MPI_Comm_disconnect(MPI_Comm *comm) {
    echo_comm_t *c = echo_comm_find(*comm);
    if (!c || *comm == MPI_COMM_WORLD) return PMPI_Comm_disconnect(comm); /* MPI reports the misuse */
    int rc = echo_is_rep() ? PMPI_Comm_disconnect(comm) : MPI_SUCCESS;
    rc = echo_forward(NULL, 0, MPI_BYTE, rc);
    MPI_Comm app = echo_is_rep() ? c->app : *comm;
    echo_comm_remove(app);
    if (!echo_is_rep()) PMPI_Comm_free(comm);
    *comm = MPI_COMM_NULL;
    return rc;
}

int echo_MPI_Comm_accept(const char *port_name, MPI_Info info, int root, MPI_Comm comm, MPI_Comm *newcomm) {
    return echo_comm_register_new(comm, newcomm, ECHO_REP(PMPI_Comm_accept(port_name, info, root, real_comm(comm),
                                                                       newcomm)), 0);
}

int echo_MPI_Comm_connect(const char *port_name, MPI_Info info, int root, MPI_Comm comm, MPI_Comm *newcomm) {
    return echo_comm_register_new(comm, newcomm, ECHO_REP(PMPI_Comm_connect(port_name, info, root, real_comm(comm),
                                                                        newcomm)), 0);
}

/* names are published once per rank: by its representative */
int echo_MPI_Publish_name(const char *service_name, MPI_Info info, const char *port_name) {
    return echo_forward(NULL, 0, MPI_BYTE, ECHO_REP(PMPI_Publish_name(service_name, info, port_name)));
}

int echo_MPI_Unpublish_name(const char *service_name, MPI_Info info, const char *port_name) {
    return echo_forward(NULL, 0, MPI_BYTE, ECHO_REP(PMPI_Unpublish_name(service_name, info, port_name)));
}

int echo_MPI_Lookup_name(const char *service_name, MPI_Info info, char *port_name) {
    int rc = ECHO_REP(PMPI_Lookup_name(service_name, info, port_name));
    return echo_forward(port_name, MPI_MAX_PORT_NAME, MPI_CHAR, rc);
}

/* ports are the representative's: copies hold its port name, as they hold its communicators */
int echo_MPI_Open_port(MPI_Info info, char *port_name) {
    int rc = ECHO_REP(PMPI_Open_port(info, port_name));
    return echo_forward(port_name, MPI_MAX_PORT_NAME, MPI_CHAR, rc);
}

int echo_MPI_Close_port(const char *port_name) {
    return echo_forward(NULL, 0, MPI_BYTE, ECHO_REP(PMPI_Close_port(port_name)));
}
