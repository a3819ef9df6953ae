/* Reinit mode (echorun --mode reinit): global restart without re-deploying.
 *
 * The library owns the application's MPI_COMM_WORLD (it is the world entry of
 * the communicator table, every call on it uses world.real), so after a
 * process failure it can put a repaired world in its place:
 *   1. a survivor's MPI call returns a ULFM error (every real communicator
 *      returns errors instead of aborting);
 *   2. it revokes the world and every communicator it knows, so every other
 *      survivor's pending or next call fails too and joins the repair;
 *   3. the survivors shrink the world, start as many processes as are
 *      missing (the same command line, with echo's environment, told they
 *      restart and which rank each takes), merge with them and order the
 *      merged communicator by the old ranks: every rank keeps its number;
 *   4. all other MPI state of the application is forgotten, as after MPI_Init,
 *      and survivors return to the restart point: MPI_Reinit (siglongjmp) in C,
 *      an MPI error code that echo.reinit catches in Python.
 * A failure during the repair (of a survivor, or of a process just started) is
 * a failure like any other: the repair starts again from a new shrink and
 * starts what is missing then (see "the repair" below), at most MAX_ATTEMPTS
 * times. */
#define _GNU_SOURCE
#define ECHO_LIBRARY
#include "echo_reinit_internal.h"
#include "echo.h"
#include "echo_reinit.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHILD_ENV ECHO_RESTARTED_ENV

static sigjmp_buf restart_point;
static volatile int restart_ready;    /* inside MPI_Reinit: failures return there */
static int python_mode;               /* failures return error_code instead of jumping */
static int error_code = MPI_ERR_OTHER; /* "the world was re-initialized", for Python */
static MPI_Reinit_state_t start_state = MPI_REINIT_NEW;
static int repairs;
static double t_failure_seen;         /* for the recovery-time events */
static double job_start;              /* rank 0's MPI_Init, epoch seconds: injected kills are timed from it */

int echo_reinit_is_child(void) { return getenv(CHILD_ENV) != NULL; }

static int is_failure(int rc) {
    int cls = rc;
    PMPI_Error_class(rc, &cls);
    return cls == MPIX_ERR_PROC_FAILED || cls == MPIX_ERR_PROC_FAILED_PENDING || cls == MPIX_ERR_REVOKED;
}

/* communicators echo itself uses on the world (checkpoints): revoked with the application's */
static MPI_Comm *internal;
static int ninternal, capinternal;

void echo_reinit_internal_comm(MPI_Comm c) {
    if (ninternal == capinternal) {
        capinternal = capinternal ? 2 * capinternal : 8;
        internal = realloc(internal, sizeof *internal * (size_t)capinternal);
        if (!internal) echo_fatal("out of memory registering a communicator of echo's own");
    }
    internal[ninternal++] = c;
}

/* ---- the command line, to start a failed rank again ---- */

static char **command_line(int *n) {
    FILE *f = fopen("/proc/self/cmdline", "r");
    if (!f) echo_fatal("cannot read /proc/self/cmdline to restart a failed rank");
    /* as long as the command line is: a restarted rank must get every argument */
    char *buf = NULL;
    size_t len = 0, cap = 0, got;
    do {
        if (len == cap && !(buf = realloc(buf, cap = cap ? 2 * cap : 65536)))
            echo_fatal("out of memory reading /proc/self/cmdline to restart a failed rank");
        got = fread(buf + len, 1, cap - len, f);
        len += got;
    } while (got > 0);
    fclose(f);
    int count = 0;
    for (size_t i = 0; i < len; i++) count += buf[i] == 0;
    char **argv = calloc((size_t)count + 1, sizeof *argv);
    for (size_t i = 0, k = 0; i < len && (int)k < count; k++) {
        argv[k] = buf + i;
        i += strlen(buf + i) + 1;
    }
    *n = count;
    return argv;
}

/* the note that makes echorun end what is left of the job (jobstop.py): Open MPI under ULFM may leave survivors
 * running once a process ended the job's way (an abort, this watchdog) */
void echo_reinit_stop_note(const char *text) {
    char path[1300];
    snprintf(path, sizeof path, "%s/echo.stopped", echo.run_dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) {
        dprintf(fd, "echo: %s\n", text);
        close(fd);
    }
}

/* ---- the kill injector's moments (core/echo_kills.c), for tests and demos ---- */

