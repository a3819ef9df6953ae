/* SDR mode: send-deterministic replication (SDR-MPI) on ULFM.  docs/sdr.md.
 *
 * Every application rank runs as R replicas; replica k of rank a is real rank
 * k*N + a of the job.  Replica k of every rank forms world k: without failures
 * replica k sends only to replica k of its destination.  A receiver acks each
 * application message to the other live replicas of its sender, and a send
 * completes only when those acks are in, so a replica can always send again
 * what a dead sibling had sent but not yet seen received.  When replica k of
 * rank p dies, each replica k of another rank takes its messages from p's
 * lowest live replica (the substitute) and tells it so (a flush on the ack
 * channel, after its acks): the substitute re-sends what was not acked and
 * from then on sends to that process too.  Collectives and communicator
 * creation run on this point-to-point layer, so they survive a death too.
 *
 * Layers: echo_sdr_core.c (failures, acks, sends and receives, progress),
 * echo_sdr_p2p.c (the application's point-to-point calls and requests),
 * echo_sdr_sched.c + echo_sdr_coll.c (collectives as schedules of sends,
 * receives and local steps), echo_sdr_comm.c (communicators), echo_sdr_win.c (one-sided fence, PSCW and passive-target
 * epochs, as messages of this layer). */
#ifndef ECHO_SDR_H
#define ECHO_SDR_H

#include "echo_internal.h"

/* SDR_MAX_REPLICAS: in echo_constants.h (generated from echo/runformat/constants.py) */
/* the generated wrappers' SDR-mode calls of functions with written semantics (`echo_sdr_MPI_X`) */
enum { SDR_DATA = 0, SDR_COLL = 1 }; /* a communicator's two channels: application p2p, collectives */

typedef struct sdr_comm {
    MPI_Comm app;           /* the handle the application holds (MPI_COMM_WORLD or a stand-in) */
    MPI_Comm chan[2];       /* real communicators of every replica of every member, ranked member*R+replica */
    MPI_Comm build;         /* the same processes, carrying no message: the parent of the communicators made from
                             * this one (echo_sdr_comm.c's split_real says why) */
    int id;                 /* the same on every member and replica: acks name their communicator by it */
    int rank, size;         /* as the application sees them */
    int *members;           /* member i -> application rank in MPI_COMM_WORLD */
    int *index_of;          /* application rank -> member index, -1 if not a member */
    int *real;              /* real[i*R + k]: rank in chan[] of replica k of member i, -1 if it was dead */
    int *who;               /* rank in chan[] -> i*R + k */
    int *sender;            /* sender[i]: the replica of member i this process receives from */
    int *cart;              /* a Cartesian topology (echo_sdr_topo.c): ndims, dims[ndims], periods[ndims]; or NULL */
    int coll_seq;           /* collectives started: the tag of the next one */
    int freed;              /* the application freed it: it goes once its last send is acked */
    /* an intercommunicator (echo_sdr_inter.c): its members are both groups, the group whose leader has the lower
     * rank in MPI_COMM_WORLD first, so every process numbers them alike; rank and size above are in that union,
     * the application sees lrank and lsize, and remote rank r is member remote0 + r */
    int inter, remote0, lrank, lsize, rsize;
    struct sdr_comm *local, *all; /* its hidden intracommunicators: the local group's, both groups' */
    struct sdr_comm *next;
} sdr_comm_t;

typedef struct sdr_state {
    int n, R, k;            /* application ranks, replicas, this process's replica */
    MPI_Comm world;         /* the real MPI_COMM_WORLD's dup (errors return): failure knowledge */
    MPI_Comm acks;          /* acks and flushes */
    unsigned char *dead;    /* per real rank */
    unsigned char *out;     /* per real rank: excluded as slow (alive, but nobody takes its messages) */
    unsigned char *feeds;   /* per real rank: it takes our rank's messages from this process (at first: our
                             * own world; then also other worlds whose replica of our rank died or is out) */
    int *from;              /* per application rank: the replica this process takes its messages from */
    int self_acks;          /* receivers ack the sender itself too (with exclusion: a replica taken back learns
                             * exactly which of its messages its world still needs from it) */
} sdr_state_t;
extern sdr_state_t sdr;

static inline int sdr_real_rank(int app, int replica) { return replica * sdr.n + app; }
/* a peer as the application names it (a remote rank on an intercommunicator) -> a member, and back; MPI_ANY_SOURCE
 * and MPI_PROC_NULL are negative and stay */
static inline int sdr_peer_in(const struct sdr_comm *c, int peer) {
    return c->inter && peer >= 0 ? c->remote0 + peer : peer;
}
static inline int sdr_peer_out(const struct sdr_comm *c, int member) {
    return c->inter && member >= 0 ? member - c->remote0 : member;
}

