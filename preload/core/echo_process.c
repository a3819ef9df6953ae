/* Process lifecycle: read the plan when the library is loaded, send copies'
 * output to their files, note how the process ends (for echorun's report of
 * who died), and build the rank model right after MPI_Init. */
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

echo_state_t echo = {.copy = 0, .ncopies = 1, .app_rank = -1};
ECHO_TLS int echo_depth;

/* plan header lines kept for echo_plan_value(), as many and as long as the plan has
 * (a Reinit plan has a line per rank): read once, looked up a few times at set-up */
static char **plan_keys, **plan_vals;
static int plan_nkeys, plan_capkeys;

static int term_fd = 2;      /* the terminal's stderr, even for redirected copies */
static int output_redirected; /* a copy whose stdout/stderr go to files */
static int status_fd = -1;   /* run_dir/procs/<real>.status */
static int exit_status;       /* and the rest of the status file: below */
static void write_status(void);
static int *plan_app, *plan_copy, *plan_ncopies; /* per real rank */

const char *echo_plan_value(const char *key) {
    for (int i = 0; i < plan_nkeys; i++)
        if (strcmp(plan_keys[i], key) == 0) return plan_vals[i];
    return NULL;
}

static void write_all(int fd, const char *s, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w <= 0) { if (errno == EINTR) continue; return; }
        s += w; n -= (size_t)w;
    }
}

/* "echo: application rank R copy C: <message>" into msg and on the terminal (a copy's own error file may be on a
 * full disk), with own_file in a copy's own error file too; its length */
static int say_line(char *msg, size_t cap, int own_file, const char *fmt, va_list ap) {
    int n = snprintf(msg, cap, "echo: application rank %d copy %d: ", echo.app_rank, echo.copy);
    n += vsnprintf(msg + n, cap - (size_t)n, fmt, ap);
    if (n > (int)cap - 2) n = (int)cap - 2;
    msg[n++] = '\n';
    write_all(term_fd, msg, (size_t)n);
    if (own_file && output_redirected) write_all(2, msg, (size_t)n);
    return n;
}

void echo_warn(const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    say_line(msg, sizeof msg, 0, fmt, ap);
    va_end(ap);
}

void echo_fatal(const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = say_line(msg, sizeof msg, 1, fmt, ap);
    va_end(ap);
    /* under ULFM (Reinit) MPI_Abort can wait forever once a process has failed;
     * there every survivor sees the failure and ends itself */
    if (echo.reinit) { /* its status says it exited (70), not that it was killed: echorun starts a Reinit job whose
                        * every process was killed again, never one that echo ended (echo/reinit.py) */
        exit_status = 70;
        write_status();
    }
    if (!echo.reinit && !echo.sdr) PMPI_Abort(MPI_COMM_WORLD, 70);
    /* SDR: Open MPI 5's mpirun under ULFM may never end a job whose processes all exited this way (MPICH's
     * coll/allred5 -n 10: 20 processes refused a call, mpirun reaped 18 and waited for ever); the first leaves
     * a note, and echorun ends what is left (jobstop.py) */
    if (echo.sdr && echo.run_dir[0]) {
        char path[1200];
        snprintf(path, sizeof path, "%s/echo.stopped", echo.run_dir);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd >= 0) {
            write_all(fd, msg, (size_t)n);
            close(fd);
        }
    }
    _exit(70);
}

double echo_epoch_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (double)now.tv_sec + now.tv_nsec * 1e-9;
}

void echo_unsupported(const char *fn) {
    if (echo.sdr)
        echo_fatal("%s is not supported in SDR mode (see docs/sdr.md for the calls SDR replicates; run it with "
                   "--mode clones or natively)", fn);
    echo_fatal("%s is not supported with clones (run without --clones, or see docs/replication.md "
               "for the calls echo replicates)", fn);
}

/* The status file holds one line, "<state> <signal> <time> <pid> <exit>", overwritten as the process moves
 * on: state "started", "finalizing" (in the real MPI_Finalize: every process has reached MPI_Finalize), then
 * "finalized" (or "stopped"); "signal" if a fatal signal came before MPI_Finalize (in or after it the state
 * stays: the process had done its work).  <signal>: the signal that ended it (0: none); <exit>: its exit status
 * once it returned from main or called exit() ("-" until then, and for ever if it was killed or echo ended it
 * with _exit, but for Reinit's: 70).  echorun reads them after the job: who died, and what the application itself returned, which
 * mpirun's status does not always say (under ULFM it counts the dead, and mpirun ends every process, even one
 * still in MPI_Finalize, once one exits non-zero). */