/* kills planned in a repair ("kill:rank=R,repair=N"): the process holding the rank dies in the job's nth repair once
 * the missing processes were started, a failure in the middle of a repair at a step a test can name */
static void kill_in_repair(void) {
    char n[16];
    snprintf(n, sizeof n, "%d", repairs);
    echo_kill_moment("repair", n, "in its planned repair");
}

/* kills planned in MPI_Finalize ("kill:rank=R,at=finalize"): once the rank said it reached it */
static void kill_in_finalize(void) { echo_kill_moment("finalize", NULL, "in MPI_Finalize"); }

/* every kill strikes once in the job: a process started in place of a killed one is not killed again */
static void arm_kills(void) {
    echo_kills_plan("reinit", 0, 1);
    echo_kills_arm(job_start); /* timed kills count from the job's MPI_Init */
}

/* ---- the repair ----
 *
 * A process may fail at any moment of a repair too (a survivor, or a process
 * just started in place of a failed one), and ULFM's operations then succeed
 * at some processes and fail at others.  So the repair goes in attempts, and
 * every step of an attempt ends with a decision every process shares: the
 * survivors agree on it (MPIX_Comm_agree, which gives every survivor the same
 * answer), and the processes started in this attempt hear it from the
 * survivor that started them (their root).  A process whose step failed
 * revokes the attempt's communicators first, so no one waits in the step for
 * it.  When a step failed anywhere, every survivor starts again from a new
 * shrink, and the processes started in the abandoned attempt end themselves
 * (they are failed processes like any other; the next attempt starts what is
 * missing then).  Only the root spawns, over MPI_COMM_SELF: Open MPI's spawn
 * is not fault tolerant, and this way no other survivor is inside it when a
 * process fails; the others meet the new processes with
 * MPI_Intercomm_create, which a revoke interrupts. */

#define MAX_ATTEMPTS 10       /* the repair starts again at most this often, then the job ends with a message */
#define TAG_JOIN 7001
#define JOIN_LIMIT_S 120.0    /* a restarted process that has not joined by then ends itself (said below) */
#define ROOT_LIMIT_S 60.0     /* a root whose new processes have not joined by then ends itself (said below) */
#define RANK_ENV "ECHO_REINIT_RANK"
#define FACTS_ENV "ECHO_REINIT_FACTS"

static MPI_Comm self_comm = MPI_COMM_NULL; /* the root spawns over it: errors return (MPI_COMM_SELF's abort) */
static volatile int joined;                /* a restarted process: it is part of the repaired world */
static int *was_restarted;                 /* by application rank: restarted by this repair */
static int attempts;                       /* of this repair */
static volatile double root_deadline;      /* the root, while it starts processes: 0 when it is not */
static double t_shrunk, t_spawned;         /* of the attempt that repaired the world, for its event */

static void debug(const char *fmt, ...) {
    if (!getenv("ECHO_REINIT_DEBUG")) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "echo: reinit debug: rank %d pid %d: ", echo.app_rank, (int)getpid());
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* one attempt's communicators (MPI_COMM_NULL until made) */
typedef struct {
    MPI_Comm shrunk; /* the live processes of the world: survivors and processes that joined in an earlier attempt */
    MPI_Comm spawned; /* the root's intercommunicator with the processes it started */
    MPI_Comm kids;    /* the root (rank 0) and the processes it started (1..nkids); the started ones have it too */
    int nkids;
    MPI_Comm inter, merged, world;
} attempt_t;

static const attempt_t NO_ATTEMPT = {MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL, 0, MPI_COMM_NULL, MPI_COMM_NULL,
                                     MPI_COMM_NULL};

/* a step failed here: no one may wait in it for this process (the handles are left to MPI, as after a failure) */
static void abandon(attempt_t *a) {
    MPI_Comm all[] = {a->shrunk, a->spawned, a->kids, a->inter, a->merged, a->world};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (all[i] != MPI_COMM_NULL) PMPIX_Comm_revoke(all[i]);
}

/* a communicator just made: errors return (1), or there is none (0; MPI may leave the handle undefined) */
static int returns_errors(int rc, MPI_Comm *c) {
    if (rc != MPI_SUCCESS || *c == MPI_COMM_NULL) {
        *c = MPI_COMM_NULL;
        return 0;
    }
    PMPI_Comm_set_errhandler(*c, MPI_ERRORS_RETURN);
    return 1;
}

