/* Writing the record file of this process (layout in echo_records.h). */
#define _GNU_SOURCE
#include "echo_records.h"
#include "echo_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUFFERED 1024 /* records kept in memory between writes (96 KiB) */

static int fd = -1;
static echo_record_t buf[BUFFERED];
static volatile int nbuf;         /* whole records in buf; the signal handler writes these */
static uint64_t seq;
static struct timespec origin, origin_real; /* when the library was loaded */
static uint64_t pending[ECHO_REC_SLOTS];

static MPI_Comm *seen;            /* communicators in order of first use (ids 2, 3, ...) */
static int nseen, capseen;

__attribute__((constructor)) static void start_clock(void) {
    clock_gettime(CLOCK_REALTIME, &origin_real);
    clock_gettime(CLOCK_MONOTONIC, &origin);
}

double echo_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - origin.tv_sec) + 1e-9 * (double)(t.tv_nsec - origin.tv_nsec);
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

static void write_all(const void *p, size_t n) {
    const char *c = p;
    while (n > 0) {
        ssize_t w = write(fd, c, n);
        if (w <= 0) return; /* a full disk: the records after this are lost, the run goes on */
        c += w;
        n -= (size_t)w;
    }
}

void echo_records_flush(void) {
    if (fd < 0 || nbuf == 0) return;
    write_all(buf, sizeof(echo_record_t) * (size_t)nbuf);
    nbuf = 0;
}

void echo_record(uint16_t fn, double t_start, int32_t comm, int32_t peer, int32_t tag, uint64_t bytes, int rc) {
    if (fd < 0) return;
    echo_record_t *r = &buf[nbuf];
    r->seq = seq++;
    r->fn = fn;
    r->flags = rc != MPI_SUCCESS ? ECHO_REC_ERROR : 0;
    r->comm = comm;
    r->peer = peer;
    r->tag = tag;
    r->bytes = bytes;
    r->t_start = t_start;
    r->t_end = echo_now();
    memcpy(r->slot, pending, sizeof pending);
    memset(pending, 0, sizeof pending);
    nbuf = nbuf + 1; /* only now is the record whole */
    if (nbuf == BUFFERED) echo_records_flush();
}

static void close_at_exit(void) { echo_records_close(); }

void echo_records_open(const char *const *functions, int nfunctions) {
    char path[1200];
    snprintf(path, sizeof path, "%s/records/%d.rec", echo.run_dir, echo.real_rank);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "echo: cannot write records to %s; the run goes on without them\n", path);
        return;
    }
    char *h = calloc(1, ECHO_REC_HEADER_SIZE);
    struct {
        char magic[8];
        uint32_t version, header_size, record_size, nfunctions;
        int32_t app_rank, copy, ncopies, real_rank, pid;
        uint32_t nslots;
        double start_time;
    } fixed = {"ECHOREC", ECHO_REC_VERSION, ECHO_REC_HEADER_SIZE, sizeof(echo_record_t), (uint32_t)nfunctions,
               echo.app_rank, echo.copy, echo.ncopies, echo.real_rank, (int32_t)getpid(), ECHO_REC_SLOTS,
               (double)origin_real.tv_sec + 1e-9 * (double)origin_real.tv_nsec};
    size_t off = 0;
    memcpy(h, &fixed, sizeof fixed);
    off = sizeof fixed;
    const char *run_id = echo_plan_value("run_id");
    snprintf(h + off, 64, "%s", run_id ? run_id : "");
    off += 64;
    gethostname(h + off, 63);
    off += 64;
    snprintf(h + off, 64, "%.63s", echo.role);
    off += 64;
    off += 32 * ECHO_REC_SLOTS; /* slot names: filled by role collectors (none yet) */
    int len = 0;
    PMPI_Get_library_version(h + off, &len);
    for (int i = 0; i < 255 && h[off + i]; i++)
        if (h[off + i] == '\n') { h[off + i] = 0; break; }
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
    if (fd < 0) return;
    echo_records_flush();
    close(fd);
    fd = -1;
}
