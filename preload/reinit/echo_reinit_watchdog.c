/* Reinit: a process failure MPI never reports ends the job instead of hanging it.
 *
 * The repair starts when a survivor's MPI call reports a failure.  Some calls never do: Open MPI 5's one-sided
 * component (osc) under ULFM leaves a survivor spinning for ever in MPI_Win_complete, MPI_Win_wait or
 * MPI_Win_start of a post/start/complete/wait epoch whose peer died (natively too).  So every process watches
 * itself from a thread of its own, without MPI: when this process has been inside one MPI call (the wrappers say
 * which, echo_reinit_call) for the whole bound while a process of the job is dead (below: how), it ends with a
 * message naming the dead process and the call, and leaves the note that makes echorun end what is left
 * (jobstop.py).  A failure MPI reports is repaired before the bound: the repair happens outside any call of the
 * application.  Each process says where it runs in <run dir>/reinit-pids/<rank> ("<host> <pid> <beat>"), a
 * restarted one in place of the process it replaces.  A pid means nothing on another host, and this thread makes
 * no MPI call, so the line is also a heartbeat: each watchdog rewrites it with its count every quarter of the bound,
 * and a process of another host whose line stayed the same for the whole bound is taken for dead (the run
 * directory is on a file system every node sees: docs/clusters.md).  A process that ends cleanly says so there
 * (its beat ENDED), never taken for dead.  The application's own MPI_Abort ends the job the same way, with its
 * code. */
#define _GNU_SOURCE
#define ECHO_LIBRARY
#include "echo_reinit_internal.h"
#include "echo.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

volatile echo_reinit_call_t echo_reinit_call;

static double bound;       /* seconds; 0: no watchdog */
static char my_host[256];
#define ENDED ((unsigned long)-1)
static volatile unsigned long beats; /* this process's heartbeat, in its line; ENDED once it ended cleanly */

/* the line of each rank of another host as last read, and since when it has not changed */
typedef struct {
    int pid;
    unsigned long beat;
    double since;
} remote_t;
static remote_t *remote;

static void pid_file(char *path, size_t n, int rank) {
    snprintf(path, n, "%s/reinit-pids/%d", echo.run_dir, rank);
}

/* where this process runs, for the other processes' watchdogs (written again by a restarted process) */
static void say_where(void) {
    char path[1300], tmp[1320];
    snprintf(path, sizeof path, "%s/reinit-pids", echo.run_dir);
    mkdir(path, 0755);
    pid_file(path, sizeof path, echo.app_rank);
    snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return;
    fprintf(f, "%s %d %lu\n", my_host, (int)getpid(), beats);
    if (fclose(f) == 0) rename(tmp, path); /* whole, never half written */
}

/* a process that ended: gone, or a zombie its parent has not reaped yet */
static int ended(int pid) {
    if (kill(pid, 0) != 0) return errno == ESRCH;
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    ssize_t n = read(fd, stat, sizeof stat - 1);
    close(fd);
    if (n <= 0) return 0;
    stat[n] = 0;
    const char *after = strrchr(stat, ')');
    return after && after[1] == ' ' && after[2] == 'Z';
}

/* the lowest rank whose process has ended (on this host) or stayed silent for the bound (on another), -1 if none */
static int dead_rank(int *pid, char host[256], double now) {
    for (int r = 0; r < echo.app_size; r++) {
        if (r == echo.app_rank) continue;
        char path[1300];
        unsigned long beat = 0;
        pid_file(path, sizeof path, r);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        int n = fscanf(f, "%255s %d %lu", host, pid, &beat);
        fclose(f);
        if (n < 2 || *pid <= 0) continue;
        if (strcmp(host, my_host) == 0) {
            if (ended(*pid)) return r;
            continue;
        }
        remote_t *m = &remote[r];
        if (m->pid != *pid || m->beat != beat || m->since == 0) { /* it lives (or a restarted one does) */
            m->pid = *pid;
            m->beat = beat;
            m->since = now;
        } else if (beat != ENDED && now - m->since >= bound) {
            return r;
        }
    }
    return -1;
}

/* a clean end: this process's line says it, so no watchdog of another host takes its silence for a death */
static pid_t watched; /* a forked child's exit says nothing of the rank's process */

static void say_ended(void) {
    if (getpid() != watched) return;
    beats = ENDED;
    say_where();
}

/* the application's own MPI_Abort: the job ends with its code, as natively (MPI_Abort under ULFM can wait for
 * ever once a process has failed, and may end only the caller) */
void echo_reinit_aborts(int errorcode) {
    char text[256];
    snprintf(text, sizeof text, "Reinit: application rank %d called MPI_Abort with error code %d: the job ends "
             "with it", echo.app_rank, errorcode);
    echo_record_exit_status(errorcode);
    echo_reinit_stop_note(text);
    fflush(NULL);
}

static void end_job(int rank, int pid, const char *host, const char *call, double waited) {
    char text[1024];
    snprintf(text, sizeof text, "Reinit: rank %d (pid %d on %s%s) failed and MPI has not reported it to rank %d in "
             "%.0f s: rank %d waits in %s for ever (Open MPI's one-sided communication reports no failure of a "
             "peer) (--failure-watchdog, docs/reinit.md)", rank, pid, host,
             strcmp(host, my_host) ? ", silent for the bound" : "", echo.app_rank, waited, echo.app_rank, call);
    if (echo_reinit_can_restart() && echo_reinit_windows) { /* restarted by a new deployment (echo_reinit.c) */
        fprintf(stderr, "echo: %s\n", text);
        echo_reinit_redeploy("the watchdog ends it");
    }
    strncat(text, "; the job ends", sizeof text - strlen(text) - 1);
    echo_reinit_stop_note(text);
    echo_fatal("%s", text);
}

static void *watch(void *arg) {
    (void)arg;
    unsigned long seen = 0;
    double since = 0, step = bound / 10 < 0.2 ? bound / 10 : 0.2, beaten = echo_epoch_now();
    for (;;) {
        usleep((useconds_t)(step * 1e6));
        const char *call = echo_reinit_call.name;
        unsigned long seq = echo_reinit_call.seq;
        double now = echo_epoch_now();
        if (now - beaten >= bound / 4 && beats != ENDED) { /* alive, for the watchdogs of other hosts */
            beats++;
            say_where();
            beaten = now;
        }
        char host[256] = "";
        int pid = 0, dead = call ? dead_rank(&pid, host, now) : -1;
        /* the same call of the application all along, and a process dead all along */
        if (!call || seq != seen || dead < 0) {
            seen = seq;
            since = now;
            continue;
        }
        if (now - since >= bound) end_job(dead, pid, host, call, now - since);
    }
    return NULL;
}

void echo_reinit_watchdog_start(void) {
    const char *v = echo_plan_value("reinit_watchdog");
    bound = v ? atof(v) : 0;
    gethostname(my_host, sizeof my_host - 1);
    say_where();
    if (bound <= 0) return;
    remote = calloc((size_t)echo.app_size, sizeof *remote);
    if (!remote) return;
    watched = getpid();
    atexit(say_ended);
    pthread_t th;
    if (pthread_create(&th, NULL, watch, NULL) == 0) pthread_detach(th);
}
