/* Reinit mode (echorun --mode reinit): global restart without re-deploying.
 *
 * The library owns the application's MPI_COMM_WORLD (it is the world entry of
 * the communicator table, every call on it uses world.real), so after a
 * process failure it can put a repaired world in its place:
 *   1. a survivor's MPI call returns a ULFM error (every real communicator
 *      returns errors instead of aborting);
 *   2. it revokes the world and every communicator it knows, so every other
 *      survivor's pending or next call fails too and joins the repair;
 *   3. the survivors shrink the world, spawn as many processes as failed
 *      (the same command line, with echo's environment, told they restart),
 *      merge with them and order the merged communicator by the old ranks:
 *      every rank keeps its number;
 *   4. all other MPI state of the application is forgotten, as after MPI_Init,
 *      and survivors return to the restart point: MPI_Reinit (siglongjmp) in C,
 *      an MPI error code that echo.reinit catches in Python.
 * A failure during the repair itself ends the job with a message (ULFM's
 * operations would have to be restarted from a state some survivors no longer
 * share). */
#define _GNU_SOURCE
#define ECHO_LIBRARY
#include "echo_internal.h"
#include "echo.h"
#include "echo_reinit.h"

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHILD_ENV "ECHO_REINIT_CHILD"

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

/* ---- the repair ---- */

static void check(int rc, const char *step) {
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    PMPI_Error_string(rc, msg, &len);
    echo_fatal("Reinit: a failure during recovery (%s: %s); the job cannot be repaired, it ends here", step, msg);
}

static MPI_Comm join(MPI_Comm merged, int rank) {
    MPI_Comm world;
    check(PMPI_Comm_split(merged, 0, rank, &world), "ordering the repaired world");
    PMPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
    PMPI_Comm_free(&merged);
    return world;
}

/* a survivor: repair the world; returns the new one */
static MPI_Comm repair(MPI_Comm old) {
    MPI_Comm shrunk, inter, merged;
    check(PMPIX_Comm_shrink(old, &shrunk), "MPIX_Comm_shrink");
    MPI_Group og, sg, fg;
    PMPI_Comm_group(old, &og);
    PMPI_Comm_group(shrunk, &sg);
    PMPI_Group_difference(og, sg, &fg);
    int nfailed;
    PMPI_Group_size(fg, &nfailed);
    int *idx = malloc(sizeof(int) * (size_t)nfailed), *failed = malloc(sizeof(int) * (size_t)nfailed);
    for (int i = 0; i < nfailed; i++) idx[i] = i;
    PMPI_Group_translate_ranks(fg, nfailed, idx, og, failed);
    PMPI_Group_free(&og);
    PMPI_Group_free(&sg);
    PMPI_Group_free(&fg);
    double t_shrunk = echo_epoch_now();

    /* the failed ranks start again through env(1): mpirun gives spawned
     * processes none of the job's environment, and they need echo's */
    int ncmd;
    char **cmd = command_line(&ncmd);
    char **args = calloc((size_t)ncmd + 4, sizeof *args);
    char preload[4200], plan[1200];
    snprintf(preload, sizeof preload, "LD_PRELOAD=%s", getenv("LD_PRELOAD") ? getenv("LD_PRELOAD") : "");
    snprintf(plan, sizeof plan, "ECHO_PLAN=%s", getenv("ECHO_PLAN") ? getenv("ECHO_PLAN") : "");
    args[0] = preload;
    args[1] = plan;
    args[2] = CHILD_ENV "=1";
    for (int i = 0; i < ncmd; i++) args[3 + i] = cmd[i];
    /* one process per failed rank, each on the host chosen for it (echo_placement.c) */
    char (*where)[64] = calloc((size_t)nfailed, 64);
    int moved = echo_placement_choose(failed, nfailed, echo.app_size, where);
    char **commands = calloc((size_t)nfailed, sizeof *commands);
    char ***argvs = calloc((size_t)nfailed, sizeof *argvs);
    int *ones = calloc((size_t)nfailed, sizeof *ones);
    MPI_Info *infos = calloc((size_t)nfailed, sizeof *infos);
    for (int i = 0; i < nfailed; i++) {
        commands[i] = "/usr/bin/env";
        argvs[i] = args;
        ones[i] = 1;
        infos[i] = MPI_INFO_NULL;
        if (!echo_placement_simulated()) {
            PMPI_Info_create(&infos[i]);
            PMPI_Info_set(infos[i], "host", where[i]);
        }
    }
    check(PMPI_Comm_spawn_multiple(nfailed, commands, argvs, ones, infos, 0, shrunk, &inter, MPI_ERRCODES_IGNORE),
          "MPI_Comm_spawn of the failed ranks");
    for (int i = 0; i < nfailed; i++)
        if (infos[i] != MPI_INFO_NULL) PMPI_Info_free(&infos[i]);
    free(commands);
    free(argvs);
    free(ones);
    free(infos);
    free(args);
    free(cmd);
    double t_spawned = echo_epoch_now();
    int srank;
    PMPI_Comm_rank(shrunk, &srank);
    if (srank == 0) /* each new process learns which rank it takes */
        for (int i = 0; i < nfailed; i++) {
            check(PMPI_Send(failed, nfailed, MPI_INT, i, 0, inter), "telling ranks");
            double facts[2] = {job_start, repairs + 1};
            check(PMPI_Send(facts, 2, MPI_DOUBLE, i, 1, inter), "telling ranks");
        }
    if (srank == 0) echo_placement_share(inter, 1, nfailed, echo.app_size);
    check(PMPI_Intercomm_merge(inter, 0, &merged), "MPI_Intercomm_merge");
    PMPI_Comm_free(&shrunk);
    MPI_Comm world = join(merged, echo.app_rank);
    PMPI_Comm_disconnect(&inter);
    double t_done = echo_epoch_now();
    repairs++;
    if (srank == 0) {
        char detail[256];
        /* epoch seconds, to set against the time of the failure */
        snprintf(detail, sizeof detail, "failed %d first %d seen %.6f shrunk %.6f spawned %.6f repaired %.6f",
                 nfailed, failed[0], t_failure_seen, t_shrunk, t_spawned, t_done);
        echo_event("reinit", "repair", (uint64_t)repairs, 0, failed[0], 0, 0, -1, detail);
        fprintf(stderr, "echo: Reinit: rank%s", nfailed > 1 ? "s" : "");
        for (int i = 0; i < nfailed; i++) fprintf(stderr, " %d", failed[i]);
        fprintf(stderr, " failed; restarted in %.3f s\n", t_done - t_failure_seen);
        for (int i = 0; i < nfailed && moved; i++) /* only when a host was lost: say where they went */
            fprintf(stderr, "echo: Reinit: rank %d (host lost) restarted on %s%s\n", failed[i], where[i],
                    echo_placement_simulated() ? " (simulated hosts)" : "");
    }
    free(where);
    free(idx);
    free(failed);
    return world;
}

