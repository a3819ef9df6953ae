/* echo preload library: state shared by the hand-written parts and the
 * generated wrappers (build/wrappers.c, made by gen_wrappers.py).
 *
 * Rank model (see docs/replication.md): the job really has P processes; the
 * application sees N ranks.  Copy 0 of each application rank is its
 * representative.  Representatives form `reps_world` (ordered by application
 * rank, so a representative's rank there IS its application rank); every rank's
 * copies form `clone_comm` (the representative is rank 0 there).  Only
 * representatives talk to other ranks; they forward what MPI gave them to their
 * copies over clone_comm, in program order.
 */
#ifndef ECHO_INTERNAL_H
#define ECHO_INTERNAL_H

#include "compat/echo_mpi.h"
#include "echo_mode.h"
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "echo_constants.h" /* generated at build time from echo/constants.py (echo/build.py) */

#define ECHO_TLS __thread __attribute__((tls_model("initial-exec")))

typedef struct echo_state {
    int active;          /* between our MPI_Init setup and MPI_Finalize */
    int cloned;          /* some rank has more than one copy */
    int independent;     /* copies form independent worlds (no forwarding) */
    int reinit;          /* Reinit mode: the world is repaired after a process failure (echo_reinit.c) */
    int sdr;             /* SDR mode: every copy is a replica that communicates (echo_sdr.h); not `cloned` */
    int app_rank;        /* rank the application sees in MPI_COMM_WORLD */
    int app_size;        /* N */
    int copy;            /* copy index, 0 = representative */
    int ncopies;         /* copies of this application rank */
    int real_rank;       /* rank in the real MPI_COMM_WORLD */
    int real_size;       /* P */
    MPI_Comm reps_world; /* representatives' world (MPI_COMM_NULL on copies) */
    MPI_Comm clone_comm; /* this rank's copies */
    int *rep_real_rank;  /* application rank -> real rank of its representative */
    char run_dir[1024];
    char role[128];
} echo_state_t;

extern echo_state_t echo;
extern ECHO_TLS int echo_depth; /* re-entry guard of the wrappers */

/* generated with the wrappers: the function table that record files carry */
extern const int echo_nfunctions;
extern const char *const echo_function_names[];

/* ---- plan and process lifecycle (echo_process.c) ---- */
void echo_setup_after_init(void);  /* builds reps_world, clone_comm, world entry */
void echo_teardown_before_finalize(void);
void echo_mark_finalizing(void); /* in the real MPI_Finalize: the application's work is done */
void echo_mark_finalized(void);
/* a copy that cannot go on with its representative (the channel saw it finalize first): finalize and exit */
void echo_copy_ends(void) __attribute__((noreturn));
void echo_mark_stopped(void); /* SDR stopped this excluded replica at the end (not a failure) */
void echo_fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void echo_unsupported(const char *fn) __attribute__((noreturn));
double echo_epoch_now(void);        /* Unix time, in seconds */
void echo_kill_at(double epoch);    /* the kill injectors: SIGKILL this process at that time */
void echo_kill_now(const char *when); /* an injected kill: its event, then SIGKILL */
const char *echo_plan_value(const char *key);  /* from the plan header, or NULL */
/* 1 once if a session made echo initialize the world model (echo_session.c): MPI_Init then takes it over */
int echo_world_owned_by_echo(void);

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
/* MPI_Comm_dup's attribute copying: every keyval's copy callback, from one handle to another */
int echo_comm_copy_attributes(MPI_Comm from, MPI_Comm to);
int echo_comm_remote_group(echo_comm_t *c, MPI_Group *group);

/* ---- process topologies (echo_topo.c) ----
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

/* ---- the channel between a representative and its copies (echo_channel.c) ----
 * Every message a copy waits for goes through these: on one host a ring in shared memory the representative
 * writes once for all its copies, who sleep while they wait; else MPI messages on clone_comm. */