/* Open MPI reports no failure of a process it is starting: a root whose new process died before it connected
 * waits for it for ever (in MPI_Intercomm_merge, or a send to it).  So a root that has not finished starting them by
 * ROOT_LIMIT_S ends itself: that failure Open MPI reports, and the other survivors start again without it. */
static void *watch_root_steps(void *arg) {
    (void)arg;
    for (;;) {
        usleep(100000);
        double limit = root_deadline;
        if (limit > 0 && echo_epoch_now() > limit) {
            fprintf(stderr, "echo: Reinit: rank %d ends itself: the processes it was starting did not join in %.0f s "
                    "(Open MPI reports no failure of a process it is starting); the other survivors, if any are left, "
                    "start them and this rank again\n", echo.app_rank, ROOT_LIMIT_S);
            kill(getpid(), SIGKILL);
        }
    }
    return NULL;
}

/* a survivor: did the step succeed everywhere?  (the root hears first from the processes it started: one that
 * failed a step ends itself, which the root's receive reports) */
static int settle(attempt_t *a, int ok, const char *step) {
    if (!ok) abandon(a);
    for (int i = 1; a->kids != MPI_COMM_NULL && i <= a->nkids; i++) {
        int theirs = 0;
        if (PMPI_Recv(&theirs, 1, MPI_INT, i, TAG_JOIN, a->kids, MPI_STATUS_IGNORE) != MPI_SUCCESS || !theirs) ok = 0;
    }
    int flag = ok, agreed = PMPIX_Comm_agree(a->shrunk, &flag) == MPI_SUCCESS && flag;
    for (int i = 1; a->kids != MPI_COMM_NULL && i <= a->nkids; i++)
        PMPI_Send(&agreed, 1, MPI_INT, i, TAG_JOIN, a->kids);
    if (!agreed) {
        debug("attempt %d: %s failed %s", attempts, step, ok ? "elsewhere" : "here");
        abandon(a);
    }
    return agreed;
}

/* a process started in an attempt that was abandoned, or that cannot join: it ends as a failed process does
 * (the survivors start what is missing again) */
static void give_up(attempt_t *a, const char *step) {
    debug("restarted process gives up (%s)", step);
    abandon(a);
    kill(getpid(), SIGKILL);
}

/* a process started in this attempt: its side of settle() */
static void kid_settle(attempt_t *a, int ok, const char *step) {
    int one = 1, decided = 0;
    if (!ok || PMPI_Send(&one, 1, MPI_INT, 0, TAG_JOIN, a->kids) != MPI_SUCCESS ||
        PMPI_Recv(&decided, 1, MPI_INT, 0, TAG_JOIN, a->kids, MPI_STATUS_IGNORE) != MPI_SUCCESS || !decided)
        give_up(a, step);
}

/* the last step, where every process holds `merged`: order it by the old ranks (every rank keeps its number) */
static int order(attempt_t *a) {
    int none_dead; /* no split over a dead member: echo_ft_knows_dead says why */
    if (echo_ft_agree_none_dead(a->merged, &none_dead) != MPI_SUCCESS || !none_dead) {
        debug("attempt %d: a process of the merged world died", attempts);
        abandon(a);
        return 0;
    }
    int ok = returns_errors(echo_ft_split(a->merged, 0, echo.app_rank, &a->world), &a->world);
    int flag = ok;
    if (PMPIX_Comm_agree(a->merged, &flag) == MPI_SUCCESS && flag) return 1;
    debug("attempt %d: ordering the world failed %s", attempts, ok ? "elsewhere" : "here");
    abandon(a);
    return 0;
}

/* the root: start the missing ranks (each through env(1): mpirun gives spawned processes none of the job's
 * environment, and they need echo's), each on the host chosen for it (echo_placement.c) */