#define STATUS_LINE 96
static char pid_text[16];
static const char *status_state = "started";
static int exit_status = -1; /* -1: has not exited */
static char last_line[STATUS_LINE + 1]; /* what the status file says, put back if the program survives a signal */

static void write_status(void) {
    if (status_fd < 0) return;
    char *line = last_line, code[16] = "-";
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (exit_status >= 0) snprintf(code, sizeof code, "%d", exit_status);
    /* every line as long (spaces, then its newline last): a shorter one overwrites a longer one whole */
    snprintf(line, sizeof last_line, "%s 0 %ld.%09ld %s %s%*s", status_state, (long)ts.tv_sec, ts.tv_nsec, pid_text,
             code, STATUS_LINE, "");
    line[STATUS_LINE - 1] = '\n';
    if (pwrite(status_fd, line, STATUS_LINE, 0) < 0) return;
}

void echo_record_exit_status(int code) {
    exit_status = code & 0xff;
    write_status();
}

static void set_status(const char *what) {
    status_state = what;
    write_status();
}

/* glibc's on_exit: the status the program returned from main or gave exit(), as the shell will see it */
/* A copy's output goes to files under the run directory: a disk that refused part of it (full, a quota) fails the
 * program's writes, which programs do not check, so the copy says it on the terminal, where nothing is refused
 * (the representative's output, on the job's own stdout, is whole). */
static void say_output_cut(void) {
    if (!output_redirected) return;
    int err = fflush(stdout) != 0 ? errno : 0;
    if (!ferror(stdout) && !ferror(stderr)) return;
    echo_warn("its output in %s/output/rank%d.copy%d.%s was cut short: a write to it failed (%s); the application's "
              "own output (copy 0's) is whole", echo.run_dir, echo.app_rank, echo.copy,
              ferror(stdout) ? "out" : "err", err ? strerror(err) : "the disk refused it, or another error");
}

static void on_process_exit(int status, void *arg) {
    (void)arg;
    say_output_cut();
    exit_status = status & 0xff;
    write_status();
    if (status != 0 && echo.active && echo_mode->exits) echo_mode->exits(status); /* clones: a copy ends with the job */
}

static const int fatal_signals[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGTERM};

static size_t append(char *dst, size_t n, const char *s) {
    while (*s) dst[n++] = *s++;
    return n;
}

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
    if (status_fd >= 0) {
        char line[STATUS_LINE], digits[8];
        memset(line, ' ', sizeof line);
        /* killed in or after MPI_Finalize (mpirun ends every process once one exits non-zero): it had done its
         * work, which its state keeps saying */
        int late = !strcmp(status_state, "finalizing") || !strcmp(status_state, "finalized");
        size_t n = append(line, append(line, 0, late ? status_state : "signal"), " ");
        int d = 0, s = sig;
        do { digits[d++] = (char)('0' + s % 10); s /= 10; } while (s && d < 8);
        while (d) line[n++] = digits[--d];
        n = append(line, n, " 0 ");
        n = append(line, n, pid_text);
        n = append(line, n, " -");
        line[sizeof line - 1] = '\n';
        if (pwrite(status_fd, line, sizeof line, 0) < 0) { /* nothing more can be done */ }
    }
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
        if (!dies && status_fd >= 0 && last_line[0] && pwrite(status_fd, last_line, STATUS_LINE, 0) < 0) { /* lost */ }
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

static void redirect(int fd, const char *path) {
    int f = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f < 0) return;
    dup2(f, fd);
    close(f);
}

/* Plan format (written by echo/plan.py; docs/replication.md):
 *   echo-plan 1
 *   <key> <value>            header lines (run_id, run_dir, app_size, real_size, output, ...)
 *   proc <real> <app> <copy> <ncopies> <role>
 */