void echo_channel_setup(void);  /* after clone_comm exists */
void echo_channel_teardown(void);
int echo_to_copies(const void *buf, int count, MPI_Datatype dt, int tag);
int echo_to_copy(int copy, const void *buf, int count, MPI_Datatype dt, int tag);
int echo_from_rep(void *buf, int count, MPI_Datatype dt, int tag, MPI_Status *status);
int echo_probe_rep(int *tag); /* the tag of the representative's next message (left to be received) */
void echo_channel_wake(void); /* the representative is about to wait for its copies: wake those asleep */

/* ---- forwarding from the representative to its copies (echo_forward.c) ----
 * The representative calls these after the real MPI call; copies call the same
 * function at the same point of the program and receive.  `rc` travels as the
 * message tag, so copies return exactly what their representative got. */
/* In independent worlds (perturbation), copy k of every rank forms world k and
 * every process communicates for real: each is its world's representative. */
static inline int echo_is_rep(void) { return echo.copy == 0 || echo.independent; }
static inline int echo_has_copies(void) { return echo.ncopies > 1 && !echo.independent; }
/* the real call, made by the representative; a copy makes none (MPI_SUCCESS:
 * it gets the representative's outcome forwarded) */
#define ECHO_REP(call) (echo_is_rep() ? (call) : MPI_SUCCESS)
int echo_forward(void *buf, int count, MPI_Datatype dt, int rc);
int echo_forward_status(void *buf, int count, MPI_Datatype dt, MPI_Status *status, int rc);
/* the same, delivering all `count` elements whatever the status says (a status the MPI leaves unset) */
int echo_forward_status_whole(void *buf, int count, MPI_Datatype dt, MPI_Status *status, int rc);
int echo_forward_bytes(void *data, size_t len, int rc);
/* datatype with its blocks at displs (element units of dt); to forward v-buffers */
int echo_forward_blocks(void *buf, int n, const int *counts, const int *displs, MPI_Datatype dt, int rc);
int echo_forward_wblocks(void *buf, int n, const int *counts, const int *bdispls, const MPI_Datatype *types, int rc);
/* an info object MPI gave the representative, rebuilt on every copy */
int echo_forward_info(MPI_Info *info, int rc);
/* those blocks as one committed datatype (types: w-blocks, displs in bytes);
 * MPI_DATATYPE_NULL if there is nothing to deliver (MPI_IN_PLACE, blocks MPI rejects) */
MPI_Datatype echo_blocks_type(void *buf, int n, const int *counts, const int *displs, MPI_Datatype dt,
                              const MPI_Datatype *types);

/* A status as MPI gave it, but for MPI_ERROR: calls that complete one operation (probes, Recv, Wait) leave
 * that field as the application set it (MPI 4.1, 3.2.5); MPICH's test suite checks it */
static inline void echo_set_status(MPI_Status *status, const MPI_Status *got) {
    if (status == MPI_STATUS_IGNORE) return;
    int error = status->MPI_ERROR;
    *status = *got;
    status->MPI_ERROR = error;
}

/* A derived datatype of a pending operation: programs may free theirs as soon as the operation started (MPI
 * lets them; MPICH's pt2pt/dtype_send and datatype/tfree do), and completion still uses it, so echo holds a
 * duplicate of its own (*kept; 1 if it made one, to free with the operation), else *kept is dt (echo_requests.c) */
int echo_type_keep(MPI_Datatype dt, MPI_Datatype *kept);
int echo_type_combiner(MPI_Datatype dt, int *combiner); /* MPI_Type_get_envelope's combiner */

/* a message of a replicated communicator's Mprobe/Improbe (and forget it): 0 for a local one (echo_p2p.c) */
int echo_message_take(MPI_Message m);

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
int echo_win_after_barrier(int rc);

/* ---- arguments of calls a copy does not make (echo_check.c) ----
 * The error code MPI gives the same call (MPI_SUCCESS if it accepts it), asked
 * without communicating: copies return it where their representative made the
 * real call, so a misused call fails alike on every copy. */
