/* SDR mode: intercommunicators.
 *
 * An intercommunicator is held as a communicator of both groups (the members:
 * the group whose leader has the lower rank in MPI_COMM_WORLD first, so both
 * sides number them alike), with the application's view on top: its rank and
 * size in its own group, and remote rank r as member remote0 + r
 * (sdr_peer_in/out).  Point-to-point on it is then the replicated layer's, acks
 * and kept copies included.  Two hidden intracommunicators go with it: the local
 * group's (a dup of the local communicator) and both groups' (the same members,
 * channels of its own); the intercommunicator's collectives are their
 * collectives and leaders' messages (echo_sdr_coll.c), and MPI_Intercomm_merge
 * is a split of the second.
 *
 * Creation: the two groups learn each other's members through their leaders'
 * messages on the peer communicator (the replicated layer: a replica's death
 * there is one like any other); then the real communicator of every live replica
 * of both groups is made (real_union) and the channels are split from it as for
 * any communicator (echo_sdr_comm.c).  The real creation is tried again until
 * both groups succeeded: each group agrees on its own outcome (ULFM's agreement)
 * and the leaders tell each other on the
 * replicated layer, so both groups take the same decision. */
#include "echo_sdr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int refuse(const char *call, const char *why) {
    char what[160];
    snprintf(what, sizeof what, "%s %s", call, why);
    echo_unsupported(what);
    return MPI_ERR_OTHER;
}

/* the leaders of the two groups swap `n` ints (the same count on both sides) on the peer communicator, and each
 * leader gives its group what it got */
