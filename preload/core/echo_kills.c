/* The kill injector of SDR and Reinit mode (echorun --inject kill:...), for tests and demos: one reading of the
 * plan's kill lines, one timer, one call count and one "strike once" for both modes.
 *
 * Each mode's plan lines "<mode>_kill_<k>" name the kills of one rank (echo/modes/sdr.py, echo/modes/reinit.py):
 *   SDR:    "<rank> <replica> call <n>"   at the replica's call numbered n (the record's number, as bitflip's)
 *           "<rank> <replica> after <t>"  t seconds after its MPI_Init
 *   Reinit: "<rank> <t>"                  t seconds after the job's MPI_Init, whichever process holds the rank then
 *           "<rank> repair <n>"           in the job's nth repair, once the missing processes were started
 *           "<rank> finalize"             in its MPI_Finalize, once the rank said it reached it
 *           "<rank> at MPI_X"             as it enters its first MPI_X after MPI_Init
 * A kill is a kind ("call", "after", "repair", "finalize", "at") and its argument.  The mode says what its lines
 * hold (echo_kills_plan), arms its kills when its process knows its rank and start time (echo_kills_arm) and calls
 * echo_kill_moment where its moments come.  In a mode that starts failed processes again (Reinit) each kill strikes
 * once in the job: the process it kills first creates <run dir>/<mode>-kills/<k> (exclusively). */
#define _GNU_SOURCE
#include "echo_internal.h"
#include "echo.h"
#include "echo_records.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *kill_mode = "";  /* "sdr", "reinit": the plan lines <mode>_kill_<k> */
static int lines_name_copy;         /* the lines name the copy (SDR's replica) after the rank */
static int strike_once;             /* each kill strikes once in the job (Reinit: its processes are started again) */
static long kill_at_call = -1;      /* the first call (record number) a kill is planned at; -1: none */
int echo_kills_entering;

void echo_kills_plan(const char *mode, int name_copy, int once) {
    kill_mode = mode;
    lines_name_copy = name_copy;
    strike_once = once;
}

/* an injected kill: the event first, so that echorun can tell a kill that fired from one that never did */
void echo_kill_now(const char *when) {
    char detail[96];
    snprintf(detail, sizeof detail, "killed by SIGKILL (%s)", when);
    echo_event("injection", "kill", echo_record_seq(), -1, -1, 0, echo.copy, -1, detail); /* written unbuffered */
    kill(getpid(), SIGKILL);
}

/* Plan line k: 0 past the last one; 1 if it is a kill of this process (its kind in `what`, its argument in `arg`),
 * else -1.  The one reading of those lines. */
static int kill_line(int k, char what[16], char arg[64]) {
    char key[48];
    snprintf(key, sizeof key, "%s_kill_%d", kill_mode, k);
    const char *v = echo_plan_value(key);
    if (!v) return 0;
    int rank, copy = echo.copy, n = 0;
    if (sscanf(v, "%d%n", &rank, &n) != 1) return -1;
    v += n;
    if (lines_name_copy && sscanf(v, "%d%n", &copy, &n) != 1) return -1;
    if (lines_name_copy) v += n;
    char word[64];
    arg[0] = 0;
    if (sscanf(v, "%63s %63s", word, arg) < 1 || rank != echo.app_rank || copy != echo.copy) return -1;
    char *end;
    if (strtod(word, &end), *end == 0) { /* Reinit's "<rank> <t>": a time, every digit of it */
        snprintf(arg, 64, "%s", word);
        snprintf(what, 16, "after");
    } else {
        snprintf(what, 16, "%s", word);
    }
    return 1;
}

static void kill_file(int k, char path[1300]) { snprintf(path, 1300, "%s/%s-kills/%d", echo.run_dir, kill_mode, k); }

/* Whether kill k struck already (in this process or one before it that held the rank). */
static int kill_struck(int k) {
    char path[1300];
    if (!strike_once) return 0;
    kill_file(k, path);
    return access(path, F_OK) == 0;
}

/* Whether this process strikes kill k: the first to create its file does (each kill strikes once). */
static int claim_kill(int k) {
    char path[1300];
    if (!strike_once) return 1;
    kill_file(k, path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) return 0; /* struck already */
    close(fd);
    return 1;
}

typedef struct { int k; double at; } timed_t;

/* timed kills: whichever process holds the rank then is killed (under Reinit a restarted one too: if the rank is
 * being restarted at that time, the process that takes it is killed as soon as it has armed its kills) */
static void *kill_later(void *arg) {
    timed_t t = *(timed_t *)arg;
    free(arg);
    for (double left; (left = t.at - echo_epoch_now()) > 0;)
        usleep(left > 0.05 ? 50000 : (useconds_t)(left * 1e6) + 1);
    if (claim_kill(t.k)) echo_kill_now("at its planned time");
    return NULL;
}

void echo_kills_arm(double start) {
    char what[16], arg[64];
    if (strike_once) {
        char path[1300];
        snprintf(path, sizeof path, "%s/%s-kills", echo.run_dir, kill_mode);
        mkdir(path, 0755);
    }
    for (int k = 0, found; (found = kill_line(k, what, arg)) != 0; k++) {
        if (found < 0 || kill_struck(k)) continue;
        double value = atof(arg);
        if (strcmp(what, "call") == 0) {
            if (kill_at_call < 0 || (long)value < kill_at_call) kill_at_call = (long)value; /* the first one */
        } else if (strcmp(what, "after") == 0) {
            timed_t *t = malloc(sizeof *t);
            *t = (timed_t){k, start + value};
            pthread_t th;
            if (pthread_create(&th, NULL, kill_later, t) == 0) pthread_detach(th);
            else free(t);
        } else if (strcmp(what, "at") == 0) {
            echo_kills_entering++;
        }
    }
}

/* every application call of a mode with kills at a call: call N is the record's number (echo_record_seq: what
 * echorun and `mpiecho report` show) */
void echo_kill_at_planned_call(void) {
    if (kill_at_call >= 0 && (long)echo_record_seq() >= kill_at_call) echo_kill_now("at its planned call");
}

void echo_kill_moment(const char *what, const char *arg, const char *when) {
    char kind[16], value[64];
    for (int k = 0, found; (found = kill_line(k, kind, value)) != 0; k++)
        if (found > 0 && strcmp(kind, what) == 0 && (!arg || strcmp(value, arg) == 0) && claim_kill(k))
            echo_kill_now(when);
}

void echo_kill_entering(const char *name) {
    char when[96];
    snprintf(when, sizeof when, "entering %s", name);
    echo_kill_moment("at", name, when);
}