static void read_plan(const char *path, int me) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "echo: cannot read the plan %s (%s); was this started by echorun?\n", path, strerror(errno));
        exit(64);
    }
    char *line = NULL;
    size_t linecap = 0;
    int real_size = -1;
    while (getline(&line, &linecap, f) >= 0) {
        line[strcspn(line, "\n")] = 0;
        int r, a, c, nc;
        char role[128] = "";
        if (sscanf(line, "proc %d %d %d %d %127s", &r, &a, &c, &nc, role) >= 4) {
            if (real_size <= 0 || r < 0 || r >= real_size) continue;
            plan_app[r] = a; plan_copy[r] = c; plan_ncopies[r] = nc;
            if (r == me) snprintf(echo.role, sizeof echo.role, "%s", role);
            continue;
        }
        char *sp = strchr(line, ' ');
        if (!sp) continue;
        *sp = 0;
        if (plan_nkeys == plan_capkeys) {
            plan_capkeys = plan_capkeys ? 2 * plan_capkeys : 64;
            plan_keys = realloc(plan_keys, sizeof *plan_keys * (size_t)plan_capkeys);
            plan_vals = realloc(plan_vals, sizeof *plan_vals * (size_t)plan_capkeys);
            if (!plan_keys || !plan_vals) {
                fprintf(stderr, "echo: out of memory reading the plan %s\n", path);
                exit(64);
            }
        }
        plan_keys[plan_nkeys] = strdup(line);
        plan_vals[plan_nkeys] = strdup(sp + 1);
        plan_nkeys++;
        if (strcmp(line, "real_size") == 0) {
            real_size = atoi(sp + 1);
            plan_app = calloc((size_t)real_size, sizeof(int));
            plan_copy = calloc((size_t)real_size, sizeof(int));
            plan_ncopies = calloc((size_t)real_size, sizeof(int));
        }
    }
    free(line);
    fclose(f);
    echo.real_size = real_size;
    const char *v = echo_plan_value("app_size");
    echo.app_size = v ? atoi(v) : real_size;
    v = echo_plan_value("mode");
    echo.reinit = v && strcmp(v, "reinit") == 0;
    echo.sdr = v && strcmp(v, "sdr") == 0;
    /* Reinit virtualizes the world as clones do (one copy each): it can replace it; SDR has its own layer */
    echo.cloned = !echo.sdr && (echo.app_size != real_size || echo.reinit);
    echo_mode_choose();
    v = echo_plan_value("run_dir");
    snprintf(echo.run_dir, sizeof echo.run_dir, "%s", v ? v : ".");
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
    read_plan(plan, me);
    if (me >= echo.real_size) {
        fprintf(stderr, "echo: process %d is outside the plan of %d processes; run the job with echorun\n",
                me, echo.real_size);
        exit(64);
    }
    echo.real_rank = me;
    echo.app_rank = plan_app[me];
    echo.copy = plan_copy[me];
    echo.ncopies = plan_ncopies[me];
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

    char path[1200];
    if (echo_mode->restarted && echo_mode->restarted()) { /* its rank is known after MPI_Init; the failed one's status stays */
        echo.app_rank = -2;
        return;
    }
    snprintf(path, sizeof path, "%s/procs/%d.status", echo.run_dir, me);
    status_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    snprintf(pid_text, sizeof pid_text, "%d", (int)getpid());
    set_status("started");
    on_exit(on_process_exit, NULL);

    /* The terminal's stderr, kept across that exec: the first load took it before it sent fd 2 to the copy's own
     * file, and says where in ECHO_TERM_FD (else a copy under Valgrind said its words into its own file only, which
     * a full disk refuses). */
    const char *kept = execed ? getenv("ECHO_TERM_FD") : NULL;
    if (kept && fcntl(atoi(kept), F_GETFD) >= 0) {
        term_fd = atoi(kept);
    } else if ((term_fd = fcntl(2, F_DUPFD, 10)) >= 0) { /* not close-on-exec: exec.sh's exec keeps it */
        snprintf(num, sizeof num, "%d", term_fd);
        setenv("ECHO_TERM_FD", num, 1);
    } else {
        term_fd = 2;
    }
    const char *output = echo_plan_value("output");
    if (echo.copy > 0 && !(output && strcmp(output, "all") == 0)) {
        snprintf(path, sizeof path, "%s/output/rank%d.copy%d.out", echo.run_dir, echo.app_rank, echo.copy);
        redirect(1, path);
        snprintf(path, sizeof path, "%s/output/rank%d.copy%d.err", echo.run_dir, echo.app_rank, echo.copy);
        redirect(2, path);
        output_redirected = 1;
    }
    take_fatal_signals();
}

