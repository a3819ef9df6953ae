/* echo preload library, the base (core/): the process's state, its lifecycle and plan, the channel and
 * forwarding from a representative to its copies, argument checks, clocks, events, injectors and the roles'
 * hooks.  It declares core's functions only: each mode's own are in its folder's header (clone/echo_clone.h,
 * sdr/echo_sdr.h, reinit/echo_reinit_internal.h), which the base never includes (docs/architecture.md).
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

#include "echo_constants.h" /* generated at build time from echo/runformat/constants.py (echo/build.py) */

#define ECHO_TLS __thread __attribute__((tls_model("initial-exec")))

/* set in the environment of a process a mode starts itself (Reinit's restarted ranks): one of the job's processes,
 * not a child the application spawned, although MPI started it with MPI_Comm_spawn */
#define ECHO_RESTARTED_ENV "ECHO_REINIT_CHILD"

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

/* ---- one thread inside MPI at a time, under copies and SDR (echo_serial.c) ---- */
extern int echo_serial_on;
void echo_serial_setup(void); /* after MPI_Init */
int echo_serial_enter(int fn); /* an application's call (the wrappers): stops the job if another thread is inside */
void echo_serial_leave(void);
int echo_serial_claim_reading(void); /* a clock reading shared with copies; echo_serial_leave gives it back */

/* generated with the wrappers: the function table that record files carry */
extern const int echo_nfunctions;
extern const char *const echo_function_names[];

/* ---- the process's state and its plan (echo_plan.c): read at load, read by everything ---- */
void echo_plan_read(const char *path, int me); /* this process is real rank me; exits 64 on a plan it is not in */
const char *echo_plan_value(const char *key);  /* from the plan header, or NULL */
void echo_plan_representatives(int *rep_real_rank); /* per application rank, its copy 0's real rank */
int echo_copies_awaited(void);     /* --sdc stop|vote: the representative waits for its copies' data at checked calls */
int echo_under_valgrind(void);     /* the process runs under Valgrind (its preload is in LD_PRELOAD) */
double echo_epoch_now(void);        /* Unix time, in seconds */

/* ---- what the process tells (echo_status.c): its words, its output files, its status file ---- */
void echo_status_open(int me);     /* at load: procs/<me>.status says "started", the process's end is noted */
void echo_output_setup(int execed); /* at load: the terminal's stderr kept, a copy's output sent to its files */
void echo_status_signalled(int sig); /* a fatal signal came (async-signal-safe): the status says which */
void echo_status_survived(void);   /* the program went on after its own handler of it: the status put back */
int echo_status_opened(void);
void echo_mark_finalizing(void); /* in the real MPI_Finalize: the application's work is done */
void echo_mark_finalized(void);
void echo_mark_stopped(void); /* SDR stopped this excluded replica at the end (not a failure) */
void echo_mark_aborted(void); /* a copy ended on its own before its representative (echo_process.c) */
/* the status this process ends with, recorded before it ends without exit() (an abort, echo's _exit) */
void echo_record_exit_status(int code);
void echo_fatal(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void echo_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2))); /* one line on the terminal, run goes on */
void echo_unsupported(const char *fn) __attribute__((noreturn));

/* ---- process lifecycle (echo_process.c): load, after MPI_Init, before MPI_Finalize, a copy's own end ---- */
void echo_setup_after_init(void);  /* builds reps_world, clone_comm, world entry */
void echo_teardown_before_finalize(void);
/* a copy that cannot go on with its representative (the channel saw it finalize first): finalize and exit */
void echo_copy_ends(void) __attribute__((noreturn));
void echo_copy_aborts(int errorcode) __attribute__((noreturn)); /* a copy's own MPI_Abort: it ends with the job */
void echo_copy_exits(int status);  /* a copy's own exit(non-zero) before Finalize: too (returns under --sdc stop|vote) */

/* ---- the kill injector of SDR and Reinit (echo_kills.c; echorun --inject kill:...) ---- */
/* the mode's plan lines <mode>_kill_<k>; name_copy: they name the copy after the rank (SDR's replica); once: each
 * kill strikes once in the job (Reinit, whose failed processes start again) */
void echo_kills_plan(const char *mode, int name_copy, int once);
void echo_kills_arm(double start); /* once the rank is known: its kills at a call, timed (from start, Unix s), at MPI_X */
void echo_kill_at_planned_call(void); /* every application call of a mode with kills at a call number */
/* the mode's moment `what` ("repair", "finalize", "at") with its argument (NULL: any): a kill planned there strikes */
void echo_kill_moment(const char *what, const char *arg, const char *when);
extern int echo_kills_entering;     /* kills planned as the rank enters a call (at=MPI_X): how many are armed */
void echo_kill_entering(const char *name);
void echo_kill_now(const char *when); /* an injected kill: its event, then SIGKILL */
void echo_ft_survive_sigpipe(void); /* SDR and Reinit: a dead peer's socket must not end a survivor */
int echo_ft_knows_dead(MPI_Comm comm);  /* SDR and Reinit, before creating a communicator */
int echo_ft_agree_none_dead(MPI_Comm comm, int *none_dead); /* Reinit, before creating a communicator */
/* SDR and Reinit create their communicators through these (echo_ulfm.c says why: Open MPI's revoke of one that is
 * being built); MPI's return codes */
