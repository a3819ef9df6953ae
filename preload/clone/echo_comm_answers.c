/* The calls that answer about communicators under cloning, so the application
 * sees its N ranks (the communicator table: echo_comm.c; creating
 * communicators: echo_comm_new.c).
 *
 * Naming (read by gen_wrappers.py): echo_MPI_X runs only when the job is
 * cloned, else the wrapper passes through. */
#include "echo_clone.h"

int echo_MPI_Comm_rank(MPI_Comm comm, int *rank) {
    echo_comm_t *c = echo_comm_find(comm);
    if (!c) return PMPI_Comm_rank(comm, rank); /* MPI_COMM_SELF and the like */
    *rank = c->rank;
    return MPI_SUCCESS;
}

int echo_MPI_Comm_size(MPI_Comm comm, int *size) {
    echo_comm_t *c = echo_comm_find(comm);
    if (!c) return PMPI_Comm_size(comm, size);
    *size = c->size;
    return MPI_SUCCESS;
}

int echo_MPI_Comm_group(MPI_Comm comm, MPI_Group *group) {
    echo_comm_t *c = echo_comm_find(comm);
    if (!c) return PMPI_Comm_group(comm, group);
    return echo_comm_group(c, group);
}

/* intercommunicator answers: a copy's stand-in is an intracommunicator */
int echo_MPI_Comm_test_inter(MPI_Comm comm, int *flag) {
    echo_comm_t *c = echo_comm_find(comm);
    if (!c) return PMPI_Comm_test_inter(comm, flag);
    *flag = c->inter;
    return MPI_SUCCESS;
}

int echo_MPI_Comm_remote_size(MPI_Comm comm, int *size) {
    echo_comm_t *c = echo_comm_find(comm);
    if (!c || !c->inter) return PMPI_Comm_remote_size(comm, size); /* MPI reports the misuse */
    *size = c->remote_size;
    return MPI_SUCCESS;
}

int echo_MPI_Comm_remote_group(MPI_Comm comm, MPI_Group *group) {
    echo_comm_t *c = echo_comm_find(comm);
    if (!c || !c->inter) return PMPI_Comm_remote_group(comm, group);
    return echo_comm_remote_group(c, group);
}

int echo_MPI_Comm_free(MPI_Comm *comm) {
    echo_comm_t *c = echo_comm_find(*comm);
    if (*comm == MPI_COMM_WORLD || !c) return PMPI_Comm_free(comm); /* MPI reports the misuse */
    /* forgotten once freed: the application's attribute delete callbacks, run in the free, may still use it */
    MPI_Comm handle = *comm;
    int rc = PMPI_Comm_free(comm);
    echo_comm_remove(handle);
    return rc;
}

int echo_MPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler) {
    int rc = PMPI_Comm_set_errhandler(comm, errhandler);
    /* MPI_COMM_WORLD's handler must govern the representatives' world too; in
     * Reinit mode the world must keep returning errors, or a failure could not
     * be repaired (the application's errors are then returned, not raised) */
    if (rc == MPI_SUCCESS && comm == MPI_COMM_WORLD && echo.reps_world != MPI_COMM_NULL && !echo.reinit)
        rc = PMPI_Comm_set_errhandler(echo.reps_world, errhandler);
    return rc;
}

int echo_MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result) {
    echo_comm_t *a = echo_comm_find(comm1), *b = echo_comm_find(comm2);
    if (!a || !b) return PMPI_Comm_compare(comm1, comm2, result); /* e.g. MPI_COMM_SELF */
    /* copies take their representative's answer: their stand-ins are not comparable */
    int rc = echo_is_rep() ? PMPI_Comm_compare(a->real, b->real, result) : MPI_SUCCESS;
    return echo_forward(result, 1, MPI_INT, rc);
}