static int leaders_swap(sdr_comm_t *l, int leader, MPI_Comm peer, int remote_leader, int tag, const int *mine,
                        int *theirs, int n) {
    int rc = MPI_SUCCESS;
    if (l->rank == leader)
        rc = echo_sdr_MPI_Sendrecv(mine, n, MPI_INT, remote_leader, tag, theirs, n, MPI_INT, remote_leader, tag, peer,
                                   MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return rc;
    return echo_sdr_MPI_Bcast(theirs, n, MPI_INT, leader, l->app);
}

/* whether both groups succeeded: each group agrees (ULFM) on its own outcome, the leaders swap theirs */
static int both_ok(sdr_comm_t *l, MPI_Comm base, int ok, int leader, MPI_Comm peer, int remote_leader, int tag) {
    if (PMPIX_Comm_agree(base, &ok) != MPI_SUCCESS) ok = 0;
    int theirs = 0;
    if (leaders_swap(l, leader, peer, remote_leader, tag, &ok, &theirs, 1) != MPI_SUCCESS) return 0;
    return ok && theirs;
}

/* The real communicator of every live replica of both groups, low group first.  Each group agrees on its live
 * processes (shrunk if one is known dead), the leaders swap the lists on the replicated layer, and every one of
 * them makes it with MPI_Comm_create_group over the world's communicator, which only they take part in.  (Not
 * MPI_Intercomm_create with the world as its bridge: Open MPI under ULFM fails it at the processes that know of a
 * dead process of the bridge and the others wait for them for ever, seen when a leader's replica died just
 * before.) */
static MPI_Comm real_union(sdr_comm_t *l, int leader, MPI_Comm peer, int remote_leader, int tag, int low, int id) {
    sdr_idup_settle(l); /* l's dups being made use its build communicator first */
    for (int attempt = 0;; attempt++) {
        if (attempt > 100) echo_fatal("SDR: could not create an intercommunicator after 100 process failures");
        /* no creation over a group with a dead member (echo_ft_knows_dead): shrink it first, the same everywhere */
        MPI_Comm base = l->build, shrunk = MPI_COMM_NULL;
        int none_dead = !echo_ft_knows_dead(base);
        if (sdr_meet(base, &none_dead) != MPI_SUCCESS || !none_dead) {
            if (echo_ft_shrink(l->build, &shrunk) != MPI_SUCCESS) continue;
            PMPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);
            base = shrunk;
        }
        int n = 0, rn = 0;
        PMPI_Comm_size(base, &n);
        int *ranks = malloc(sizeof(int) * (size_t)(sdr.n * sdr.R)); /* the low group's processes, then the high's */
        int ok = PMPI_Allgather(&echo.real_rank, 1, MPI_INT, ranks + (low ? 0 : sdr.n * sdr.R - n), 1, MPI_INT,
                                base) == MPI_SUCCESS;
        int *mine = ranks + (low ? 0 : sdr.n * sdr.R - n);
        if (leaders_swap(l, leader, peer, remote_leader, tag, &n, &rn, 1) != MPI_SUCCESS) ok = 0;
        MPI_Comm merged = MPI_COMM_NULL;
        if (ok && rn > 0 && n + rn <= sdr.n * sdr.R) {
            int *theirs = low ? ranks + n : ranks + sdr.n * sdr.R - n - rn;
            int rc = MPI_SUCCESS;
            if (l->rank == leader)
                rc = echo_sdr_MPI_Sendrecv(mine, n, MPI_INT, remote_leader, tag, theirs, rn, MPI_INT, remote_leader,
                                           tag, peer, MPI_STATUS_IGNORE);
            if (rc == MPI_SUCCESS) rc = echo_sdr_MPI_Bcast(theirs, rn, MPI_INT, leader, l->app);
            MPI_Group world, group;
            PMPI_Comm_group(sdr.world, &world);
            PMPI_Group_incl(world, n + rn, low ? ranks : theirs, &group);
            /* a process of the group known dead by now: not made, tried again without it (a death inside Open MPI's
             * MPI_Comm_create_from_group ends the survivors with SIGSEGV: docs/sdr.md) */
            sdr_learn_failures();
            for (int i = 0; i < n + rn; i++)
                if (sdr.dead[(low ? ranks : theirs)[i]]) rc = MPI_ERR_OTHER;
            char name[64];
            snprintf(name, sizeof name, "echo-sdr-inter-%d-%d", id, attempt);
            ok = rc == MPI_SUCCESS &&
                 PMPI_Comm_create_from_group(group, name, MPI_INFO_NULL, MPI_ERRORS_RETURN, &merged) == MPI_SUCCESS;
            PMPI_Group_free(&group);
            PMPI_Group_free(&world);
        } else
            ok = 0;
        free(ranks);
        if (!ok) merged = MPI_COMM_NULL;
        if (getenv("ECHO_SDR_DEBUG"))
            fprintf(stderr, "[sdr %d] intercommunicator try %d: %d and %d processes: %s\n", echo.real_rank, attempt,
                    n, rn, ok ? "made" : "failed");
        if (both_ok(l, base, ok, leader, peer, remote_leader, tag)) {
            if (shrunk != MPI_COMM_NULL) PMPI_Comm_free(&shrunk);
            PMPI_Comm_set_errhandler(merged, MPI_ERRORS_RETURN);
            return merged;
        }
        if (merged != MPI_COMM_NULL) PMPI_Comm_free(&merged);
        if (shrunk != MPI_COMM_NULL) PMPI_Comm_free(&shrunk);
        sdr_learn_failures();
    }
}