static int start(attempt_t *a, const int *missing, int nmissing, char (*where)[64]) {
    if (nmissing < 1) return 0;
    int ncmd;
    char **cmd = command_line(&ncmd);
    char *preload = NULL, *plan = NULL, *coll = NULL, *osc = NULL, *list = calloc((size_t)nmissing, 12);
    const char *v;
    if (asprintf(&preload, "LD_PRELOAD=%s", (v = getenv("LD_PRELOAD")) ? v : "") < 0 ||
        asprintf(&plan, "ECHO_PLAN=%s", (v = getenv("ECHO_PLAN")) ? v : "") < 0 ||
        asprintf(&coll, "OMPI_MCA_coll=%s", (v = getenv("OMPI_MCA_coll")) ? v : "") < 0 ||
        asprintf(&osc, "OMPI_MCA_osc=%s", (v = getenv("OMPI_MCA_osc")) ? v : "") < 0)
        echo_fatal("Reinit: out of memory starting the failed ranks again");
    for (int i = 0; i < nmissing; i++) sprintf(list + strlen(list), "%s%d", i ? "," : "", missing[i]);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    size_t facts_len = strlen(list) + 512;
    char *facts = malloc(facts_len);
    snprintf(facts, facts_len, FACTS_ENV "=%.6f %d %d %.6f %d %s %s", job_start, repairs, attempts, t_failure_seen,
             (int)getpid(), host, list);
    char **commands = calloc((size_t)nmissing, sizeof *commands), ***argvs = calloc((size_t)nmissing, sizeof *argvs);
    char (*ranks)[32] = calloc((size_t)nmissing, 32);
    int *ones = calloc((size_t)nmissing, sizeof *ones);
    MPI_Info *infos = calloc((size_t)nmissing, sizeof *infos);
    for (int i = 0; i < nmissing; i++) {
        snprintf(ranks[i], 32, RANK_ENV "=%d", missing[i]);
        char **args = argvs[i] = calloc((size_t)ncmd + 9, sizeof *args);
        int k = 0;
        args[k++] = preload;
        args[k++] = plan;
        args[k++] = CHILD_ENV "=1";
        args[k++] = ranks[i];
        args[k++] = facts;
        if (getenv("ECHO_REINIT_DEBUG")) args[k++] = "ECHO_REINIT_DEBUG=1";
        if (getenv("OMPI_MCA_coll")) args[k++] = coll; /* the job's collectives (echorun leaves out coll/han) */
        if (getenv("OMPI_MCA_osc")) args[k++] = osc;   /* and its one-sided component (echorun leaves out osc/sm) */
        for (int j = 0; j < ncmd; j++) args[k++] = cmd[j];
        commands[i] = "/usr/bin/env";
        ones[i] = 1;
        infos[i] = MPI_INFO_NULL;
        if (!echo_placement_simulated()) {
            PMPI_Info_create(&infos[i]);
            PMPI_Info_set(infos[i], "host", where[i]);
        }
    }
    int ok = returns_errors(PMPI_Comm_spawn_multiple(nmissing, commands, argvs, ones, infos, 0, self_comm,
                                                     &a->spawned, MPI_ERRCODES_IGNORE), &a->spawned);
    for (int i = 0; i < nmissing; i++) {
        if (infos[i] != MPI_INFO_NULL) PMPI_Info_free(&infos[i]);
        free(argvs[i]);
    }
    free(commands);
    free(argvs);
    free(ranks);
    free(ones);
    free(infos);
    free(list);
    free(facts);
    free(preload);
    free(plan);
    free(coll);
    free(osc);
    free(cmd);
    if (!ok) return 0;
    echo_placement_share(a->spawned, 1, nmissing, echo.app_size);
    ok = returns_errors(PMPI_Intercomm_merge(a->spawned, 0, &a->kids), &a->kids);
    if (ok) a->nkids = nmissing;
    return ok;
}

/* rank 0 of the repaired world says what was repaired */
static void say_repaired(double t_done) {
    char detail[256];
    int first = -1, nrestarted = 0;
    for (int r = 0; r < echo.app_size; r++) {
        if (was_restarted[r] && first < 0) first = r;
        nrestarted += was_restarted[r];
    }
    /* epoch seconds, to set against the time of the failure */
    snprintf(detail, sizeof detail, "failed %d first %d seen %.6f shrunk %.6f spawned %.6f repaired %.6f attempts %d",
             nrestarted, first, t_failure_seen, t_shrunk, t_spawned, t_done, attempts);
    echo_event("reinit", "repair", (uint64_t)repairs, 0, first, 0, 0, -1, detail);
    fprintf(stderr, "echo: Reinit: rank%s", nrestarted > 1 ? "s" : "");
    for (int r = 0; r < echo.app_size; r++)
        if (was_restarted[r]) fprintf(stderr, " %d", r);
    fprintf(stderr, " failed; restarted in %.3f s", t_done - t_failure_seen);
    if (attempts > 1) fprintf(stderr, " (%d attempts: processes failed during the repair)", attempts);
    fputc('\n', stderr);
}

