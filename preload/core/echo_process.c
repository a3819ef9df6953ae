/* Process lifecycle: when the library is loaded, read the plan (echo_plan.c) and say where the process's output and
 * status go (echo_status.c); echo's handler of the fatal signals; after MPI_Init, set the mode up; before
 * MPI_Finalize, tear it down; a copy's own end.
 * It calls the rest of core; nothing in core calls it but the channel, whose wait learns that a copy's
 * representative ended (echo_copy_ends, a progress loop: tests/preload/test_layers.py). */
#define _GNU_SOURCE
#include "echo_internal.h"
#include "echo.h"
#include "echo_records.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGTERM};

/* The handlers the program or its runtime had for the fatal signals when echo took them over at MPI_Init:
 * gfortran's runtime installs its backtrace handler at the start of main, after the library was loaded (it then
 * prints the backtrace and dies by the signal raised again; without echo's handler in front of it, echorun
 * reported "ended without MPI_Finalize").  echo's handler writes the status, then hands the signal to theirs. */
static struct sigaction theirs[sizeof fatal_signals / sizeof *fatal_signals];

static const struct sigaction *their_handler(int sig) {
    for (size_t i = 0; i < sizeof fatal_signals / sizeof *fatal_signals; i++)
        if (fatal_signals[i] == sig)
            return (theirs[i].sa_flags & SA_SIGINFO) || (theirs[i].sa_handler != SIG_DFL &&
                                                         theirs[i].sa_handler != SIG_IGN) ? &theirs[i] : NULL;
    return NULL;
}

