/* What the SDR layer's core (its sends, receives, progress, setup: echo_sdr_core.c), its acks and credits
 * (echo_sdr_acks.c) and its failures (echo_sdr_failures.c) share.  The three call each other from the progress
 * loop (docs/architecture.md, "Progress loops"): waiting in any call serves acks, settles sends, and retargets
 * senders after a failure. */
#ifndef ECHO_SDR_STATE_H
#define ECHO_SDR_STATE_H
#include "echo_sdr.h"

#include <stdio.h>

/* ECHO_SDR_DEBUG=1: the layer says on stderr what failures it saw and what it sent again */
extern int sdr_debug;
#define DEBUG(...) (sdr_debug ? fprintf(stderr, "[sdr %d] ", echo.real_rank), fprintf(stderr, __VA_ARGS__) : 0)

#define ACK_TAG 0

struct sdr_send {
    sdr_comm_t *c;
    int chan, dst, tag, mode;
    const void *buf;
    int count;
    MPI_Datatype dt;
    unsigned mask; /* replicas of dst whose acks are still due */
    MPI_Request reqs[2 * SDR_MAX_REPLICAS]; /* a replica taken back may be sent one again */
    int nreqs, err;
    void *owned; /* the copy it sends from, if any (take_copy) */
    long owned_bytes;
    int released; /* its owner is done with it: freed once complete */
    double sent_at; /* when its real sends were first seen done while acks were due (late_copy), or 0 */
    int owns_dt;  /* dt is echo's duplicate of the caller's (echo_type_keep) */
    sdr_send_t *next; /* every send not yet complete and released, in the order they started */
    sdr_send_t *next_posted; /* those with real sends under way: the progress loop tests only these */
    int in_posted;
};

struct sdr_recv {
    sdr_comm_t *c;
    int chan;
    void *buf;
    int count;
    MPI_Datatype dt;
    int src, tag;
    MPI_Request req;
    int posted_to; /* replica of src the real receive names (-1: any source) */
    int complete, err;
    int owns_dt; /* dt is echo's duplicate of the caller's (echo_type_keep) */
    MPI_Status status;
    sdr_recv_t *next; /* receives not yet complete */
};

/* ---- the layer's lists and counts (echo_sdr_core.c) ---- */
extern sdr_comm_t *sdr_comms;
extern MPI_Group sdr_world_group;
extern sdr_send_t *sdr_sends, **sdr_sends_tail; /* every send not yet complete and released, in order */
extern sdr_send_t *sdr_posted; /* the sends whose real sends may still be under way */
extern sdr_recv_t *sdr_recvs;  /* receives not yet complete */
extern MPI_Request sdr_ack_req;
/* per real rank: real messages posted to it, matched from it, and how many of its messages it said it sent */
extern long *sdr_sent_to, *sdr_matched, *sdr_due;
extern unsigned char *sdr_due_known;
extern int sdr_retarget_due; /* a sender to change: tried in the progress loop until it can be */
sdr_comm_t *sdr_comm_by_id(int id);
void sdr_comm_destroy_if_unused(sdr_comm_t *c);
void sdr_settle(sdr_send_t *s);
void sdr_debug_dump(void);

/* ---- acks and credits (echo_sdr_acks.c) ---- */
void sdr_ack_message(sdr_comm_t *c, int chan, int i, int j, int tag);
int sdr_take_credit(int cid, int chan, int dst, int tag, int replica);
void sdr_post_send(sdr_send_t *s, int replica);
void sdr_count_match(const sdr_comm_t *c, int source);
void sdr_discard(const sdr_comm_t *c, MPI_Message *m, const MPI_Status *st);
void sdr_drain_stale(void);
int sdr_drain_due_in(const sdr_comm_t *c); /* stale messages of a member's replica may still come on c */
int sdr_drained(int w);
int sdr_take_back(MPI_Comm comm, MPI_Request *req, MPI_Status *st);
int sdr_interrupted(MPI_Comm comm, MPI_Request *req, MPI_Status *st);
void sdr_poll_acks(void);

/* ---- failures (echo_sdr_failures.c) ---- */
extern int sdr_ending; /* in MPI_Finalize: this process needs no one's messages any more */
void sdr_retarget(void);

#endif