/* the repair, from `cur` (a world with failed processes, revoked): returns the repaired world.  Survivors call it
 * after a failure; a restarted process calls it when the attempt that started it failed at its last step (it is
 * then a member of the world being repaired like the survivors) */
static MPI_Comm rebuild(MPI_Comm cur) {
    char (*where)[64] = calloc((size_t)echo.app_size, 64);
    int *moved_rank = calloc((size_t)echo.app_size, sizeof(int)); /* by rank: restarted off a lost host */
    int *present = calloc((size_t)echo.app_size, sizeof(int)), *missing = calloc((size_t)echo.app_size, sizeof(int));
    for (;;) {
        if (++attempts > MAX_ATTEMPTS)
            echo_fatal("Reinit: the world could not be repaired: processes kept failing during the repair (%d "
                       "attempts); the job ends", MAX_ATTEMPTS);
        attempt_t a = NO_ATTEMPT;
        if (!returns_errors(echo_ft_shrink(cur, &a.shrunk), &a.shrunk)) {
            debug("attempt %d: MPIX_Comm_shrink failed", attempts);
            continue;
        }
        t_shrunk = t_spawned = echo_epoch_now();
        int n, me;
        PMPI_Comm_size(a.shrunk, &n);
        PMPI_Comm_rank(a.shrunk, &me);
        if (!settle(&a, PMPI_Allgather(&echo.app_rank, 1, MPI_INT, present, 1, MPI_INT, a.shrunk) == MPI_SUCCESS,
                    "learning who is alive")) {
            cur = a.shrunk;
            continue;
        }
        int nmissing = 0;
        for (int r = 0; r < echo.app_size; r++) {
            int here = 0;
            for (int i = 0; i < n; i++) here |= present[i] == r;
            if (!here) missing[nmissing++] = r;
        }
        debug("attempt %d: %d alive, %d missing", attempts, n, nmissing);
        if (nmissing == 0) {
            a.merged = a.shrunk;
        } else {
            /* every survivor makes the same choice (the root's counts; the others keep their tables up to date) */
            echo_placement_choose(missing, nmissing, echo.app_size, where, moved_rank);
            for (int i = 0; i < nmissing; i++) was_restarted[missing[i]] = 1;
            if (me == 0) root_deadline = echo_epoch_now() + ROOT_LIMIT_S;
            int ok = settle(&a, me != 0 || start(&a, missing, nmissing, where), "MPI_Comm_spawn of the failed ranks");
            t_spawned = echo_epoch_now();
            if (ok) kill_in_repair(); /* the test injector's moment: the repair is half done */
            ok = ok && settle(&a, returns_errors(PMPI_Intercomm_create(a.shrunk, 0, me == 0 ? a.kids : MPI_COMM_NULL,
                                                                       1, TAG_JOIN, &a.inter), &a.inter),
                              "MPI_Intercomm_create with the restarted ranks");
            ok = ok && settle(&a, returns_errors(PMPI_Intercomm_merge(a.inter, 0, &a.merged), &a.merged),
                              "MPI_Intercomm_merge with the restarted ranks");
            root_deadline = 0; /* the new processes are members of `merged`: their failures are reported */
            if (!ok) {
                cur = a.shrunk;
                continue;
            }
        }
        if (!order(&a)) {
            cur = a.merged;
            continue;
        }
        if (echo.app_rank == 0) {
            say_repaired(echo_epoch_now());
            /* the ranks of a lost host: where they went (not a rank that failed where others survived: it
             * restarts on its own host, and was once labelled "host lost" with them) */
            for (int i = 0; i < nmissing; i++)
                if (moved_rank[missing[i]])
                    fprintf(stderr, "echo: Reinit: rank %d (host lost) restarted on %s%s\n", missing[i], where[i],
                            echo_placement_simulated() ? " (simulated hosts)" : "");
        }
        free(where);
        free(moved_rank);
        free(present);
        free(missing);
        return a.world;
    }
}

/* a survivor: repair the world; returns the new one */
static MPI_Comm repair(MPI_Comm old) {
    repairs++;
    attempts = 0;
    memset(was_restarted, 0, sizeof(int) * (size_t)echo.app_size);
    return rebuild(old);
}

/* what the root told a restarted process in its environment: <job start> <repairs> <attempts> <failure seen>
 * <root's pid> <root's host> <the ranks restarted with it> */
typedef struct { double job_start, seen; int repairs, attempts, root_pid; char root_host[256]; const char *ranks; } facts_t;