/* async-signal-safe: only write(), pwrite() and hand formatting */
static void on_fatal_signal(int sig, siginfo_t *info, void *context) {
    echo_records_flush(); /* what the process did up to here */
    echo_status_signalled(sig);
    const struct sigaction *other = their_handler(sig);
    if (other) {
        if (other->sa_flags & SA_SIGINFO) other->sa_sigaction(sig, info, context);
        else other->sa_handler(sig);
        /* their handler returned.  gfortran's raised the signal again with the default action: it is pending (held
         * while this handler runs) and ends the process once this returns.  A program that goes on after its own
         * handler is not dead: its status is put back. */
        sigset_t pending;
        struct sigaction now;
        int dies = sigpending(&pending) == 0 && sigismember(&pending, sig) == 1 &&
                   sigaction(sig, NULL, &now) == 0 && !(now.sa_flags & SA_SIGINFO) && now.sa_handler == SIG_DFL;
        if (!dies) echo_status_survived();
        return;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* echo's handler in front of every fatal signal; a handler installed since (a language runtime's) is kept, to be
 * called after echo's */
static void take_fatal_signals(void) {
    for (size_t i = 0; i < sizeof fatal_signals / sizeof *fatal_signals; i++) {
        struct sigaction now, sa;
        if (sigaction(fatal_signals[i], NULL, &now) != 0) continue;
        if ((now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_fatal_signal) continue;
        theirs[i] = now;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_fatal_signal;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        sigaction(fatal_signals[i], &sa, NULL);
    }
}

static int real_rank_from_env(void) {
    const char *vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return atoi(v);
    }
    return -1;
}

/* A process that MPI_Comm_spawn started.  Open MPI 5's mpirun starts spawned children without the job's -x
 * environment, so they run natively; Open MPI 4's mpirun and MPICH's hydra (and Intel MPI's) give them the job's
 * environment, echo's plan and LD_PRELOAD among it, and tell them apart: OMPI_PARENT_PORT (the parents' port),
 * PMI_SPAWNED (hydra's PMI flag of a spawned world). */
static int spawned_child(void) {
    const char *v = getenv("PMI_SPAWNED"), *port = getenv("OMPI_PARENT_PORT");
    return (v && *v && strcmp(v, "0") != 0) || (port && *port);
}

/* A process a rank started (a shell, `nm`, a Python subprocess) inherits the rank's environment, its rank variables
 * too: it is not the rank, and must neither take the rank's output files (a copy's stdout would leave the pipe its
 * parent reads) nor write its status.  The rank leaves its process id in the environment; exec keeps the id, so a
 * rank started through a program that execs it (echo/exec.sh) is still the rank. */
static int started_by_a_rank(void) {
    const char *v = getenv("ECHO_RANK_PID");
    return v && *v && atol(v) != (long)getpid();
}

/* Under --sdc, bytes a program never wrote must be alike in a rank's processes: MPI's allocations apart from the
 * program's (echo_heap.c) and one stack canary (echo_canary.c), from the start.  Only when the library is preloaded:
 * loaded later, by dlopen, others would have bound malloc and free already and protected frames would be live.
 * 1: on (the rest of the load is echo's own work, its allocations through the C library too) */
static int same_leftovers(void) {
    const char *sdc = echo_plan_value("sdc"), *seed = echo_plan_value("sdc_seed"), *pre = getenv("LD_PRELOAD");
    if (!sdc || !echo.cloned || echo_under_valgrind() || !pre || !strstr(pre, "libecho")) return 0;
    echo_heap_apart();
    if (seed) echo_canary_share(strtoull(seed, NULL, 16));
    echo_own_work = 1;
    echo_stack_scrub = ECHO_STACK_SCRUB_DEPTH; /* the depth the wrappers zero once MPI_Init set SDC up (echo_sdc.c) */
    return 1;
}
static int alike; /* same_leftovers() is on */

static void load(void);

/* The load's own frames (paths and names of this copy's files, its pid) lie where main's frames will be: under
 * --sdc they are zeroed when it ends, or a program's local that main never wrote would hold a copy's paths in the
 * copy and its representative's in the representative (a check's line broadcast whole: tests/programs/input_check.c) */
__attribute__((constructor)) static void echo_load(void) {
    load();
    echo_own_work = 0;
    if (alike) (void)echo_stack_scrubbed(0); /* a call, not a tail call: zeroes below this frame */
}

__attribute__((noinline)) static void load(void) {
    const char *plan = getenv("ECHO_PLAN");
    if (!plan || !*plan) return; /* not started by echorun: every wrapper passes through */
    int restarted = getenv(ECHO_RESTARTED_ENV) != NULL; /* spawned, by echo: one of the job's processes */
    if (!restarted && spawned_child()) {
        /* as on Open MPI: not one of the plan's processes (its ranks would take the parents' places), and what
         * it starts in turn runs without echo too */
        unsetenv("ECHO_PLAN");
        unsetenv("LD_PRELOAD");
        return;
    }
    if (!restarted && started_by_a_rank()) return; /* every wrapper passes through */
    int me = real_rank_from_env();
    if (me < 0) return;           /* a helper process (e.g. a shell) under the same env */
    echo_plan_read(plan, me);
    echo_mode_choose();
    echo_fileview_setup(); /* before the program's first file call: its copies' files are their own */
    alike = same_leftovers();

    /* the rank's process again after an exec (echo/exec.sh execs a copy's Valgrind tool, which runs the program) */
    const char *rank_pid = getenv("ECHO_RANK_PID");
    int execed = rank_pid && atol(rank_pid) == (long)getpid();
    /* for the program itself (and its children): which copy of which rank it is, and which process is the rank */
    char num[24];
    snprintf(num, sizeof num, "%ld", (long)getpid());
    setenv("ECHO_RANK_PID", num, 1);
    snprintf(num, sizeof num, "%d", echo.app_rank);
    setenv("ECHO_APP_RANK", num, 1);
    snprintf(num, sizeof num, "%d", echo.copy);
    setenv("ECHO_COPY", num, 1);
    const char *perturb = echo_plan_value("perturb");
    if (perturb) { /* for a program that perturbs its own inputs: which variation this copy is */
        char text[160];
        snprintf(text, sizeof text, "%.120s id=%d", perturb, echo.copy);
        setenv("ECHO_PERTURB", text, 1);
    }

    if (echo_mode->restarted && echo_mode->restarted()) { /* its rank is known after MPI_Init; the failed one's status stays */
        echo.app_rank = -2;
        return;
    }
    echo_status_open(me);
    echo_output_setup(execed);
    take_fatal_signals();
}

void echo_setup_after_init(void) {
    if (echo.app_rank == -1) return; /* no plan: pass-through */
    if (echo_status_opened()) take_fatal_signals(); /* again: the runtime's handlers installed since load go behind echo's */
    echo_mode->setup();
    echo_serial_setup();
    echo.active = 1;
    echo_records_open(echo_function_names, echo_nfunctions);
}

void echo_teardown_before_finalize(void) {
    if (!echo.active) return;
    echo.active = 0;
    echo_clock_teardown();
    echo_records_close();
    if (echo_hooks.finish) echo_hooks.finish();
    echo_events_close();
    if (echo_mode->teardown) echo_mode->teardown();
}

void echo_copy_ends(void) {
    echo_teardown_before_finalize();
    echo_mark_finalizing();
    PMPI_Finalize();
    echo_mark_finalized();
    exit(0);
}

static void copy_ends_early(const char *function, const char *what) {
    char detail[240];
    snprintf(detail, sizeof detail, "at call %llu the copy %s; its representative went on, so the copy ends with "
             "the job instead of ending it", (unsigned long long)echo_record_seq(), what);
    echo_event("copy-aborted", function, echo_record_seq(), -1, -1, 0, echo.copy, -1, detail);
    echo_teardown_before_finalize();
    echo_mark_aborted();
    PMPI_Finalize();
}

void echo_copy_aborts(int errorcode) {
    if (echo_copies_awaited()) PMPI_Abort(MPI_COMM_WORLD, errorcode); /* its representative would wait for it */
    char what[64];
    snprintf(what, sizeof what, "called MPI_Abort with error code %d", errorcode);
    copy_ends_early("MPI_Abort", what);
    exit(0);
}

/* from the exit handler (on_process_exit): the rest of exit() must not run, for it would end the process with the
 * status that ends the job */
void echo_copy_exits(int status) {
    if (echo_copies_awaited()) return; /* its representative would wait for it: the exit ends the job, as before */
    char what[64];
    snprintf(what, sizeof what, "exited with status %d before MPI_Finalize", status & 0xff);
    copy_ends_early("exit", what);
    fflush(NULL);
    _exit(0);
}