void echo_setup_after_init(void) {
    if (echo.app_rank == -1) return; /* no plan: pass-through */
    if (status_fd >= 0) take_fatal_signals(); /* again: the runtime's handlers installed since load go behind echo's */
    echo_mode->setup();
    echo_serial_setup();
    echo.active = 1;
    echo_records_open(echo_function_names, echo_nfunctions);
}

/* the plain and clone modes: the job's processes are the plan's, each rank's representative known */
void echo_rank_model_setup(void) {
    int real_rank, real_size;
    PMPI_Comm_rank(MPI_COMM_WORLD, &real_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &real_size);
    if (real_size != echo.real_size || real_rank != echo.real_rank)
        echo_fatal("the job has %d processes but its plan has %d; start it with echorun, not mpirun", real_size,
                   echo.real_size);
    echo.rep_real_rank = malloc(sizeof(int) * (size_t)echo.app_size);
    for (int r = 0; r < real_size; r++)
        if (plan_copy[r] == 0) echo.rep_real_rank[plan_app[r]] = r;
    const char *worlds = echo_plan_value("worlds");
    echo.independent = echo.cloned && worlds && !strcmp(worlds, "independent");
}

void echo_roles_setup(void) {
    echo_slow_setup();
    echo_collectors_init(); /* declares record slots: before the records are opened */
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

/* A copy's own end before MPI_Finalize, where its representative went on: MPI_Abort, or exit() with a non-zero
 * status (a write its file view refused on a full disk, a corruption that sent it down the program's error path).
 * What made it end is the copy's alone, and a copy only watches, so it must not end the application (mpirun ends
 * every process once one aborts or exits non-zero).  It ends as a parted copy does, with the job: it reads what its
 * representative still sends (the mode's teardown) and finalizes with everyone; its status says "aborted", so
 * echorun counts it a copy that did not finish (never a clean run), and its event says how it ended.  If the
 * representative ends so too, its end ends the job with the application's status, as natively.  Under --sdc stop
 * and vote the representative waits for each copy's data at every checked call (echo_copies_awaited): a copy that
 * left would be waited for for ever, so there its end ends the job, as any process's does. */
int echo_copies_awaited(void) {
    const char *sdc = echo_plan_value("sdc");
    return sdc && (strcmp(sdc, "stop") == 0 || strcmp(sdc, "vote") == 0);
}

static void copy_ends_early(const char *function, const char *what) {
    char detail[240];
    snprintf(detail, sizeof detail, "at call %llu the copy %s; its representative went on, so the copy ends with "
             "the job instead of ending it", (unsigned long long)echo_record_seq(), what);
    echo_event("copy-aborted", function, echo_record_seq(), -1, -1, 0, echo.copy, -1, detail);
    echo_teardown_before_finalize();
    set_status("aborted");
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

void echo_mark_finalizing(void) { set_status("finalizing"); }
void echo_mark_finalized(void) { set_status("finalized"); }
void echo_mark_stopped(void) { set_status("stopped"); }

/* ---- the public API (echo.h), used by the Python side through cffi ---- */
/* Valgrind runs the process on its own emulation of the CPU (exec.sh starts a copy under it, its preload first):
 * what the hardware traps or tracks for echo elsewhere (the time-stamp counter's fault, soft-dirty pages) is not
 * there, and the copy must do without it. */
int echo_under_valgrind(void) {
    const char *pre = getenv("LD_PRELOAD");
    return pre && strstr(pre, "vgpreload") != NULL;
}

int echo_app_rank(void) { return echo.app_rank; }
int echo_copy_index(void) { return echo.copy; }
int echo_copies(void) { return echo.ncopies; }
int echo_is_cloned(void) { return echo.cloned; }
const char *echo_role(void) { return echo.role; }
const char *echo_run_dir(void) { return echo.run_dir; }