static int read_facts(facts_t *f) {
    const char *v = getenv(FACTS_ENV);
    int at = 0;
    if (!v || sscanf(v, "%lf %d %d %lf %d %255s %n", &f->job_start, &f->repairs, &f->attempts, &f->seen, &f->root_pid,
                     f->root_host, &at) != 6 || !at)
        return 0;
    f->ranks = v + at; /* "r1,r2,...": as long as the job is large */
    return 1;
}

/* a restarted process whose root died while it was being started waits in MPI_Init for ever (Open MPI's spawn is
 * not fault tolerant), and mpirun for it: it ends itself when its root is gone, or after JOIN_LIMIT_S */
static void *watch_root(void *arg) {
    (void)arg;
    facts_t f;
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    if (!read_facts(&f)) return NULL;
    double t0 = echo_epoch_now();
    while (!joined) {
        usleep(100000);
        int root_gone = strcmp(host, f.root_host) == 0 && kill(f.root_pid, 0) != 0 && errno == ESRCH;
        if (!joined && (root_gone || echo_epoch_now() - t0 > JOIN_LIMIT_S)) {
            /* said: if no survivor is left, this is why the job ends */
            if (root_gone)
                fprintf(stderr, "echo: Reinit: a process restarted as rank %s ends: the survivor starting it failed "
                        "(the others, if any are left, start it again)\n", getenv(RANK_ENV));
            else
                fprintf(stderr, "echo: Reinit: a process restarted as rank %s ends: it could not join the survivors "
                        "in %.0f s\n", getenv(RANK_ENV), JOIN_LIMIT_S);
            kill(getpid(), SIGKILL);
        }
    }
    return NULL;
}

__attribute__((constructor)) static void watch_if_restarted(void) {
    if (!echo_reinit_is_child() || !getenv("ECHO_PLAN")) return;
    pthread_t th;
    if (pthread_create(&th, NULL, watch_root, NULL) == 0) pthread_detach(th);
}

/* a restarted process, in MPI_Init: join the survivors and take the rank of
 * the failed process it replaces */
static void join_survivors(void) {
    facts_t f;
    const char *rank = getenv(RANK_ENV);
    if (!rank || !read_facts(&f)) echo_fatal("Reinit: a restarted process was not told its rank (an echo bug)");
    echo.app_rank = atoi(rank);
    setenv("ECHO_APP_RANK", rank, 1);
    job_start = f.job_start;
    repairs = f.repairs;
    t_failure_seen = f.seen;
    attempts = f.attempts;
    t_shrunk = t_spawned = echo_epoch_now(); /* for its event if it reports the repair: it started now */
    for (const char *p = f.ranks; *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
        int r = atoi(p);
        if (r >= 0 && r < echo.app_size) was_restarted[r] = 1;
    }
    /* its own files: events/<n>.jsonl beside the plan's processes, never over the failed one's */
    echo.real_rank = echo.real_size + (int)getpid();
    arm_kills(); /* a kill planned for its rank while the rank was being restarted strikes it now */
    attempt_t a = NO_ATTEMPT;
    PMPI_Comm_get_parent(&a.spawned);
    if (a.spawned == MPI_COMM_NULL) echo_fatal("Reinit: a restarted process has no parent to join");
    PMPI_Comm_set_errhandler(a.spawned, MPI_ERRORS_RETURN);
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    echo_placement_share(a.spawned, 0, 0, echo.app_size);
    if (!returns_errors(PMPI_Intercomm_merge(a.spawned, 1, &a.kids), &a.kids)) give_up(&a, "joining its root");
    kid_settle(&a, 1, "MPI_Comm_spawn");
    kill_in_repair();
    kid_settle(&a, returns_errors(PMPI_Intercomm_create(MPI_COMM_WORLD, 0, a.kids, 0, TAG_JOIN, &a.inter), &a.inter),
               "MPI_Intercomm_create");
    kid_settle(&a, returns_errors(PMPI_Intercomm_merge(a.inter, 1, &a.merged), &a.merged), "MPI_Intercomm_merge");
    joined = 1; /* a member of the world from here: a failure now is repaired as any */
    if (order(&a)) {
        echo.reps_world = a.world;
        if (echo.app_rank == 0) say_repaired(echo_epoch_now()); /* rank 0 was restarted itself */
    } else {
        echo.reps_world = rebuild(a.merged);
    }
    debug("restarted process joined");
    start_state = MPI_REINIT_RESTARTED;
}

