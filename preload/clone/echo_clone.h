/* The clone layer (clone/): a rank's copies follow their representative, who alone talks to other ranks.
 * Its communicator table, topologies, requests, windows, partitioned requests and SDC checks, over core's
 * channel and forwarding (core/echo_internal.h).  Reinit uses it too (its world is a clone world of one copy
 * each); the base and SDR do not. */
#ifndef ECHO_CLONE_H
#define ECHO_CLONE_H

#include "echo_internal.h"

/* ---- the clone mode (echo_clone_mode.c): Reinit's world is a clone world of one copy each ---- */
void echo_clone_teardown(void);

/* ---- communicator table (echo_comm.c) ----
 * Every communicator the application can name maps to an entry.  On a
 * representative `real` is the communicator MPI really uses; on a copy it is
 * MPI_COMM_NULL and the application holds a private stand-in handle (a dup of
 * MPI_COMM_SELF) so that purely local calls (names, attributes, Pack) still work.
 * `members` lists the real world ranks of the representatives in the
 * communicator, in communicator order: copies build their groups from it; for
 * an intercommunicator `remote_members` does the same for the remote group. */
typedef struct echo_comm {
    MPI_Comm app;
    MPI_Comm real;
    int rank, size;
    int *members;
    int inter;       /* an intercommunicator */
    int remote_size;
    int *remote_members;
    struct echo_topo *topo; /* its process topology, NULL if none (echo_topo.c) */
} echo_comm_t;

echo_comm_t *echo_comm_find(MPI_Comm app);          /* NULL if unknown */
/* A communicator echo does not replicate: MPI_COMM_SELF and communicators made
 * from it (every communicator made from a replicated one is in the table, or
 * its creation was refused).  Every copy uses such a communicator itself. */
static inline int echo_comm_is_local(MPI_Comm c) { return c != MPI_COMM_WORLD && !echo_comm_find(c); }
echo_comm_t *echo_comm_get(MPI_Comm app, const char *fn); /* aborts if unknown */
echo_comm_t *echo_comm_add(MPI_Comm app, MPI_Comm real, int rank, int size, int *members);
void echo_comm_remove(MPI_Comm app);
/* Reinit: revoke every communicator (so every survivor joins the repair), then
 * forget all but the world, as after MPI_Init */
void echo_comm_revoke_all(void);
void echo_comm_forget_all(void);
/* After the representative created `*newcomm` (or got MPI_COMM_NULL), register
 * it on every copy of the rank; copies get their stand-in handle, with the
 * error handler of `parent` (MPI_COMM_NULL: none to inherit).  `dup`: the new
 * communicator is a duplicate of `parent`, so attributes are copied by their
 * keyvals' copy callbacks as MPI_Comm_dup does. */
int echo_comm_register_new(MPI_Comm parent, MPI_Comm *newcomm, int rc, int dup);
/* Group of the communicator as the application sees it (copies substitute
 * themselves for their representative); the remote group of an intercommunicator. */
int echo_comm_group(echo_comm_t *c, MPI_Group *group);
int echo_comm_remote_group(echo_comm_t *c, MPI_Group *group);

/* ---- process topologies (their description: echo_topo_desc.c; the rest: echo_topo.c) ----
 * A representative describes the topology of a communicator it created (a
 * flat int array; 0 ints if it has none); the description travels to copies
 * after the communicator's members, and both sides keep it parsed in `topo`. */
int echo_topo_describe(MPI_Comm real, int **desc);
struct echo_topo *echo_topo_new(const int *desc, int n, int rank, int size); /* NULL if n == 0 */
void echo_topo_free(struct echo_topo *t);
/* the number of processes a collective's output comes from: the remote group's for an intercommunicator */
static inline int echo_comm_peers(const echo_comm_t *c) { return c->inter ? c->remote_size : c->size; }
/* rooted collectives: whether this process is the root that gets the result
 * (intra: its rank is root; inter: it passed MPI_ROOT), whether it contributes
 * data (inter: only the group opposite the root), and whether it receives the
 * root's data (intra: every non-root; inter: the group opposite the root) */
