/* Writing the record file of this process (layout in echo_records.h). */
#define _GNU_SOURCE
#include "echo_records.h"
#include "echo_internal.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUFFER_BYTES (96 * 1024)

static int fd = -1;
static char buf[BUFFER_BYTES];
static volatile size_t used;     /* bytes of whole records in buf; the signal handler writes these */
static size_t record_size = sizeof(echo_record_t);
static uint64_t seq;
static uint64_t tick_origin, mono_origin_ns;
static double start_time;
static int nslots;
static char slot_names[ECHO_REC_MAX_SLOTS][32];
static uint64_t pending[ECHO_REC_MAX_SLOTS];

static MPI_Comm *seen;           /* communicators in order of first use (ids 2, 3, ...) */
static int nseen, capseen;

/* offset of the calibration pair in the header (see echo_records.h) */
#define CALIBRATION_OFFSET 64

static uint64_t mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

__attribute__((constructor)) static void start_clock(void) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    start_time = (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
    mono_origin_ns = mono_ns();
    tick_origin = echo_ticks();
}

int echo_records_add_slot(const char *name) {
    if (nslots == ECHO_REC_MAX_SLOTS || fd >= 0) return -1;
    snprintf(slot_names[nslots], sizeof slot_names[0], "%.31s", name);
    return nslots++;
}

int32_t echo_comm_id(MPI_Comm comm) {
    if (comm == MPI_COMM_WORLD) return 0;
    if (comm == MPI_COMM_SELF) return 1;
    if (comm == MPI_COMM_NULL) return -1;
    for (int i = nseen - 1; i >= 0; i--)
        if (seen[i] == comm) return i + 2;
    if (nseen == capseen) {
        capseen = capseen ? 2 * capseen : 16;
        seen = realloc(seen, sizeof *seen * (size_t)capseen);
    }
    seen[nseen++] = comm;
    return nseen + 1;
}

uint64_t echo_bytes(int64_t count, MPI_Datatype dt) {
    int size = 0;
    if (count <= 0 || dt == MPI_DATATYPE_NULL || PMPI_Type_size(dt, &size) != MPI_SUCCESS || size < 0) return 0;
    return (uint64_t)count * (uint64_t)size;
}

uint64_t *echo_record_slots(void) { return pending; }

uint64_t echo_record_seq(void) { return seq; }

static void write_all(const void *p, size_t n) {
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w <= 0) return; /* a full disk: the records after this are lost, the run goes on */
        c += w;
        n -= (size_t)w;
    }
}

/* A bound on each record file (plan key records_max_mb, default 1024 MiB): a
 * program that makes calls without end must not fill the disk.  The event that
 * says so is written later, in normal context (a flush may run in a signal handler). */
static uint64_t written, max_bytes, capped_at;

static void say_capped(void) {
    if (!capped_at) return;
    char detail[160];
    snprintf(detail, sizeof detail, "records stopped after %llu calls: the file reached its bound of %llu MiB "
             "(echorun --records-max-mb)", (unsigned long long)capped_at, (unsigned long long)(max_bytes >> 20));
    echo_event("records", "capped", capped_at, -1, -1, written, echo.copy, -1, detail);
    capped_at = 0;
}

/* async-signal-safe: write(), pwrite(), close() and clock_gettime() only */
void echo_records_flush(void) {
    if (fd < 0 || used == 0) return;
    if (max_bytes && written + used > max_bytes) {
        capped_at = seq;
        close(fd);
        fd = -1;
        return;
    }
    write_all(buf, used);
    written += used;
    used = 0;
    /* the tick rate over the whole run so far: ticks -> ns for the reader */
    uint64_t pair[2] = {mono_ns() - mono_origin_ns, echo_ticks() - tick_origin};
    if (pwrite(fd, pair, sizeof pair, CALIBRATION_OFFSET) < 0) { /* the reader falls back to ticks = ns */ }
}