/* drop every communicator of the application but its world; the world's entry
 * gets the repaired communicator */
static void forget_application_state(MPI_Comm world) {
    echo_comm_forget_all();
    echo_comm_t *w = echo_comm_get(MPI_COMM_WORLD, "Reinit");
    w->real = world;
    echo.reps_world = world;
}

int echo_reinit_windows;

int echo_reinit_can_restart(void) { return restart_ready; }

/* A program that made windows is restarted by a new deployment, not repaired in place: Open MPI 5.0's osc/rdma
 * judges a restarted (spawned) process's locality otherwise than the survivors do, so a window made in a world
 * repaired in place runs different collectives in different processes and never completes (a hang).  Each
 * process ends as a killed one does; once none is left, echorun starts the job again (echo/reinit.py), every
 * process RESTARTED from the newest checkpoint every rank has. */
void echo_reinit_redeploy(const char *why) {
    fprintf(stderr, "echo: Reinit: rank %d: %s; the program made one-sided windows, which Open MPI 5.0 cannot make "
            "again in a world repaired in place: this process ends so that echorun starts the job again\n",
            echo.app_rank, why);
    fflush(NULL);
    kill(getpid(), SIGKILL);
    for (;;) pause();
}

/* Called by the generated wrappers when a call failed: nothing for other errors */
int echo_reinit_on_error(int rc) {
    if (!echo.reinit || !is_failure(rc)) return rc;
    if (!restart_ready)
        echo_fatal("Reinit: a process failed before MPI_Reinit was called (or after it returned): nothing to "
                   "restart from; the job ends");
    if (echo_reinit_windows) echo_reinit_redeploy("a process failed");
    t_failure_seen = echo_epoch_now();
    /* every survivor must join the repair: revoking makes their calls fail */
    echo_comm_revoke_all();
    for (int i = 0; i < ninternal; i++) PMPIX_Comm_revoke(internal[i]);
    ninternal = 0;
    MPI_Comm old = echo.reps_world;
    MPI_Comm world = repair(old);
    forget_application_state(world);
    echo_depth = 0;
    if (python_mode) return error_code;
    siglongjmp(restart_point, 1);
}

#define FINALIZE_WAIT_S 20.0 /* a failure in MPI_Finalize: how long the ranks there wait for the others */

/* <run dir>/reinit-final/<deployment>.<rank>: this rank reached MPI_Finalize (its application's work is done) */
static void final_mark(char *path, size_t n, int rank) {
    const char *d = getenv("ECHO_REINIT_DEPLOYMENT");
    snprintf(path, n, "%s/reinit-final/%s.%d", echo.run_dir, d ? d : "1", rank);
}

/* whether every rank reached MPI_Finalize, waiting up to `limit` seconds for the last ones (a failure is seen
 * at once by the ranks already there, while the others may be printing their results) */
static int every_rank_reached_finalize(double limit) {
    char path[1300];
    for (double end = echo_epoch_now() + limit;; usleep(50000)) {
        int all = 1;
        for (int r = 0; r < echo.app_size && all; r++) {
            final_mark(path, sizeof path, r);
            all = access(path, F_OK) == 0;
        }
        if (all) return 1;
        if (echo_epoch_now() > end) return 0;
    }
}

/* for echorun: the application reached its end (every rank's MPI_Finalize); each rank writes it, so that it is
 * written whichever of them a failure ends next */
static void say_done(void) {
    char path[1200];
    snprintf(path, sizeof path, "%s/reinit.done", echo.run_dir);
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "repairs %d\n", repairs);
        fclose(f);
    }
}

/* MPI_Finalize.  The application has finished once every rank reached it: a process that fails from then on
 * (in the real MPI_Finalize, or in the agreement below) loses nothing, and the job is a success (echorun reads
 * reinit.done); one that fails before every rank reached it ends the job (exit 70: the ranks that finished
 * cannot go back to their restart point).  After a repair, Open MPI 5.0.11's MPI_Finalize can wait forever for
 * the failed processes (its closing fence spans the original job and every spawned one), so once every rank of
 * the repaired world is here, each process ends itself as MPI_Finalize would end it. */