static inline int echo_is_root(const echo_comm_t *c, int root) { return c->inter ? root == MPI_ROOT : c->rank == root; }
static inline int echo_contributes(const echo_comm_t *c, int root) { return !c->inter || root >= 0; }
static inline int echo_gets_from_root(const echo_comm_t *c, int root) { return c->inter ? root >= 0 : c->rank != root; }

/* a message of a replicated communicator's Mprobe/Improbe (and forget it): 0 for a local one (echo_p2p.c) */
int echo_message_take(MPI_Message m, int32_t *comm, int *self); /* 0: a local message; else its comm and rank */

/* MPI's memory, i-th (MPI_Alloc_mem's blocks, then windows' regions, in the order made; echo_win.c): 0 past the
 * last.  SDC knows the same block in a representative and its copies by it. */
int echo_mpi_memory(int i, const void **base, MPI_Aint *size);

/* ---- echo requests (echo_requests.c) ----
 * With clones, a request on a replicated object is an echo request: on a
 * representative it wraps `real`; on a copy `real` is MPI_REQUEST_NULL.  When a
 * Wait/Test retires it, the representative forwards what it delivered and copies
 * receive it: with_status, like a receive (status, then `count` elements of
 * `dt` at `buf`, or fewer as the status says; buf may be NULL); otherwise like a
 * collective's output (`count` elements at `buf`, none if buf is NULL).
 * Persistent requests start inactive (MPI_Start activates them). */
MPI_Request echo_request_new(MPI_Request real, int persistent, int with_status, void *buf, int count,
                             MPI_Datatype dt);
/* output in blocks (v/w collectives): counts/displs (and types, or dt) must
 * stay valid until completion, as MPI requires of the call's arguments */
MPI_Request echo_request_new_blocks(MPI_Request real, int persistent, void *buf, int n, const int *counts,
                                    const int *displs, MPI_Datatype dt, const MPI_Datatype *types);
/* output described by one committed datatype built for this request (one
 * element of it at buf), which the request takes over and frees */
MPI_Request echo_request_new_typed(MPI_Request real, int persistent, void *buf, MPI_Datatype owned);
/* a request whose completion runs `done(arg, rc)` on every side (its result is the call's) */
MPI_Request echo_request_then(MPI_Request real, int (*done)(void *arg, int rc), void *arg);

/* ---- one-sided communication (echo_win.c) ----
 * After MPI_Barrier: every window's memory, as its representative holds it,
 * reaches the copies (updates completed before the barrier become visible). */
void echo_win_before_barrier(void);
int echo_win_after_barrier(int rc);
/* on a representative: 1 if window memory MPI allocated holds changes its copies have not been given (they read
 * it late: a vote must not outvote the representative on data that may come from there) */
int echo_win_unseen(void);

/* ---- partitioned communication (echo_partitioned.c) ----
 * A partitioned request is a persistent echo request (a send, or a receive whose
 * buffer and status completion delivers); these give echo_partitioned.c its parts. */
typedef struct echo_request_view {
    MPI_Request *real;    /* the representative's request; MPI_REQUEST_NULL on copies */
    int active;           /* started and not yet completed */
    int partitions;       /* 0: not a partitioned request */
    void *buf;            /* partition p: part_count elements of dt from element p * part_count */
    int part_count;
    MPI_Datatype dt;
    int32_t comm_id, peer; /* of the communicator and the peer, for the outgoing checks */
} echo_request_view_t;
/* `rank`: the destination of a send, the source of a receive */
MPI_Request echo_request_new_partitioned(MPI_Request real, int send, void *buf, int partitions, int count,
                                         MPI_Datatype dt, int rank, int tag, MPI_Comm comm);
/* `n` partitions of a partitioned send marked ready: once all are, a copy keeps what it sends to itself */
void echo_request_ready(MPI_Request h, int n);
int echo_request_view(MPI_Request h, echo_request_view_t *v); /* 0 if h is not an echo request */

