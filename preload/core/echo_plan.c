/* The process's state (echo_state_t echo) and the plan it was read from: what every file of the library reads.
 * Read once, when the library is loaded (echo_process.c, the lifecycle, calls echo_plan_read); it calls nothing of
 * the lifecycle back. */
#define _GNU_SOURCE
#include "echo_internal.h"
#include "echo.h"

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

static int *plan_app, *plan_copy, *plan_ncopies; /* per real rank */

const char *echo_plan_value(const char *key) {
    for (int i = 0; i < plan_nkeys; i++)
        if (strcmp(plan_keys[i], key) == 0) return plan_vals[i];
    return NULL;
}

double echo_epoch_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    return (double)now.tv_sec + now.tv_nsec * 1e-9;
}

/* Plan format (written by echo/plan.py; docs/replication.md):
 *   echo-plan 1
 *   <key> <value>            header lines (run_id, run_dir, app_size, real_size, output, ...)
 *   proc <real> <app> <copy> <ncopies> <role>
 */
/* the plan at path, for real rank me: its header, every process's rank and copy, this process's own */
void echo_plan_read(const char *path, int me) {
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
    v = echo_plan_value("run_dir");
    snprintf(echo.run_dir, sizeof echo.run_dir, "%s", v ? v : ".");
    if (me >= echo.real_size) {
        fprintf(stderr, "echo: process %d is outside the plan of %d processes; run the job with echorun\n",
                me, echo.real_size);
        exit(64);
    }
    echo.real_rank = me;
    echo.app_rank = plan_app[me];
    echo.copy = plan_copy[me];
    echo.ncopies = plan_ncopies[me];
}

/* the real rank of each application rank's representative (copy 0), from the plan's process lines */
void echo_plan_representatives(int *rep_real_rank) {
    for (int r = 0; r < echo.real_size; r++)
        if (plan_copy[r] == 0) rep_real_rank[plan_app[r]] = r;
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
