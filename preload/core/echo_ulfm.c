/* Open MPI's ULFM extensions (mpi-ext.h: MPIX_Comm_revoke, shrink, agree...).
 * They are not in mpi.h, so no wrapper is generated for them: these are.  With
 * clones they cannot be replicated as they are (a copy is no member of the
 * real communicator its representative would revoke or shrink; echo's own
 * fault-tolerant modes use them underneath): the job stops naming the call.
 * In Reinit mode (one process per rank) they act on the real communicator.
 * What each mode does is its echo_mode_t's owns_comm and real_comm. */
#include "echo_internal.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdbool.h>

/* Reinit (SDR keeps the default: below): between hosts MPI talks over TCP, and a write to the socket of a peer
 * that just died raises SIGPIPE, whose default action ends this survivor before ULFM can report the failure (seen:
 * a Reinit rank on the surviving simulated host killed by SIGPIPE when every process of the other host was
 * killed). Ignored, the write fails with EPIPE and the failure reaches the mode's recovery. A handler of the
 * program's own is kept. (Python ignores SIGPIPE already.) SDR does not call it: its survivors across simulated
 * hosts pass with the default (their SIGSEGV once blamed on ignoring it was a split over dead members: see below). */
void echo_ft_survive_sigpipe(void) {
    struct sigaction pipe_action;
    if (sigaction(SIGPIPE, NULL, &pipe_action) == 0 && pipe_action.sa_handler == SIG_DFL) signal(SIGPIPE, SIG_IGN);
}

/* Whether this process knows that a member of comm is dead (it acknowledges nothing).  The FT modes ask it, and
 * agree on the answer, before they create a communicator: Open MPI 5.0 gives a new communicator its context id by
 * a nonblocking allreduce over the parent, which fails where a member is dead ("NBC_Progress: an error 75 was
 * found during schedule"). */
int echo_ft_knows_dead(MPI_Comm comm) {
    MPI_Group failed;
    int n = 0;
    if (PMPIX_Comm_get_failed(comm, &failed) != MPI_SUCCESS) return 0;
    PMPI_Group_size(failed, &n);
    if (failed != MPI_GROUP_EMPTY) PMPI_Group_free(&failed);
    return n > 0;
}

/* The live processes of comm agree whether none of them knows a dead member (*none_dead); an agreement also finds
 * a death nobody noticed yet, and its flag and its error are the same everywhere, so all act alike.  Returns the
 * agreement's code. */
int echo_ft_agree_none_dead(MPI_Comm comm, int *none_dead) {
    *none_dead = !echo_ft_knows_dead(comm);
    return PMPIX_Comm_agree(comm, none_dead);
}

/* ---- communicators the FT modes create while processes may die ----
 * Open MPI from 5.0.10 (and its main branch, Nov 2026) has a bug there: when this process first learns of a
 * failure, it revokes the collectives of every registered communicator holding the dead process
 * (ompi_comm_set_rank_failed -> ompi_comm_revoke_local), and that includes the communicator MPI_Comm_split, dup or
 * shrink is building: registered once its context id is chosen, it has no collectives yet while its activation
 * waits on the parent, and revoke_local calls through its NULL collectives table: SIGSEGV (seen in SDR when a
 * host's replicas died during a split; Fenix reported the same trace).  While echo builds one (these three calls),
 * the local revocation of any communicator but the parent, MPI_COMM_WORLD and MPI_COMM_SELF is skipped: the one
 * being built is among the skipped, and the failure still fails the build (its wait on the parent ends with
 * MPI_ERR_PROC_FAILED), after which the FT modes agree on the outcome and build again from the survivors.  Other
 * communicators echo holds lose only the early end of collectives they are not running meanwhile.  Open MPI
 * 5.0.9 and older keep revoke_local to themselves (static), so this definition is never called there. */
static volatile MPI_Comm building = MPI_COMM_NULL;
/* the same while a nonblocking dup is in flight (echo_ft_idup, until echo_ft_idup_done; SDR's MPI_Comm_idup): their
 * parents keep their revocation */
enum { IBUILDS = 64 };
static MPI_Comm ibuilding[IBUILDS];
static volatile int nibuilding;

static inline int ibuilding_from(MPI_Comm comm) {
    for (int i = 0; i < nibuilding; i++)
        if (ibuilding[i] == comm) return 1;
    return 0;
}

#if ECHO_HAS_ULFM && defined(OMPI_MAJOR_VERSION) && \
    (OMPI_MAJOR_VERSION > 5 || (OMPI_MAJOR_VERSION == 5 && (OMPI_MINOR_VERSION > 0 || OMPI_RELEASE_VERSION >= 10)))