void echo_record(uint16_t fn, uint64_t t_start, int32_t comm, int32_t peer, int32_t tag, uint64_t bytes, int rc) {
    if (fd < 0) {
        say_capped();
        return;
    }
    echo_record_t *r = (echo_record_t *)(buf + used);
    r->seq = seq++;
    r->fn = fn;
    r->flags = rc != MPI_SUCCESS ? ECHO_REC_ERROR : 0;
    r->comm = comm;
    r->peer = peer;
    r->tag = tag;
    r->bytes = bytes;
    r->t_start = t_start - tick_origin;
    r->t_end = echo_ticks() - tick_origin;
    if (nslots) {
        memcpy(r->slot, pending, sizeof(uint64_t) * (size_t)nslots);
        memset(pending, 0, sizeof(uint64_t) * (size_t)nslots);
    }
    used = used + record_size; /* only now is the record whole */
    if (used + record_size > BUFFER_BYTES) echo_records_flush();
}

static void close_at_exit(void) { echo_records_close(); }

void echo_records_open(const char *const *functions, int nfunctions) {
    char path[1200];
    snprintf(path, sizeof path, "%s/records/%d.rec", echo.run_dir, echo.real_rank);
    if (echo_reinit_is_child()) { /* a restarted rank: beside the failed one's records, not over them */
        snprintf(path, sizeof path, "%s/records/restarts", echo.run_dir);
        mkdir(path, 0755);
        snprintf(path, sizeof path, "%s/records/restarts/%d-%d.rec", echo.run_dir, echo.app_rank, (int)getpid());
    }
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const char *mb = echo_plan_value("records_max_mb");
    max_bytes = (uint64_t)(mb ? atoll(mb) : 1024) << 20;
    if (fd < 0) {
        fprintf(stderr, "echo: cannot write records to %s; the run goes on without them\n", path);
        return;
    }
    record_size = sizeof(echo_record_t) + sizeof(uint64_t) * (size_t)nslots;
    char *h = calloc(1, ECHO_REC_HEADER_SIZE);
    struct {
        char magic[8];
        uint32_t version, header_size, record_size, nfunctions;
        int32_t app_rank, copy, ncopies, real_rank, pid;
        uint32_t nslots;
        double start_time;
        uint64_t tick_origin, ns, ticks;
    } fixed = {"ECHOREC", ECHO_REC_VERSION, ECHO_REC_HEADER_SIZE, (uint32_t)record_size, (uint32_t)nfunctions,
               echo.app_rank, echo.copy, echo.ncopies, echo.real_rank, (int32_t)getpid(), (uint32_t)nslots,
               start_time, tick_origin, 0, 0};
    _Static_assert(offsetof(__typeof__(fixed), ns) == CALIBRATION_OFFSET, "calibration pair offset");
    memcpy(h, &fixed, sizeof fixed);
    size_t off = sizeof fixed;
    const char *run_id = echo_plan_value("run_id");
    snprintf(h + off, 64, "%.63s", run_id ? run_id : "");
    off += 64;
    gethostname(h + off, 63);
    off += 64;
    snprintf(h + off, 64, "%.63s", echo.role);
    off += 64;
    memcpy(h + off, slot_names, sizeof slot_names);
    off += sizeof slot_names;
    int len = 0;
    PMPI_Get_library_version(h + off, &len);
    h[off + strcspn(h + off, "\n")] = 0;
    h[off + 255] = 0;
    off += 256;
    for (int i = 0; i < nfunctions; i++) {
        size_t n = strlen(functions[i]) + 1;
        if (off + n > ECHO_REC_HEADER_SIZE) break;
        memcpy(h + off, functions[i], n);
        off += n;
    }
    write_all(h, ECHO_REC_HEADER_SIZE);
    free(h);
    atexit(close_at_exit);
}

void echo_records_close(void) {
    if (fd >= 0) echo_records_flush();
    if (fd >= 0) close(fd);
    fd = -1;
    say_capped();
}
