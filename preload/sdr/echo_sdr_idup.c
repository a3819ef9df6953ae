/* SDR mode: MPI_Comm_idup and MPI_Comm_idup_with_info, made in the background.
 *
 * SDR makes a communicator from its parent's build communicator (echo_sdr_comm.c's split_real): every live replica
 * of every member takes part.  A nonblocking dup cannot wait there: MPI_Comm_idup returns before the other members
 * have called it (MPICH's comm/comm_idup: rank 0 receives from every other rank before its own call), and a program
 * may poll its request with MPI_Test while it waits for a message another member sends only after its own
 * completion.  So the dup is a state machine of nonblocking real steps, started at the call and advanced by SDR's
 * progress (every SDR call that waits, and every MPI_Test, turns it): the live processes agree whether any of them
 * knows a dead one (ULFM's MPIX_Comm_iagree), the three real communicators are MPI_Comm_idup'ed one after the
 * other, each process's place and next id are gathered (MPI_Iallgather) and the id made sure to be unused
 * (MPI_Iallreduce), and the outcome is agreed (MPIX_Comm_iagree).  After a failure the build communicator is shrunk
 * (ULFM has no nonblocking shrink: that one step blocks, until every live process has reached it, which each does
 * from its own progress) and the dup tried again; a process whose step failed revokes the build communicator first,
 * so that none waits for ever in a step the others have left (fail).  A completion call only looks at the state: MPI_Test returns false
 * until the dup is made; MPI_Wait turns the progress until it is.
 *
 * A parent's dups run one after the other, in the order each process asked for them (MPI orders a communicator's
 * collective calls alike on every member), and every other creation from that parent, or its free, first lets them
 * finish (sdr_idup_settle): the build communicator's collectives run in one order everywhere. */
#include "echo_sdr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { AGREE_DEAD, DUP, GATHER, CHECK, AGREE_OK, MADE };

typedef struct idup {
    sdr_comm_t *p, *c;
    MPI_Comm app;              /* the application's handle: freed at completion if the attribute copy failed */
    int rc;                    /* the attribute copy's code: the request's */
    int started, unstarted, step, ndup, ok, flag, attempt, nreal, id, conflict;
    int *buf; /* each one's place and next id (2 per process), the check's 2 and its result's 2, this one's 2 */
    MPI_Request req;
    MPI_Comm base, shrunk, out[3];
    struct idup *next;
} idup_t;
static idup_t *idups; /* not made yet, oldest first */
/* Their ids are negative, -1 down, apart from the other creations' (positive, chosen while they block): each process
 * offers the next one it has not given, the largest offer is taken, and since a process may give ids meanwhile (a
 * dup of another parent in the background), all check that none of them had given it, and choose again if one
 * had.  The ids of the other creations are chosen at once and never meet these. */
static int next_id = 1;

static void errors_return(MPI_Comm comm) { PMPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN); }

/* the current real step's request: 1 once it is complete (*rc its code).  Open MPI reports a failed
 * MPI_Comm_idup's request (a process died during it: MPI_ERR_INTERN) through MPI_COMM_WORLD's error handler, fatal
 * by default: it returns here, and the try fails as any other does */
static int step_done(idup_t *d, int *rc) {
    int done = 0, revoked = 0;
    MPI_Errhandler eh;
    PMPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    *rc = PMPI_Test(&d->req, &done, MPI_STATUS_IGNORE);
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);
    PMPI_Errhandler_free(&eh);
    if (done || *rc != MPI_SUCCESS) return 1;
    /* another process's step failed and it revoked the base (fail): a step over the new communicators may wait for
     * it for ever, so it is left (its request with it) and the try fails here too.  The agreements are on the base,
     * which ULFM lets agree revoked.  Only the gather and the check are left so: a dup over the revoked base ends */
    if ((d->step == GATHER || d->step == CHECK) && PMPIX_Comm_is_revoked(d->base, &revoked) == MPI_SUCCESS &&
        revoked) {
        d->req = MPI_REQUEST_NULL;
        d->buf = NULL; /* the step left may still write there: kept */
        *rc = MPIX_ERR_REVOKED; /* MPI_ERR_REVOKED is in Open MPI 5's headers only; compat/fallback.h gives MPIX_ERR_REVOKED on every MPI */
        return 1;
    }
    return 0;
}

/* A step failed here (a process died during it): Open MPI may have ended it midway, so peers that wait on this
 * process in the same step would wait for ever (seen: survivors' MPI_Iallgather on the new communicator never
 * completing after a death during the dup).  Revoking the base tells them all (ULFM's recipe); the new
 * communicators are never revoked (one may still be being built elsewhere: echo_ulfm.c says why that is unsafe). */