ECHO_PUBLIC bool ompi_comm_revoke_local(MPI_Comm comm, bool coll_only) {
    static bool (*real)(MPI_Comm, bool);
    if (!real) real = (bool (*)(MPI_Comm, bool))dlsym(RTLD_NEXT, "ompi_comm_revoke_local");
    MPI_Comm parent = building;
    if ((parent != MPI_COMM_NULL || nibuilding > 0) && comm != parent && !ibuilding_from(comm) && comm != MPI_COMM_WORLD &&
        comm != MPI_COMM_SELF)
        return false;
    return real ? real(comm, coll_only) : false;
}
#endif

int echo_ft_split(MPI_Comm parent, int color, int key, MPI_Comm *out) {
    building = parent;
    int rc = PMPI_Comm_split(parent, color, key, out);
    building = MPI_COMM_NULL;
    return rc;
}

int echo_ft_dup(MPI_Comm parent, MPI_Comm *out) {
    building = parent;
    int rc = PMPI_Comm_dup(parent, out);
    building = MPI_COMM_NULL;
    return rc;
}

int echo_ft_idup(MPI_Comm parent, MPI_Comm *out, MPI_Request *req) {
    if (nibuilding == IBUILDS) echo_fatal("echo: more than 64 nonblocking communicator dups in flight");
    ibuilding[nibuilding] = parent;
    nibuilding++;
    int rc = PMPI_Comm_idup(parent, out, req);
    if (rc != MPI_SUCCESS) echo_ft_idup_done(parent);
    return rc;
}

void echo_ft_idup_done(MPI_Comm parent) {
    for (int i = 0; i < nibuilding; i++)
        if (ibuilding[i] == parent) {
            ibuilding[i] = ibuilding[nibuilding - 1];
            nibuilding--;
            return;
        }
}

int echo_ft_shrink(MPI_Comm parent, MPI_Comm *out) {
    building = parent;
    int rc = PMPIX_Comm_shrink(parent, out);
    building = MPI_COMM_NULL;
    return rc;
}

#if ECHO_HAS_ULFM /* elsewhere the application's MPIX_ calls (MPICH's partial ULFM) go to its MPI as they are */

/* echo's own calls, and the application's before MPI_Init, act on the communicator they name */
static MPI_Comm real_of(MPI_Comm comm, const char *fn) {
    if (!echo.active || echo_depth) return comm;
    if (echo_mode->owns_comm && echo_mode->owns_comm(comm)) echo_unsupported(fn);
    return echo_mode->real_comm ? echo_mode->real_comm(comm) : comm;
}

ECHO_PUBLIC int MPIX_Comm_revoke(MPI_Comm comm) { return PMPIX_Comm_revoke(real_of(comm, "MPIX_Comm_revoke")); }

ECHO_PUBLIC int MPIX_Comm_is_revoked(MPI_Comm comm, int *flag) {
    return PMPIX_Comm_is_revoked(real_of(comm, "MPIX_Comm_is_revoked"), flag);
}

ECHO_PUBLIC int MPIX_Comm_shrink(MPI_Comm comm, MPI_Comm *newcomm) {
    return PMPIX_Comm_shrink(real_of(comm, "MPIX_Comm_shrink"), newcomm);
}

ECHO_PUBLIC int MPIX_Comm_failure_ack(MPI_Comm comm) { return PMPIX_Comm_failure_ack(real_of(comm, "MPIX_Comm_failure_ack")); }

ECHO_PUBLIC int MPIX_Comm_failure_get_acked(MPI_Comm comm, MPI_Group *failedgrp) {
    return PMPIX_Comm_failure_get_acked(real_of(comm, "MPIX_Comm_failure_get_acked"), failedgrp);
}

ECHO_PUBLIC int MPIX_Comm_get_failed(MPI_Comm comm, MPI_Group *failedgroup) {
    return PMPIX_Comm_get_failed(real_of(comm, "MPIX_Comm_get_failed"), failedgroup);
}

ECHO_PUBLIC int MPIX_Comm_ack_failed(MPI_Comm comm, int num_to_ack, int *num_acked) {
    return PMPIX_Comm_ack_failed(real_of(comm, "MPIX_Comm_ack_failed"), num_to_ack, num_acked);
}

ECHO_PUBLIC int MPIX_Comm_agree(MPI_Comm comm, int *flag) { return PMPIX_Comm_agree(real_of(comm, "MPIX_Comm_agree"), flag); }

ECHO_PUBLIC int MPIX_Comm_iagree(MPI_Comm comm, int *flag, MPI_Request *request) {
    return PMPIX_Comm_iagree(real_of(comm, "MPIX_Comm_iagree"), flag, request);
}

#endif
