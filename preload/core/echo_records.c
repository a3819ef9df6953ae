/* Writing the record file of this process (layout in echo_records.h). */
#define _GNU_SOURCE
#include "echo_records.h"
#include "echo_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The file is mapped (MAP_SHARED) and records are written into the mapping: the
 * kernel's page cache holds every record the moment it is written, so a process
 * that dies in any way (SIGKILL, an abort inside MPI) leaves every call it made.
 * The mapping grows by GROW_BYTES: the file is extended, remapped, and the new
 * pages are faulted in at once (not one fault per page inside the calls). */
#define GROW_BYTES (4u << 20)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux >= 5.14; older kernels refuse it and fault pages one by one */
#endif

static int fd = -1;
static unsigned char *map;       /* the file from offset 0: header, then records */
static size_t mapped;            /* bytes mapped (= the file's size while open) */
static size_t used;              /* header and whole records */
static size_t record_size = sizeof(echo_record_t);
static volatile uint64_t *nrecords; /* in the mapped header: the reader trusts this many records */
static uint64_t seq;
static uint64_t tick_origin, mono_origin_ns;
static double start_time;
static int nslots;
static char slot_names[ECHO_REC_MAX_SLOTS][32];
static uint64_t pending[ECHO_REC_MAX_SLOTS];

static MPI_Comm *seen;           /* communicators in order of first use (ids 2, 3, ...) */
static int nseen, capseen;

/* offsets in the header (see echo_records.h) */
#define CALIBRATION_OFFSET 64
#define NRECORDS_OFFSET 80

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

uint64_t echo_sum_bytes(const int *counts, MPI_Datatype dt, uint64_t n) {
    uint64_t sum = 0;
    for (uint64_t i = 0; counts && i < n; i++) sum += echo_bytes(counts[i], dt);
    return sum;
}

uint64_t echo_sum_bytes_c(const MPI_Count *counts, MPI_Datatype dt, uint64_t n) {
    uint64_t sum = 0;
    for (uint64_t i = 0; counts && i < n; i++) sum += echo_bytes(counts[i], dt);
    return sum;
}

uint64_t echo_sum_bytes_w(const int *counts, const MPI_Datatype *types, uint64_t n) {
    uint64_t sum = 0;
    for (uint64_t i = 0; counts && types && i < n; i++) sum += echo_bytes(counts[i], types[i]);
    return sum;
}

uint64_t echo_sum_bytes_w_c(const MPI_Count *counts, const MPI_Datatype *types, uint64_t n) {
    uint64_t sum = 0;
    for (uint64_t i = 0; counts && types && i < n; i++) sum += echo_bytes(counts[i], types[i]);
    return sum;
}

uint64_t *echo_record_slots(void) { return pending; }

uint64_t echo_record_seq(void) { return seq; }

/* A bound on each record file (plan key records_max_mb, default 1024 MiB): a
 * program that makes calls without end must not fill the disk.  The event that
 * says so is written later, in normal context. */
static uint64_t max_bytes, capped_at;
static int full; /* the bound was reached: no more records, said once */

static void say_capped(void) {
    if (!capped_at) return;
    char detail[160];
    snprintf(detail, sizeof detail, "records stopped after %llu calls: the file reached its bound of %llu MiB "
             "(echorun --records-max-mb)", (unsigned long long)capped_at, (unsigned long long)(max_bytes >> 20));
    echo_event("records", "capped", capped_at, -1, -1, used - ECHO_REC_HEADER_SIZE, echo.copy, -1, detail);
    capped_at = 0;
}

/* The tick rate over the run so far (ticks -> ns for the reader), written in
 * place.  Async-signal-safe: clock reads and stores only. */
void echo_records_flush(void) {
    if (!map) return;
    uint64_t pair[2] = {mono_ns() - mono_origin_ns, echo_ticks() - tick_origin};
    memcpy(map + CALIBRATION_OFFSET, pair, sizeof pair);
}

/* Room for the next record: the file extended by GROW_BYTES and mapped again.
 * 0 when the bound is reached or the disk refuses (records stop; the run goes on). */
static int grow(void) {
    size_t want = mapped + GROW_BYTES;
    if (max_bytes && want - ECHO_REC_HEADER_SIZE > max_bytes) want = ECHO_REC_HEADER_SIZE + (size_t)max_bytes;
    if (want < used + record_size) {
        capped_at = seq;
        return 0;
    }
    if (ftruncate(fd, (off_t)want) != 0) return 0;
    void *m = mremap(map, mapped, want, MREMAP_MAYMOVE);
    if (m == MAP_FAILED) return 0;
    map = m;
    nrecords = (volatile uint64_t *)(map + NRECORDS_OFFSET);
    madvise(map + mapped, want - mapped, MADV_POPULATE_WRITE);
    mapped = want;
    echo_records_flush(); /* a fresh calibration now and then, for a process that never closes */
    return 1;
}