int echo_ft_split(MPI_Comm parent, int color, int key, MPI_Comm *out);
int echo_ft_dup(MPI_Comm parent, MPI_Comm *out);
int echo_ft_shrink(MPI_Comm parent, MPI_Comm *out);
/* a nonblocking dup (SDR's MPI_Comm_idup); echo_ft_idup_done(parent) once its request is complete */
int echo_ft_idup(MPI_Comm parent, MPI_Comm *out, MPI_Request *req);
void echo_ft_idup_done(MPI_Comm parent);

/* ---- the channel between a representative and its copies (echo_channel.c) ----
 * Every message a copy waits for goes through these: on one host a ring in shared memory the representative
 * writes once for all its copies, who sleep while they wait; else MPI messages on clone_comm. */
void echo_channel_setup(void);  /* after clone_comm exists */
void echo_channel_teardown(void);
int echo_to_copies(const void *buf, int count, MPI_Datatype dt, int tag);
int echo_to_copy(int copy, const void *buf, int count, MPI_Datatype dt, int tag);
int echo_from_rep(void *buf, int count, MPI_Datatype dt, int tag, MPI_Status *status);
int echo_probe_rep(int *tag); /* the tag of the representative's next message (left to be received) */
/* A copy whose path through the program parted from its representative's (`why`: what showed it, naming the call):
 * its event, then it ends with the job (or, under --sdc stop and vote, stops the job) */
void echo_copy_parted(const char *why) __attribute__((noreturn));
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
/* The class of the error an application's error handler was last raised with on this process (its
 * trampolines: clone/echo_errhandlers.c), 0 for none.  MPICH 5 makes a call return MPI_SUCCESS once a user's
 * handler returns, so the representative's return code alone cannot tell its copies that the handler ran: a
 * representative's forward whose rc is MPI_SUCCESS carries this class too, and a copy's sets it from the
 * representative's.  A replicated call that raises errors on copies clears it first (generated wrappers). */
extern ECHO_TLS int echo_raised;
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
 * duplicate of its own (*kept; 1 if it made one, to free with the operation), else *kept is dt (echo_check.c) */
int echo_type_keep(MPI_Datatype dt, MPI_Datatype *kept);
int echo_type_combiner(MPI_Datatype dt, int *combiner); /* MPI_Type_get_envelope's combiner */
/* MPI_Pack's contract (packed, size, *position advanced), but the bytes are those a send of the buffer carries:
 * MPI_Pack may drop padding a send keeps (echo_pack.c) */
int echo_pack_as_sent(const void *buf, int count, MPI_Datatype dt, void *packed, int size, int *position);
/* one typed buffer into another as a send and receive between them would copy it (echo_pack.c) */
int echo_copy_as_sent(const void *in, int count, MPI_Datatype dt, void *out, int rcount, MPI_Datatype rdt);
int echo_span_readable(const void *addr, size_t len); /* every page of a type's span mapped and readable */
size_t echo_type_span(int count, MPI_Datatype dt, int packed, MPI_Aint *tlb); /* its span, 0: sparse (pack it) */

/* ---- arguments of calls a copy does not make (echo_check.c) ----
 * The error code MPI gives the same call (MPI_SUCCESS if it accepts it), asked
 * without communicating: copies return it where their representative made the
 * real call, so a misused call fails alike on every copy.  `peers`: the processes a peer rank is valid
 * among in the application's communicator (its remote group's for an intercommunicator). */
int echo_check_buffer(void *buf, int count, MPI_Datatype dt); /* a receive buffer MPI accepts? */
int echo_check_send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, int peers);
int echo_check_recv(void *buf, int count, MPI_Datatype dt, int source, int tag, int peers);
int echo_check_sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                        void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                        int peers);
int echo_check_sendrecv_replace(void *buf, int count, MPI_Datatype dt, int dest, int sendtag, int source,
                                int recvtag, int peers);

/* ---- attribute keyvals (echo_keyvals.c) ----
 * MPI_Comm_dup's attribute copying: every keyval's copy callback, from one handle to another */
int echo_comm_copy_attributes(MPI_Comm from, MPI_Comm to);

/* ---- the slowdown injector (echo_slow.c): the wrappers call these around every call when it is on ---- */
extern int echo_slow_on;
void echo_slow_setup(void);
void echo_slow_before(void);
void echo_slow_after(void);

