/* What the process tells: its words on the terminal (echo_warn, echo_fatal), a copy's output in its own files, and
 * its status file and fatal signals (how it ended, for echorun's report of who died). */
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

static int term_fd = 2;      /* the terminal's stderr, even for redirected copies */
static int output_redirected; /* a copy whose stdout/stderr go to files */
static int status_fd = -1;   /* run_dir/procs/<real>.status */
static int exit_status;       /* and the rest of the status file: below */
static void write_status(void);

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

static size_t append(char *dst, size_t n, const char *s) {
    while (*s) dst[n++] = *s++;
    return n;
}

/* from the fatal-signal handler (echo_process.c), async-signal-safe: only pwrite() and hand formatting */
void echo_status_signalled(int sig) {
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
}

/* the program went on after its own handler of a fatal signal: it is not dead, its status is put back */
void echo_status_survived(void) {
    if (status_fd >= 0 && last_line[0] && pwrite(status_fd, last_line, STATUS_LINE, 0) < 0) { /* lost */ }
}

static void redirect(int fd, const char *path) {
    int f = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f < 0) return;
    dup2(f, fd);
    close(f);
}

/* at load, once the process is known to be one of the plan's: its status file, and its end noted */
void echo_status_open(int me) {
    char path[1200];
    snprintf(path, sizeof path, "%s/procs/%d.status", echo.run_dir, me);
    status_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    snprintf(pid_text, sizeof pid_text, "%d", (int)getpid());
    set_status("started");
    on_exit(on_process_exit, NULL);
}

/* at load: where this process's words and output go; execed: the rank's process again after an exec */
void echo_output_setup(int execed) {
    char num[24], path[1200];
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
}

int echo_status_opened(void) { return status_fd >= 0; }

void echo_mark_finalizing(void) { set_status("finalizing"); }
void echo_mark_finalized(void) { set_status("finalized"); }
void echo_mark_stopped(void) { set_status("stopped"); }

void echo_mark_aborted(void) { set_status("aborted"); }