void echo_record(uint16_t fn, uint64_t t_start, int32_t comm, int32_t peer, int32_t tag, uint64_t bytes, int rc) {
    if (!map || full || (used + record_size > mapped && !grow())) {
        seq++; /* calls are still counted: events name them by number */
        if (map && !full) {
            full = 1;
            say_capped();
        }
        return;
    }
    echo_record_t *r = (echo_record_t *)(map + used);
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
    used += record_size;
    __atomic_signal_fence(__ATOMIC_RELEASE); /* the record is whole before the count says so */
    *nrecords = seq;
}

static void close_at_exit(void) { echo_records_close(); }

void echo_records_open(const char *const *functions, int nfunctions) {
    char path[1200];
    snprintf(path, sizeof path, "%s/records/%d.rec", echo.run_dir, echo.real_rank);
    if (echo_mode->restarted && echo_mode->restarted()) { /* a restarted rank: beside the failed one's records, not over them */
        snprintf(path, sizeof path, "%s/records/restarts", echo.run_dir);
        mkdir(path, 0755);
        snprintf(path, sizeof path, "%s/records/restarts/%d-%d.rec", echo.run_dir, echo.app_rank, (int)getpid());
    }
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const char *mb = echo_plan_value("records_max_mb");
    max_bytes = (uint64_t)(mb ? atoll(mb) : 1024) << 20;
    if (fd < 0) {
        fprintf(stderr, "echo: cannot write records to %s; the run goes on without them\n", path);
        return;
    }
    record_size = sizeof(echo_record_t) + sizeof(uint64_t) * (size_t)nslots;
    /* the header holds the whole function table, however many functions the MPI has */
    size_t header_size = ECHO_REC_HEADER_SIZE, table = 0;
    for (int i = 0; i < nfunctions; i++) table += strlen(functions[i]) + 1;
    while (header_size < ECHO_REC_TABLE_OFFSET + table) header_size *= 2;
    mapped = header_size + (max_bytes && max_bytes < GROW_BYTES ? (size_t)max_bytes : GROW_BYTES);
    void *m = ftruncate(fd, (off_t)mapped) == 0 ? mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                                                : MAP_FAILED;
    if (m == MAP_FAILED) {
        fprintf(stderr, "echo: cannot map the record file %s (%s); the run goes on without records\n", path,
                strerror(errno));
        close(fd);
        fd = -1;
        return;
    }
    map = m;
    madvise(map, mapped, MADV_POPULATE_WRITE);
    struct {
        char magic[8];
        uint32_t version, header_size, record_size, nfunctions;
        int32_t app_rank, copy, ncopies, real_rank, pid;
        uint32_t nslots;
        double start_time;
        uint64_t tick_origin, ns, ticks, nrecords;
    } fixed = {"ECHOREC", ECHO_REC_VERSION, (uint32_t)header_size, (uint32_t)record_size, (uint32_t)nfunctions,
               echo.app_rank, echo.copy, echo.ncopies, echo.real_rank, (int32_t)getpid(), (uint32_t)nslots,
               start_time, tick_origin, 0, 0, 0};
    _Static_assert(offsetof(__typeof__(fixed), ns) == CALIBRATION_OFFSET, "calibration pair offset");
    _Static_assert(offsetof(__typeof__(fixed), nrecords) == NRECORDS_OFFSET, "record count offset");
    unsigned char *h = map;
    memcpy(h, &fixed, sizeof fixed);
    size_t off = sizeof fixed;
    const char *run_id = echo_plan_value("run_id");
    snprintf((char *)h + off, 64, "%.63s", run_id ? run_id : "");
    off += 64;
    gethostname((char *)h + off, 63);
    off += 64;
    snprintf((char *)h + off, 64, "%.63s", echo.role);
    off += 64;
    memcpy(h + off, slot_names, sizeof slot_names);
    off += sizeof slot_names;
    int len = 0;
    PMPI_Get_library_version((char *)h + off, &len);
    h[off + strcspn((char *)h + off, "\n")] = 0;
    h[off + 255] = 0;
    off += 256;
    _Static_assert(sizeof fixed + 3 * 64 + sizeof slot_names + 256 == ECHO_REC_TABLE_OFFSET, "table offset");
    for (int i = 0; i < nfunctions; i++) {
        size_t n = strlen(functions[i]) + 1;
        memcpy(h + off, functions[i], n);
        off += n;
    }
    nrecords = (volatile uint64_t *)(map + NRECORDS_OFFSET);
    used = header_size;
    echo_records_flush(); /* a first calibration: the time since the library was loaded (MPI_Init's) */
    atexit(close_at_exit);
}

/* At a clean end the file is cut to its records (the reader trusts the count either way). */
void echo_records_close(void) {
    if (map) {
        echo_records_flush();
        munmap(map, mapped);
        map = NULL;
        if (ftruncate(fd, (off_t)used) != 0) { /* the count in the header still tells the reader */ }
        close(fd);
        fd = -1;
    }
    say_capped();
}
