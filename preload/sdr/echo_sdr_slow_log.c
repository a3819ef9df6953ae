/* SDR mode: RUN_DIR/sdr.slow, the log of the exclusions (docs/sdr.md): one line per decision, "out|in|stopped
 * <rank> <replica> <call> <time>", for echorun, perf.json and the store.  Its writers are the slow-replica judge
 * (echo_sdr_slow.c: a replica excluded, taken back, stopped at the end) and the failures (echo_sdr_failures.c: an
 * excluded replica taken back when its last sibling died); the call is this replica's count of application calls,
 * which the judge keeps. */
#include "echo_sdr.h"

#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

long sdr_slow_calls; /* application calls so far (counted by sdr_slow_enter) */

void sdr_slow_log_line(const char *what, int replica, long call) {
    char path[1200], line[128];
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    snprintf(path, sizeof path, "%s/sdr.slow", echo.run_dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return;
    int n = snprintf(line, sizeof line, "%s %d %d %ld %ld.%06ld\n", what, echo.app_rank, replica, call,
                     (long)t.tv_sec, t.tv_nsec / 1000);
    if (write(fd, line, (size_t)n) < 0) n = 0; /* one write: lines from several processes do not mix */
    close(fd);
}

void sdr_slow_log(const char *what) { sdr_slow_log_line(what, sdr.k, sdr_slow_calls); }