static void fail(idup_t *d) {
    d->ok = 0;
    PMPIX_Comm_revoke(d->base);
}

static void agree_ok(idup_t *d) {
    d->flag = d->ok;
    d->step = AGREE_OK;
    if (PMPIX_Comm_iagree(d->base, &d->flag, &d->req) != MPI_SUCCESS) d->unstarted = 1, d->flag = 0;
}

/* each of the three from the base (whose revocation ends them: fail) */
static void dup_next(idup_t *d) {
    d->step = DUP;
    if (echo_ft_idup(d->base, &d->out[d->ndup], &d->req) != MPI_SUCCESS) {
        d->out[d->ndup] = MPI_COMM_NULL, d->ok = 0;
        agree_ok(d);
    }
}

/* a try from the build communicator (shrunk after a failure, the dead left out) */
static void try_dup(idup_t *d) {
    if (d->attempt > 0) {
        if (d->attempt > 100) echo_fatal("SDR: could not duplicate a communicator after 100 process failures");
        while (echo_ft_shrink(d->p->build, &d->shrunk) != MPI_SUCCESS) sdr_learn_failures();
        d->base = d->shrunk;
        errors_return(d->base);
    }
    d->out[0] = d->out[1] = d->out[2] = MPI_COMM_NULL;
    d->ok = 1, d->ndup = 0;
    dup_next(d);
}

static void check_id(idup_t *d) {
    int *check = d->buf + 2 * d->nreal;
    check[0] = d->conflict, check[1] = next_id;
    d->step = CHECK;
    if (PMPI_Iallreduce(check, check + 2, 2, MPI_INT, MPI_MAX, d->out[0], &d->req) != MPI_SUCCESS) {
        d->ok = 0;
        agree_ok(d);
    }
}

/* the candidate id: the ids this process gave while it was being chosen are at least its own offer, so one below
 * its next id now may be taken (then all choose again); from now on it gives none up to it */
static void candidate(idup_t *d, int id) {
    d->id = id;
    d->conflict = id < next_id;
    if (next_id <= id) next_id = id + 1;
}

static void failed_try(idup_t *d, int rc) {
    if (getenv("ECHO_SDR_DEBUG"))
        fprintf(stderr, "[sdr %d] idup try %d failed (%d, agreed %d)\n", echo.real_rank, d->attempt, rc, d->flag);
    int n;
    PMPIX_Comm_ack_failed(d->base, sdr.n * sdr.R, &n);
    sdr_learn_failures();
    if (d->shrunk != MPI_COMM_NULL) PMPI_Comm_free(&d->shrunk);
    for (int i = 0; i < 3; i++)
        if (d->out[i] != MPI_COMM_NULL) PMPI_Comm_free(&d->out[i]);
    free(d->buf);
    d->buf = NULL;
    d->attempt++;
    try_dup(d);
}

static void made(idup_t *d) {
    if (d->shrunk != MPI_COMM_NULL) { /* the old one may be out of order now (split_real says why) */
        PMPI_Comm_free(&d->p->build);
        d->p->build = d->shrunk;
    }
    int *table = malloc(sizeof(int) * (size_t)d->nreal);
    for (int x = 0; x < d->nreal; x++) table[x] = d->buf[2 * x];
    free(d->buf);
    d->buf = NULL;
    d->c->id = -d->id;
    sdr_comm_fill_real(d->c, d->out, table, d->nreal);
    d->c->cart = sdr_cart_copy(d->p->cart);
    sdr_comm_add(d->c);
    d->step = MADE;
}

static void start(idup_t *d) {
    d->started = 1;
    d->base = d->p->build;
    d->shrunk = MPI_COMM_NULL;
    d->flag = !echo_ft_knows_dead(d->base); /* no dup over a parent with a dead member (echo_ft_knows_dead) */
    d->step = AGREE_DEAD;
    if (PMPIX_Comm_iagree(d->base, &d->flag, &d->req) != MPI_SUCCESS) d->unstarted = 1, d->flag = 0;
}