int echo_check_buffer(void *buf, int count, MPI_Datatype dt); /* a receive buffer MPI accepts? */
int echo_check_send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, const echo_comm_t *c);
int echo_check_recv(void *buf, int count, MPI_Datatype dt, int source, int tag, const echo_comm_t *c);
int echo_check_sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                        void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                        const echo_comm_t *c);
int echo_check_sendrecv_replace(void *buf, int count, MPI_Datatype dt, int dest, int sendtag, int source,
                                int recvtag, const echo_comm_t *c);

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
MPI_Request echo_request_new_partitioned(MPI_Request real, int send, void *buf, int partitions, int count,
                                         MPI_Datatype dt, int32_t comm_id, int32_t peer);
int echo_request_view(MPI_Request h, echo_request_view_t *v); /* 0 if h is not an echo request */

/* ---- Reinit mode (echo_reinit.c) ---- */
int echo_reinit_is_child(void);      /* a process started again in place of a failed one */
void echo_reinit_setup(void);        /* after MPI_Init: the world echo can replace */
int echo_reinit_on_error(int rc);    /* a call failed: repair the world if a process failed */
void echo_reinit_internal_comm(MPI_Comm c); /* a communicator of echo's own on the world: revoke it too */
void echo_reinit_finalize(void);     /* MPI_Finalize after a repair: end without waiting for failed processes */
/* where failed ranks start again (echo_placement.c) */
void echo_placement_init(MPI_Comm world, int rank, int size);
void echo_placement_share(MPI_Comm inter, int root_side, int nchildren, int size);
int echo_placement_choose(const int *failed, int nfailed, int size, char (*out)[64]);
int echo_placement_simulated(void);

/* ---- the slowdown injector (echo_slow.c): the wrappers call these around every call when it is on ---- */
extern int echo_slow_on;
void echo_slow_setup(void);
void echo_slow_before(void);
void echo_slow_after(void);

/* ---- clocks: copies read their representative's (echo_clock.c) ---- */
void echo_clock_setup(void);    /* after clone_comm exists */
void echo_clock_teardown(void);
extern int echo_clocks_parted;  /* a copy whose clock readings parted from its representative's */
void echo_clock_step_over(void); /* its representative's readings, before a forward it receives */
int echo_clock_read(clockid_t id, struct timespec *ts);  /* a reading the application takes, shared like libc's */
void echo_clock_not_application(const char *object_file); /* an interpreter's own libc reads are not shared */
void echo_clock_python_setup(void);                       /* echo_clock_python.c */

/* ---- events and metrics of this process (echo_events.c) ---- */
void echo_event(const char *kind, const char *fn, uint64_t seq, int32_t comm, int32_t peer, uint64_t bytes, int copy,
                long first_byte, const char *detail);
void echo_metric(const char *name, double value, const char *unit);
void echo_events_close(void);

/* ---- role collectors: hooks around every intercepted call ----
 * A collector (collectors/<name>/) subscribes its hooks at MPI_Init when the plan
 * gives this copy its role (echo_hooks_subscribe: any number of collectors per
 * event); the generated wrappers call echo_hooks' entries around the real call.
 * Each entry is NULL when nobody subscribed to that event, the one subscriber's
 * function when there is one, else a function that calls them all. */
typedef struct echo_hooks {
    void (*enter)(void);
    void (*leave)(void);
    void (*finish)(void); /* before MPI_Finalize: totals */
    /* data this copy hands to MPI (before the call) and data MPI delivered to it (after) */
    void (*outgoing)(const void *buf, int count, MPI_Datatype dt);
    void (*delivered)(void *buf, int count, MPI_Datatype dt);
} echo_hooks_t;
extern echo_hooks_t echo_hooks;
void echo_hooks_subscribe(const echo_hooks_t *hooks); /* its NULL entries: events it does not follow */
void echo_collectors_init(void); /* echo_collectors.c: every collector built in */

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

#endif