void echo_reinit_finalize(void) {
    char path[1300];
    snprintf(path, sizeof path, "%s/reinit-final", echo.run_dir);
    mkdir(path, 0755);
    final_mark(path, sizeof path, echo.app_rank);
    FILE *f = fopen(path, "w");
    if (f) fclose(f);
    kill_in_finalize(); /* the test injector's moment */
    int repaired = repairs > 0 || echo_reinit_is_child();
    int any = 0, failed = PMPI_Allreduce(&repaired, &any, 1, MPI_INT, MPI_MAX, echo.reps_world) != MPI_SUCCESS;
    if (failed) {
        if (!every_rank_reached_finalize(FINALIZE_WAIT_S)) {
            const char *why = "Reinit: a process failed before every rank reached MPI_Finalize: the ranks that "
                              "finished cannot go back to their restart point; the job ends";
            echo_reinit_stop_note(why); /* echorun ends what is left (a rank still at work may repair on) */
            echo_fatal("%s", why);
        }
        fprintf(stderr, "echo: Reinit: rank %d: a process failed in MPI_Finalize, once every rank had reached it: "
                "the application had finished\n", echo.app_rank);
        any = 1; /* end as after a repair: the real MPI_Finalize would wait for the failed process */
    } else if (!any) {
        say_done();
        return;
    }
    /* say so before anyone can end (once a process has ended without MPI_Finalize, mpirun ends the others,
     * maybe before they wrote this) */
    say_done();
    echo_mark_finalized();
    fflush(NULL); /* the application's output too */
    if (!failed) PMPI_Barrier(echo.reps_world);
    echo_teardown_before_finalize();
    fflush(NULL);
    _exit(0);
}

/* ---- the API ---- */

int echo_reinit_run(int *argc, char ***argv, MPI_Restart_point resilient_main) {
    if (!echo.reinit) return resilient_main(*argc, *argv, MPI_REINIT_NEW); /* not in reinit mode */
    MPI_Reinit_state_t state = start_state;
    if (sigsetjmp(restart_point, 1)) state = MPI_REINIT_REINITED;
    restart_ready = 1;
    int rc = resilient_main(*argc, *argv, state);
    restart_ready = 0;
    return rc;
}

/* Python: echo.reinit() calls these (echo.h) */
int echo_reinit_begin(void) {
    python_mode = 1;
    restart_ready = 1;
    return start_state;
}
void echo_reinit_end(void) { restart_ready = 0; }
int echo_reinit_error_code(void) { return error_code; }
int echo_reinit_repairs(void) { return repairs; }

/* ---- setting up, and the kill injector for tests and demos ---- */

void echo_reinit_setup(void) {
    echo_ft_survive_sigpipe(); /* a survivor must outlive a peer host's killed processes (core/echo_ulfm.c) */
    was_restarted = calloc((size_t)echo.app_size, sizeof *was_restarted);
    PMPI_Comm_dup(MPI_COMM_SELF, &self_comm);
    PMPI_Comm_set_errhandler(self_comm, MPI_ERRORS_RETURN);
    pthread_t th;
    if (pthread_create(&th, NULL, watch_root_steps, NULL) == 0) pthread_detach(th);
    /* errors about a communicator MPI no longer knows are raised on MPI_COMM_WORLD: in a repair they are
     * failures like others, never the end of the process */
    PMPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (echo_reinit_is_child()) {
        join_survivors();
    } else {
        /* a job echorun started again after every process of it failed (echo/reinit.py): each process replaces a
         * failed one */
        const char *deployment = getenv("ECHO_REINIT_DEPLOYMENT");
        if (deployment && atoi(deployment) > 1) start_state = MPI_REINIT_RESTARTED;
        echo_ft_dup(MPI_COMM_WORLD, &echo.reps_world);
        PMPI_Comm_set_errhandler(echo.reps_world, MPI_ERRORS_RETURN);
        job_start = echo_epoch_now();
        PMPI_Bcast(&job_start, 1, MPI_DOUBLE, 0, echo.reps_world);
    }
    PMPI_Comm_size(echo.reps_world, &echo.app_size);
    PMPI_Comm_rank(echo.reps_world, &echo.app_rank);
    echo_comm_add(MPI_COMM_WORLD, echo.reps_world, echo.app_rank, echo.app_size, NULL);
    if (!echo_reinit_is_child()) echo_placement_init(echo.reps_world, echo.app_rank, echo.app_size);
    PMPI_Comm_split(MPI_COMM_SELF, 0, 0, &echo.clone_comm); /* no copies: a communicator of its own */
    PMPI_Add_error_class(&error_code);
    if (!echo_reinit_is_child()) arm_kills(); /* a restarted process armed its own before joining */
}