/* one turn: the steps that are complete end and the next ones start */
static void advance(idup_t *d) {
    int rc;
    while (d->step != MADE && (d->unstarted || step_done(d, &rc))) {
        if (d->unstarted) rc = MPI_ERR_OTHER; /* a step that could not start */
        d->unstarted = 0;
        d->req = MPI_REQUEST_NULL;
        switch (d->step) {
        case AGREE_DEAD:
            if (rc != MPI_SUCCESS || !d->flag) {
                int n;
                PMPIX_Comm_ack_failed(d->base, sdr.n * sdr.R, &n);
                sdr_learn_failures();
                d->attempt = 1;
            }
            try_dup(d);
            break;
        case DUP:
            echo_ft_idup_done(d->base);
            if (rc != MPI_SUCCESS && getenv("ECHO_SDR_DEBUG"))
                fprintf(stderr, "[sdr %d] idup %d failed (%d)\n", echo.real_rank, d->ndup, rc);
            if (rc != MPI_SUCCESS) {
                d->out[d->ndup] = MPI_COMM_NULL;
                fail(d);
                agree_ok(d);
            } else if (++d->ndup < 3) dup_next(d);
            else { /* each one's place and next id */
                PMPI_Comm_size(d->out[0], &d->nreal);
                d->buf = malloc(sizeof(int) * (2 * (size_t)d->nreal + 6));
                int *mine = d->buf + 2 * d->nreal + 4;
                mine[0] = d->p->rank * sdr.R + sdr.k, mine[1] = next_id;
                d->step = GATHER;
                if (PMPI_Iallgather(mine, 2, MPI_INT, d->buf, 2, MPI_INT, d->out[0], &d->req) != MPI_SUCCESS)
                    fail(d), agree_ok(d);
            }
            break;
        case GATHER:
            if (rc != MPI_SUCCESS) {
                fail(d);
                agree_ok(d);
                break;
            }
            {
                int id = 0;
                for (int x = 0; x < d->nreal; x++)
                    if (d->buf[2 * x + 1] > id) id = d->buf[2 * x + 1];
                candidate(d, id);
            }
            check_id(d);
            break;
        case CHECK:
            if (rc != MPI_SUCCESS) {
                fail(d);
                agree_ok(d);
            } else if (d->buf[2 * d->nreal + 2]) { /* one may have given it meanwhile: the largest next id, again */
                candidate(d, d->buf[2 * d->nreal + 3]);
                check_id(d);
            } else agree_ok(d);
            break;
        case AGREE_OK:
            if (rc == MPI_SUCCESS && d->flag) made(d);
            else failed_try(d, rc);
            break;
        }
    }
}

/* the first dup of each parent not made yet takes a turn */
void sdr_idup_progress(void) {
    for (idup_t *d = idups; d; d = d->next) {
        int first = 1;
        for (idup_t *e = idups; e != d && first; e = e->next)
            if (e->p == d->p && e->step != MADE) first = 0;
        if (!first || d->step == MADE) continue;
        if (!d->started) start(d);
        else advance(d);
    }
}

void sdr_idup_settle(sdr_comm_t *p) {
    for (;;) {
        idup_t *d = idups;
        while (d && (d->p != p || d->step == MADE)) d = d->next;
        if (!d) return;
        int spins = 0;
        sdr_spin(&spins);
    }
}

static int idup_made(void *arg) {
    idup_t *d = arg;
    sdr_progress();
    return d->step == MADE;
}

static int idup_finish(void *arg) {
    idup_t *d = arg;
    for (idup_t **at = &idups; *at; at = &(*at)->next)
        if (*at == d) {
            *at = d->next;
            break;
        }
    int rc = d->rc;
    if (rc != MPI_SUCCESS) echo_sdr_MPI_Comm_free(&d->app); /* an attribute's copy callback failed: so does the dup */
    free(d);
    return rc;
}

int echo_sdr_MPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request) {
    sdr_comm_t *p = sdr_comm_of(comm);
    if (!p) return PMPI_Comm_idup(comm, newcomm, request); /* MPI_COMM_SELF's: each replica's own */
    if (p->inter) echo_unsupported("MPI_Comm_idup of an intercommunicator");
    idup_t *d = calloc(1, sizeof *d);
    d->p = p;
    d->c = sdr_comm_copy_of(p, comm);
    d->app = d->c->app;
    d->rc = echo_comm_copy_attributes(comm, d->app);
    d->req = MPI_REQUEST_NULL;
    d->step = AGREE_DEAD;
    idup_t **at = &idups;
    while (*at) at = &(*at)->next;
    *at = d;
    *newcomm = d->app;
    *request = sdr_request_of_poll(idup_made, idup_finish, d);
    sdr_progress(); /* its first step starts now if its parent has no other dup running */
    return MPI_SUCCESS;
}

int echo_sdr_MPI_Comm_idup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm, MPI_Request *request) {
    int rc = echo_sdr_MPI_Comm_idup(comm, newcomm, request);
    if (rc == MPI_SUCCESS && info != MPI_INFO_NULL) PMPI_Comm_set_info(*newcomm, info);
    return rc;
}