/* ---- the copies' own view of the program's files (echo_fileview.c) ---- */
void echo_fileview_setup(void);              /* when the plan is read, before the program runs */
const char *echo_fileview_mechanism(void);   /* "libc interposition", or "off" */

/* ---- clocks: copies read their representative's (echo_clock.c) ---- */
int echo_clock_setup(void);     /* after clone_comm exists; 1: copies read the representative's clocks, then set up
                                 * echo_clock_python_setup, echo_tsc_setup and echo_pid_setup (the clone mode) */
void echo_clock_teardown(void);
extern int echo_clocks_parted;  /* a copy whose clock readings parted from its representative's */
extern int echo_clocks_threaded; /* every thread's readings are shared: they may come before a forward */
void echo_clock_step_over(void); /* its representative's readings, before a forward it receives */
uint64_t echo_clock_tsc(uint64_t tsc, const void *at); /* a time-stamp counter reading (echo_tsc.c) */
long echo_clock_share_bytes(char *buf, long len, long cap, const void *at); /* a /proc file's content */
void echo_tsc_setup(void);      /* the application's rdtsc faults, and is emulated (echo_tsc.c) */
void echo_tsc_teardown(void);
extern int echo_tsc_trapped;    /* the application's counter faults: the wrappers mark each call (echo_tsc.c) */
int echo_tsc_enter(void);       /* 1 */
void echo_tsc_leave(void);
int echo_tsc_hold(int lift_now); /* echo's own MPI calls outside the application's: as inside one (echo_tsc_trap.c) */
void echo_tsc_release(int held);
void echo_records_rate(void);   /* ticks per ns measured while the counter reads freely (echo_records.c) */
/* around starting a process (echo_tsc_children.c): the child reads its own counter; 1: lifted, trap again */
int echo_tsc_lift_for_child(void);
/* ---- the stack an MPI call leaves below its caller, zeroed under --sdc (echo_stack.c) ---- */
#define ECHO_STACK_SCRUB_DEPTH (32 * 1024) /* bytes below the caller's stack pointer: echo_stack.c says why */
extern size_t echo_stack_scrub; /* bytes the wrappers zero when they return (0: none) */
int echo_stack_scrubbed(int rc); /* the wrappers' tail call: zeroes the stack below their caller, returns rc */
int echo_stack_holds(const void *p); /* p is on this thread's stack: a local variable */
void echo_stack_known(void); /* find this thread's stack now (not in a signal handler: it allocates) */
void echo_stack_scrub_below(uintptr_t sp); /* a handler on an alternate stack: zero below the program's `sp` */
void echo_tsc_trap_again(int lifted);
int echo_clock_read(clockid_t id, struct timespec *ts);  /* a reading the application takes, shared like libc's */
void echo_clock_python_setup(void);                       /* echo_clock_python.c */
/* ---- whose code a call comes from (echo_code.c) ---- */
void echo_clock_not_application(const char *object_file); /* an interpreter's own libc reads are not shared */
int echo_application_code(const void *at); /* code at `at` is the program's (its interpreter's too), not MPI's */
int echo_application_caller(const void *at); /* the program's, its interpreter's own apart: a clock reading's */
/* whose code is at `at`: the program's (its runtime's, its interpreter's), MPI's or echo's, or the C library's and
 * the loader's, which act for whoever called them */
enum { ECHO_CODE_PROGRAM, ECHO_CODE_MPI, ECHO_CODE_RUNTIME };
int echo_code_owner(const void *at);
/* ---- MPI's and echo's allocations on a heap of their own, under --sdc (echo_heap.c) ---- */
void echo_heap_apart(void);
/* this thread does echo's own work outside MPI calls (its load): what the C library allocates for it is echo's */
extern ECHO_TLS int echo_own_work;
void echo_canary_share(unsigned long long seed); /* this rank's processes check their stacks with one canary */

/* ---- process ids: a copy's are its representative's (echo_pid.c) ---- */
void echo_pid_setup(void); /* after clone_comm exists, once echo_clock_setup said the rank has copies */
/* `path` (/proc/<pid>/...) as the program's call at `at` means it: a copy's /proc/<representative's pid> is its own
 * /proc/self; into `buf` (PATH_MAX) when it changes */
const char *echo_pid_proc_path(const char *path, char *buf, const void *at);

/* ---- events and metrics of this process (echo_events.c) ---- */
void echo_event(const char *kind, const char *fn, uint64_t seq, int32_t comm, int32_t peer, uint64_t bytes, int copy,
                long first_byte, const char *detail);
void echo_metric(const char *name, double value, const char *unit);
void echo_events_close(void);

/* ---- role collectors: hooks around every intercepted call ----
 * A collector (echo/collectors/<name>/) subscribes its hooks at MPI_Init when the plan
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
void echo_collectors_init(void); /* every role built in (echo_roles.c, generated by echo/build.py) */

#endif