/* ---- silent data corruption (echo_sdc.c) ---- */
/* ECHO_EXIT_DIVERGED: exit status of a job stopped by --sdc stop (echorun: diverged), in echo_constants.h */
void echo_sdc_init(void);
/* before a call that carries data out of this copy: observers, then the SDC check;
 * 1 if the buffer was corrected by a vote */
int echo_outgoing(const char *fn, int collective, const void *buf, int count, MPI_Datatype dt, int32_t comm,
                   int32_t peer);
int echo_outgoing_blocks(const char *fn, const void *buf, int n, const int *counts, const int *displs,
                          MPI_Datatype dt, int32_t comm);
int echo_outgoing_wblocks(const char *fn, const void *buf, int n, const int *counts, const int *bdispls,
                           const MPI_Datatype *types, int32_t comm);

/* ---- what MPI defines as the caller's own data (echo_own.c) ----
 * A copy's own block of a gather's or all-to-all's result: `src` (MPI_IN_PLACE: the block itself) goes into
 * `dst` after the representative's output was forwarded.  set describes it (nothing on a representative),
 * keep packs the contribution (before the forward), put writes it into the block (after it; frees). */
typedef struct echo_own {
    const void *src;
    int scount;
    MPI_Datatype stype;
    void *dst;
    int rcount;
    MPI_Datatype rtype;
    int on;
    unsigned char *bytes; /* kept, until put */
    int size;
} echo_own_t;
void echo_own_set(echo_own_t *o, const void *src, int scount, MPI_Datatype stype, void *dst, int rcount,
                  MPI_Datatype rtype);
void echo_own_keep(echo_own_t *o);
int echo_own_put(echo_own_t *o, int rc);
/* element `index` of a buffer of `dt` (its extent apart) */
void *echo_block_at(const void *buf, MPI_Aint index, MPI_Datatype dt);
/* a non-blocking or persistent collective's own block: kept at its start, put when a Wait/Test retires it
 * (echo_requests.c; the request keeps its own duplicates of the types) */
void echo_request_own(MPI_Request h, const echo_own_t *o);
/* messages to itself: a copy's rank in a replicated intracommunicator (-1 otherwise); a copy keeps what it sends
 * to itself and, when its representative's receive came from itself, takes it in place of the forwarded data */
int echo_self_rank(MPI_Comm comm);
void echo_self_send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm);
void echo_self_receive(void *buf, int count, MPI_Datatype dt, const MPI_Status *status, int32_t comm, int self,
                       int rc);

/* ---- large-count (MPI_X_c) calls (echo_bigcount.c) ----
 * gen_wrappers.py writes echo_MPI_X_c as a narrowing of the int form's semantics (echo_MPI_X): one semantics per
 * call family.  A count beyond an int becomes one element of a contiguous type; other values that do not fit an int
 * (the counts of v-collectives, a count with an MPI_Op) stop the job naming the call. */
int echo_narrow_int(long long v, const char *fn, const char *what);
/* a count and its datatype: beyond an int, one element of a contiguous type of `count` elements (*dt replaced;
 * echo_widened_free frees it after the call) */
int echo_narrow_count(MPI_Count count, MPI_Datatype *dt, const char *fn, const char *what);
void echo_widened_free(MPI_Datatype dt, MPI_Datatype original);
/* the ints of `n` counts or displacements (NULL for NULL); `keep`: the array must outlive the call (a
 * nonblocking or persistent operation may read it until it completes): kept, shared by equal arrays */
const int *echo_narrow_counts(const MPI_Count *a, int n, int keep, const char *fn, const char *what);
const int *echo_narrow_aints(const MPI_Aint *a, int n, int keep, const char *fn, const char *what);
void echo_narrow_free(const int *a, int keep);
/* how many elements an array argument of a v- or w-collective holds on this process: `side` 0 for the send
 * side's arrays, 1 for the receive side's; `root` the call's root (-1 if it has none); 0 if not significant */
int echo_narrow_len(MPI_Comm comm, const char *fn, int side, int root);
/* the neighbours of a communicator's topology (0 and 0 without one) */
void echo_topo_degrees(const echo_comm_t *c, int *indegree, int *outdegree);

#endif