int echo_sdr_MPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm, int remote_leader,
                                  int tag, MPI_Comm *newintercomm) {
    sdr_comm_t *l = sdr_comm_of(local_comm), *p = sdr_comm_of(peer_comm);
    /* each replica's MPI_COMM_SELF is its own: no replicated group to build on */
    if (!l) return refuse("MPI_Intercomm_create", "over MPI_COMM_SELF (a communicator SDR does not replicate)");
    if (l->inter) return refuse("MPI_Intercomm_create", "over an intercommunicator");
    if (local_leader < 0 || local_leader >= l->size) return MPI_ERR_RANK;
    if (l->rank == local_leader && (!p || remote_leader < 0 || remote_leader >= (p->inter ? p->rsize : p->size)))
        return p ? MPI_ERR_RANK : refuse("MPI_Intercomm_create", "with MPI_COMM_SELF as its peer communicator");
    /* ids: the largest any member of either group would give, the same everywhere */
    int id = sdr_comm_next_id(), rc;
    if ((rc = echo_sdr_MPI_Allreduce(MPI_IN_PLACE, &id, 1, MPI_INT, MPI_MAX, local_comm)) != MPI_SUCCESS) return rc;
    int mine[3] = {id, l->size, l->members[local_leader]}, theirs[3];
    if ((rc = leaders_swap(l, local_leader, peer_comm, remote_leader, tag, mine, theirs, 3)) != MPI_SUCCESS) return rc;
    if (theirs[0] > id) id = theirs[0];
    sdr_comm_ids_used(id + 1); /* the intercommunicator's and its hidden communicator of both groups' */
    int rsize = theirs[1], low = l->members[local_leader] < theirs[2];
    int *remote = malloc(sizeof(int) * (size_t)rsize), *members = malloc(sizeof(int) * (size_t)(l->size + rsize));
    /* the leaders swap their groups' members (counts differ: each sends to the other what it has) */
    rc = MPI_SUCCESS;
    if (l->rank == local_leader)
        rc = echo_sdr_MPI_Sendrecv(l->members, l->size, MPI_INT, remote_leader, tag, remote, rsize, MPI_INT,
                                   remote_leader, tag, peer_comm, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS) rc = echo_sdr_MPI_Bcast(remote, rsize, MPI_INT, local_leader, local_comm);
    if (rc != MPI_SUCCESS) {
        free(remote), free(members);
        return rc;
    }
    int local0 = low ? 0 : rsize, remote0 = low ? l->size : 0;
    memcpy(members + local0, l->members, sizeof(int) * (size_t)l->size);
    memcpy(members + remote0, remote, sizeof(int) * (size_t)rsize);
    free(remote);
    MPI_Comm local_dup;
    if ((rc = sdr_comm_create(l, 0, l->rank, &local_dup, 0)) != MPI_SUCCESS) {
        free(members);
        return rc;
    }
    MPI_Comm all = real_union(l, local_leader, peer_comm, remote_leader, tag, low, id);
    int size = l->size + rsize, rank = local0 + l->rank;
    sdr_comm_t *c = sdr_comm_from_real(&all, size, members, rank, id, local_comm);
    c->inter = 1, c->remote0 = remote0, c->lrank = l->rank, c->lsize = l->size, c->rsize = rsize;
    c->local = sdr_comm_of(local_dup);
    c->all = sdr_comm_from_real(&all, size, members, rank, id + 1, local_comm);
    PMPI_Comm_free(&all);
    free(members);
    *newintercomm = c->app;
    return MPI_SUCCESS;
}

/* both groups in one: the group that passed high = 0 first (the low leader's group first when both passed the
 * same), each in its own order */
int echo_sdr_MPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm) {
    sdr_comm_t *c = sdr_comm_of(intercomm);
    if (!c->inter) return MPI_ERR_COMM;
    return sdr_comm_create(c->all, 0, (high ? c->size : 0) + c->rank, newintracomm, 0);
}

#if ECHO_DECLARES(MPI_Intercomm_create_from_groups)
/* Groups of the world's processes name this replica's processes only, with no replicated communicator to build
 * on (as a session's communicators: echo_sdr_comm.c): refused, naming the call. */
int echo_sdr_MPI_Intercomm_create_from_groups(MPI_Group local_group, int local_leader, MPI_Group remote_group,
                                              int remote_leader, const char *stringtag, MPI_Info info,
                                              MPI_Errhandler errhandler, MPI_Comm *newintercomm) {
    (void)local_group, (void)local_leader, (void)remote_group, (void)remote_leader, (void)stringtag, (void)info;
    (void)errhandler, (void)newintercomm;
    return refuse("MPI_Intercomm_create_from_groups", "(groups name one replica's processes)");
}
#endif
