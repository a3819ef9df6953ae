/* Creating communicators under cloning: the representatives create the real
 * communicator from their real ones; echo_comm_register_new then gives every
 * copy a stand-in that answers rank, size, groups and intercommunicator queries
 * as its representative's communicator does. */
#include "echo_clone.h"

#include <stdlib.h>

#define COMM(fn) echo_comm_t *c = echo_comm_get(comm, #fn)

int echo_MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) {
    COMM(MPI_Comm_dup);
    return echo_comm_register_new(comm, newcomm, ECHO_REP(PMPI_Comm_dup(c->real, newcomm)), 1);
}

int echo_MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm) {
    COMM(MPI_Comm_dup_with_info);
    return echo_comm_register_new(comm, newcomm, ECHO_REP(PMPI_Comm_dup_with_info(c->real, info, newcomm)), 1);
}

/* MPI_Comm_idup: the new communicator exists for copies once the request
 * completes; it is registered then, on every side */
typedef struct { MPI_Comm parent; MPI_Comm *newcomm; } idup_t;

static int idup_done(void *arg, int rc) {
    idup_t *d = arg;
    rc = echo_comm_register_new(d->parent, d->newcomm, rc, 1);
    free(d);
    return rc;
}

static int idup(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm, MPI_Request *request) {
    COMM(MPI_Comm_idup);
    MPI_Request real = MPI_REQUEST_NULL;
    int rc = MPI_SUCCESS;
    if (echo_is_rep())
        rc = info == MPI_INFO_NULL ? PMPI_Comm_idup(c->real, newcomm, &real)
                                   : PMPI_Comm_idup_with_info(c->real, info, newcomm, &real);
    else
        *newcomm = MPI_COMM_NULL; /* not to be used before completion */
    rc = echo_forward(NULL, 0, MPI_BYTE, rc); /* a refused idup makes no request, on copies too */
    if (rc != MPI_SUCCESS) return rc;
    idup_t *d = malloc(sizeof *d);
    *d = (idup_t){comm, newcomm};
    *request = echo_request_then(real, idup_done, d);
    return rc;
}

int echo_MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request) {
    return idup(comm, MPI_INFO_NULL, newcomm, request);
}

int echo_MPI_Comm_idup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm, MPI_Request *request) {
    return idup(comm, info, newcomm, request);
}

int echo_MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm) {
    COMM(MPI_Comm_split);
    return echo_comm_register_new(comm, newcomm, ECHO_REP(PMPI_Comm_split(c->real, color, key, newcomm)), 0);
}

/* MPI_COMM_TYPE_HW_UNGUIDED: MPI writes the level it split at into the caller's info ("mpi_hw_resource_type");
 * copies set the representative's answer in theirs (MPICH's comm/cmsplit_type reads it) */
static int unguided_level(int split_type, MPI_Info info, int rc) {
/* MPI 4: a macro in MPICH; an enumerator in Open MPI 5, which says MPI 3.1 */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
    if (split_type != MPI_COMM_TYPE_HW_UNGUIDED || info == MPI_INFO_NULL) return rc;
    char value[MPI_MAX_INFO_VAL + 1] = "";
    int len = MPI_MAX_INFO_VAL, flag = 0;
    if (echo_is_rep() && rc == MPI_SUCCESS) PMPI_Info_get_string(info, "mpi_hw_resource_type", &len, value, &flag);
    rc = echo_forward_bytes(value, sizeof value, rc);
    if (!echo_is_rep() && value[0]) PMPI_Info_set(info, "mpi_hw_resource_type", value);
#else
    (void)split_type, (void)info;
#endif
    return rc;
}

int echo_MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm) {
    COMM(MPI_Comm_split_type);
    int rc = unguided_level(split_type, info, ECHO_REP(PMPI_Comm_split_type(c->real, split_type, key, info, newcomm)));
    return echo_comm_register_new(comm, newcomm, rc, 0);
}

/* Groups: a copy's group names the copy where its representative stands; the
 * representative's own group of the same ranks is what MPI sees. */
int echo_MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm) {
    COMM(MPI_Comm_create);
    return echo_comm_register_new(comm, newcomm, ECHO_REP(PMPI_Comm_create(c->real, group, newcomm)), 0);
}

int echo_MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm) {
    COMM(MPI_Comm_create_group);
    return echo_comm_register_new(comm, newcomm, ECHO_REP(PMPI_Comm_create_group(c->real, group, tag, newcomm)), 0);
}

/* the error handler is given, not inherited: copies set it on their stand-in */
static int with_errhandler(MPI_Comm *newcomm, MPI_Errhandler errhandler, int rc) {
    if (!echo_is_rep() && *newcomm != MPI_COMM_NULL && errhandler != MPI_ERRHANDLER_NULL)
        PMPI_Comm_set_errhandler(*newcomm, errhandler);
    return rc;
}

int echo_MPI_Comm_create_from_group(MPI_Group group, const char *stringtag, MPI_Info info, MPI_Errhandler errhandler,
                                    MPI_Comm *newcomm) {
    int rc = ECHO_REP(PMPI_Comm_create_from_group(group, stringtag, info, errhandler, newcomm));
    return with_errhandler(newcomm, errhandler, echo_comm_register_new(MPI_COMM_NULL, newcomm, rc, 0));
}

/* ---- intercommunicators ---- */

int echo_MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm, int remote_leader, int tag,
                              MPI_Comm *newintercomm) {
    /* a local group of one, MPI_COMM_SELF (MPICH's comm/ic1): the representative's own is the real one, and the
     * copies must not make the call (over the real world they would wait for partners that never come) */
    int self = echo_comm_is_local(local_comm);
    MPI_Comm real_local = self ? local_comm : echo_comm_get(local_comm, "MPI_Intercomm_create")->real;
    /* peer_comm matters at the leaders only; elsewhere it may be anything */
    echo_comm_t *peer = echo_comm_find(peer_comm);
    MPI_Comm real_peer = peer ? peer->real : peer_comm;
    int rc = ECHO_REP(PMPI_Intercomm_create(real_local, local_leader, real_peer, remote_leader, tag, newintercomm));
    return echo_comm_register_new(self ? MPI_COMM_NULL : local_comm, newintercomm, rc, 0);
}

int echo_MPI_Intercomm_create_from_groups(MPI_Group local_group, int local_leader, MPI_Group remote_group,
                                          int remote_leader, const char *stringtag, MPI_Info info,
                                          MPI_Errhandler errhandler, MPI_Comm *newintercomm) {
    int rc = ECHO_REP(PMPI_Intercomm_create_from_groups(local_group, local_leader, remote_group, remote_leader, stringtag,
                                                    info, errhandler, newintercomm));
    return with_errhandler(newintercomm, errhandler, echo_comm_register_new(MPI_COMM_NULL, newintercomm, rc, 0));
}

int echo_MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm) {
    echo_comm_t *c = echo_comm_get(intercomm, "MPI_Intercomm_merge");
    return echo_comm_register_new(intercomm, newintracomm, ECHO_REP(PMPI_Intercomm_merge(c->real, high, newintracomm)), 0);
}
