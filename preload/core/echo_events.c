/* Events and metrics a process reports about itself, as lines in its run
 * directory (echo/store/ingest.py reads them):
 *   events/<real rank>.jsonl   one JSON object a line (divergences, injections, unavailable counters)
 *   metrics/<real rank>.txt    "name<TAB>value<TAB>unit" a line (counter totals, read costs) */
#define _GNU_SOURCE
#include "echo_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int open_file(const char *dir, const char *ext) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%s/%d.%s", echo.run_dir, dir, echo.real_rank, ext);
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

static void append(int *fd, const char *dir, const char *ext, const char *line, int n) {
    if (*fd < 0) *fd = open_file(dir, ext);
    if (*fd >= 0 && write(*fd, line, (size_t)n) < 0) { /* nothing more to do: the run goes on */ }
}

static int events_fd = -1, metrics_fd = -1;

void echo_event(const char *kind, const char *fn, uint64_t seq, int32_t comm, int32_t peer, uint64_t bytes, int copy,
                long first_byte, const char *detail) {
    char safe[512];
    size_t j = 0;
    for (size_t i = 0; detail[i] && j < sizeof safe - 2; i++) /* JSON-safe: no quotes or backslashes */
        safe[j++] = detail[i] == '"' || detail[i] == '\\' ? '\'' : detail[i];
    safe[j] = 0;
    char line[1024];
    int n = snprintf(line, sizeof line,
                     "{\"kind\": \"%s\", \"app_rank\": %d, \"copy\": %d, \"function\": \"%s\", \"call\": %llu, "
                     "\"comm\": %d, \"peer\": %d, \"bytes\": %llu, \"first_byte\": %ld, \"detail\": \"%s\"}\n",
                     kind, echo.app_rank, copy, fn, (unsigned long long)seq, comm, peer, (unsigned long long)bytes,
                     first_byte, safe);
    append(&events_fd, "events", "jsonl", line, n < (int)sizeof line ? n : (int)sizeof line - 1);
}

void echo_metric(const char *name, double value, const char *unit) {
    char line[512];
    int n = snprintf(line, sizeof line, "%s\t%.17g\t%s\n", name, value, unit);
    append(&metrics_fd, "metrics", "txt", line, n < (int)sizeof line ? n : (int)sizeof line - 1);
}

void echo_events_close(void) {
    if (events_fd >= 0) close(events_fd);
    if (metrics_fd >= 0) close(metrics_fd);
    events_fd = metrics_fd = -1;
}