/* ---- echo_sdr_core.c ---- */
void echo_sdr_setup(void);                  /* after MPI_Init */
void echo_sdr_finalize(void);               /* before MPI_Finalize */
int echo_sdr_skips_finalize(void);          /* after a failure the real MPI_Finalize would wait forever */
void echo_sdr_aborts(int errorcode);        /* the application's MPI_Abort: the job ends with its code */
sdr_comm_t *sdr_comm_of(MPI_Comm app);      /* NULL: not replicated (MPI_COMM_SELF...) */
void sdr_comm_add(sdr_comm_t *c);
void sdr_comm_release(sdr_comm_t *c);      /* MPI_Comm_free: forgotten now, gone when nothing uses it */
void sdr_progress(void);
void sdr_learn_failures(void);              /* ask ULFM which processes failed, and act on new ones */
int sdr_is_ulfm_error(int rc);
/* every application call (1: one that starts communication, the same in every replica, so rounds of them are
 * the same work in every replica): the kill injector counts them */
void sdr_tick(int starts_communication);

typedef struct sdr_send sdr_send_t;
typedef struct sdr_recv sdr_recv_t;
/* mode: 0 standard, 1 synchronous; copy: send from a packed copy made now (the caller's buffer is free at once;
 * the copy is kept until the acks are in) */
sdr_send_t *sdr_send_start(sdr_comm_t *c, int chan, const void *buf, int count, MPI_Datatype dt, int dst, int tag,
                           int mode, int copy);
/* whether a standard send of this size to member dst is copied (as MPI's eager protocol would buffer it; any
 * size to a rank with an excluded replica, so nobody waits for it), within a bound */
int sdr_send_copies(sdr_comm_t *c, int dst, int count, MPI_Datatype dt);
int sdr_send_copied(sdr_send_t *s);         /* it sends from its own copy: its caller is done with it */
int sdr_send_sent(sdr_send_t *s);           /* its real sends are complete (acks or not) */
int sdr_send_done(sdr_send_t *s);           /* complete: real sends done and acks in (or, late, copied) */
int sdr_send_error(sdr_send_t *s);          /* the application's mistake MPI refused, or MPI_SUCCESS */
void sdr_send_free(sdr_send_t *s);
sdr_recv_t *sdr_recv_start(sdr_comm_t *c, int chan, void *buf, int count, MPI_Datatype dt, int src, int tag);
int sdr_recv_done(sdr_recv_t *r, MPI_Status *status); /* status as the application sees it */
int sdr_recv_error(sdr_recv_t *r);
int sdr_recv_cancel(sdr_recv_t *r);         /* 1 if cancelled before it matched */
void sdr_recv_free(sdr_recv_t *r);
int sdr_probe(sdr_comm_t *c, int src, int tag, int *flag, MPI_Status *status);
/* a matched probe: *message is the real message (received with PMPI_Mrecv), status as the application sees it */
int sdr_improbe(sdr_comm_t *c, int src, int tag, int *flag, MPI_Message *message, MPI_Status *status);
double sdr_seconds(void);                   /* CLOCK_MONOTONIC, in seconds */
void sdr_spin(int *spins);                  /* one turn of a blocking wait: progress, and yield the core */
/* every live process of a communicator of all replicas comes here, this one serving the layer meanwhile
 * (ULFM's agreement: *flag becomes the AND of all); not MPI_SUCCESS if a process failed meanwhile */
int sdr_meet(MPI_Comm all, int *flag);
/* post a 4-int control message (type, a, b, c) on the ack channel to real rank `to` */
void sdr_control(int to, int type, int a, int b, int c);
void sdr_control_flush(void);              /* every control message posted has left (before a call without progress) */
/* a replica is excluded as slow, or back (every process is told); 0 if nothing changed (already so, dead, or
 * it would leave its rank no replica in the job) */
int sdr_set_out(int w, int out);
int sdr_lowest_in(int app);                 /* the lowest live replica of a rank not excluded, -1 if none */
enum { MSG_ACK = 1, MSG_FLUSH, MSG_UNSUB, MSG_DRAIN, MSG_ROUND, MSG_OUT, MSG_IN, MSG_PROPOSE, MSG_STOP };

/* ---- echo_sdr_slow.c: slow replicas excluded and taken back (DGRP's rule among a rank's replicas) ---- */
void sdr_slow_setup(void);
void sdr_slow_enter(int starts_communication); /* an application call starts: its compute phase ended */
void sdr_slow_leave(void);                  /* it ends: the next compute phase starts */
void sdr_slow_message(int from, const int msg[4]); /* MSG_ROUND, MSG_PROPOSE, MSG_STOP */
void sdr_slow_progress(void);
int sdr_slow_finalize(void);                /* stop the excluded siblings (1 if any): nobody waits for them */

/* ---- echo_sdr_slow_log.c: RUN_DIR/sdr.slow, the exclusions' log (the judge's, and the failures' take-backs) ---- */
extern long sdr_slow_calls;                 /* this replica's application calls so far (sdr_slow_enter counts) */
void sdr_slow_log_line(const char *what, int replica, long call); /* "what rank replica call time" */
void sdr_slow_log(const char *what);        /* this replica's line in RUN_DIR/sdr.slow, at its current call */