/* a restarted process, in MPI_Init: join the survivors and take the rank of
 * the failed process it replaces */
static void join_survivors(void) {
    MPI_Comm parent, merged;
    PMPI_Comm_get_parent(&parent);
    if (parent == MPI_COMM_NULL) echo_fatal("Reinit: a restarted process has no parent to join");
    int me, n;
    PMPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Status st;
    check(PMPI_Probe(0, 0, parent, &st), "learning the rank to take");
    PMPI_Get_count(&st, MPI_INT, &n);
    int *failed = malloc(sizeof(int) * (size_t)n);
    check(PMPI_Recv(failed, n, MPI_INT, 0, 0, parent, MPI_STATUS_IGNORE), "learning the rank to take");
    double facts[2];
    check(PMPI_Recv(facts, 2, MPI_DOUBLE, 0, 1, parent, MPI_STATUS_IGNORE), "learning the rank to take");
    echo_placement_share(parent, 0, 0, echo.app_size);
    job_start = facts[0];
    repairs = (int)facts[1];
    /* its own files: events/<n>.jsonl beside the plan's processes, never over the failed one's */
    echo.real_rank = echo.real_size + (int)getpid();
    check(PMPI_Intercomm_merge(parent, 1, &merged), "MPI_Intercomm_merge");
    echo.app_rank = failed[me];
    free(failed);
    char num[16];
    snprintf(num, sizeof num, "%d", echo.app_rank);
    setenv("ECHO_APP_RANK", num, 1);
    echo.reps_world = join(merged, echo.app_rank);
    PMPI_Comm_disconnect(&parent);
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

/* Called by the generated wrappers when a call failed: nothing for other errors */
int echo_reinit_on_error(int rc) {
    if (!echo.reinit || !is_failure(rc)) return rc;
    if (!restart_ready)
        echo_fatal("Reinit: a process failed before MPI_Reinit was called (or after it returned): nothing to "
                   "restart from; the job ends");
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

/* MPI_Finalize of a job that was repaired.  Open MPI 5.0.11's MPI_Finalize
 * can wait forever for the failed processes (its closing fence spans the
 * original job and every spawned one), so once every rank of the repaired world
 * is here, each process ends itself as MPI_Finalize would end it. */
void echo_reinit_finalize(void) {
    int repaired = repairs > 0 || echo_reinit_is_child();
    int any = 0;
    if (PMPI_Allreduce(&repaired, &any, 1, MPI_INT, MPI_MAX, echo.reps_world) != MPI_SUCCESS)
        echo_fatal("Reinit: a process failed during MPI_Finalize; the job ends");
    if (!any) return;
    PMPI_Barrier(echo.reps_world);
    if (echo.app_rank == 0) { /* for echorun: the application reached its end */
        char path[1200];
        snprintf(path, sizeof path, "%s/reinit.done", echo.run_dir);
        FILE *f = fopen(path, "w");
        if (f) {
            fprintf(f, "repairs %d\n", repairs);
            fclose(f);
        }
    }
    echo_teardown_before_finalize();
    echo_mark_finalized();
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

/* plan lines "reinit_kill_<k> <rank> <seconds after the job's MPI_Init>" (echorun --inject kill:...):
 * whichever process holds the rank then is killed, a restarted one too */
static void arm_kills(void) {
    double t = echo_epoch_now();
    for (int k = 0;; k++) {
        char key[32];
        snprintf(key, sizeof key, "reinit_kill_%d", k);
        const char *v = echo_plan_value(key);
        if (!v) break;
        int rank;
        double after;
        if (sscanf(v, "%d %lf", &rank, &after) != 2 || rank != echo.app_rank || job_start + after <= t) continue;
        echo_kill_at(job_start + after);
    }
}

void echo_reinit_setup(void) {
    if (echo_reinit_is_child()) {
        join_survivors();
    } else {
        PMPI_Comm_dup(MPI_COMM_WORLD, &echo.reps_world);
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
    arm_kills();
}