/* ---- echo_sdr_sched.c: collectives as rounds of sends, receives and local steps ---- */
typedef struct sdr_sched sdr_sched_t;
sdr_sched_t *sdr_sched_new(sdr_comm_t *c);
sdr_comm_t *sdr_sched_comm(sdr_sched_t *s);
void sdr_sched_send(sdr_sched_t *s, int round, const void *buf, int count, MPI_Datatype dt, int peer);
void sdr_sched_recv(sdr_sched_t *s, int round, void *buf, int count, MPI_Datatype dt, int peer);
/* inout = in op inout, after the round's communication */
void sdr_sched_reduce(sdr_sched_t *s, int round, const void *in, void *inout, int count, MPI_Datatype dt, MPI_Op op);
void sdr_sched_copy(sdr_sched_t *s, int round, const void *src, int scount, MPI_Datatype stype, void *dst, int rcount,
                    MPI_Datatype rtype);
void *sdr_sched_tmp(sdr_sched_t *s, int count, MPI_Datatype dt); /* a buffer freed with the schedule */
void sdr_sched_own_type(sdr_sched_t *s, MPI_Datatype dt);       /* a datatype freed with it */
void sdr_sched_persist(sdr_sched_t *s); /* a persistent collective: numbered when made, started in any order */
void sdr_sched_start(sdr_sched_t *s);
int sdr_sched_done(sdr_sched_t *s);
void sdr_sched_free(sdr_sched_t *s);
int sdr_sched_run(sdr_sched_t *s);          /* start, wait, free: a blocking collective */
void sdr_sched_progress(void);

/* ---- echo_sdr_p2p.c: requests the application holds ---- */
/* a started collective as a request; persistent: not started, each MPI_Start starts it again */
MPI_Request sdr_request_of_sched(sdr_sched_t *s, int persistent);
int sdr_is_request(MPI_Request h);
/* a request whose state another part keeps: poll(arg) says whether it is complete (and may advance it), finish(arg)
 * ends it once, when it is retired, and gives its error code */
MPI_Request sdr_request_of_poll(int (*poll)(void *), int (*finish)(void *), void *arg);

/* ---- echo_sdr_comm.c ---- */
sdr_comm_t *sdr_comm_world(void);           /* MPI_COMM_WORLD's, made at setup */
/* a new communicator of the members of p that pass the same color (MPI_UNDEFINED: none), ordered by key then
 * rank in p; dup: attributes (and topology) copied as MPI_Comm_dup does.  *newcomm: the application's handle */
int sdr_comm_create(sdr_comm_t *p, int color, int key, MPI_Comm *newcomm, int dup);
/* a communicator of `size` members (application ranks; this process is member `rank`) whose real communicators
 * are split from *parent, a real communicator of every live replica of every member (replaced by a shrunk one
 * after a failure); its handle takes comm's error handler */
sdr_comm_t *sdr_comm_from_real(MPI_Comm *parent, int size, const int *members, int rank, int id, MPI_Comm comm);
/* a communicator of p's members, not made yet (no real communicators), with its stand-in handle (comm's error
 * handler); and its real communicators made (chans: the two channels and the build one; table as split_real's) */
sdr_comm_t *sdr_comm_copy_of(const sdr_comm_t *p, MPI_Comm comm);
void sdr_comm_fill_real(sdr_comm_t *c, MPI_Comm chans[3], int *table, int nreal);
int sdr_comm_next_id(void);                 /* the id this process would give its next communicator */
void sdr_comm_ids_used(int last);           /* ids up to `last` are taken */
/* ---- echo_sdr_idup.c: MPI_Comm_idup(_with_info), made in the background ---- */
void sdr_idup_progress(void);               /* from sdr_progress: the dups being made take a turn */
void sdr_idup_settle(sdr_comm_t *p);        /* before another creation from p, or its free: p's dups are made */
/* ---- echo_sdr_win.c: a passive target applies its origins' operations from the progress loop ---- */
void sdr_win_progress(void);
/* ---- echo_sdr_topo.c ---- */
int *sdr_cart_copy(const int *cart);        /* NULL for NULL */
int echo_sdr_MPI_Comm_free(MPI_Comm *comm); /* echo_sdr_comm.c: a failed MPI_Comm_idup frees its handle */
/* echo_sdr_coll.c: communicator creation exchanges its members' choices with it */
int echo_sdr_MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm);
/* the replicated calls an intercommunicator's creation (echo_sdr_inter.c) and collectives (echo_sdr_coll.c, above
 * the calls that dispatch to them) are made of, and a window's messages (echo_sdr_win.c): echo_sdr_p2p.c's and
 * echo_sdr_coll.c's */
int echo_sdr_MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
int echo_sdr_MPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                      MPI_Status *status);
int echo_sdr_MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                          void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                          MPI_Status *status);
int echo_sdr_MPI_Barrier(MPI_Comm comm);
int echo_sdr_MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int echo_sdr_MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                        MPI_Comm comm);
int echo_sdr_MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                           MPI_Comm comm);
int echo_sdr_MPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                        MPI_Datatype recvtype, int root, MPI_Comm comm);

#endif
