/* Writing the record file of this process (layout in echo_records.h). */
#define _GNU_SOURCE
#include "echo_records.h"
#include "echo_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The file is mapped (MAP_SHARED) and records are written into the mapping: the
 * kernel's page cache holds every record the moment it is written, so a process
 * that dies in any way (SIGKILL, an abort inside MPI) leaves every call it made.
 * The mapping grows by GROW_BYTES: the file's space is reserved (posix_fallocate),
 * remapped, and the new pages are faulted in at once (not one fault per page
 * inside the calls).  Only reserved pages are ever written: a page of a sparse
 * mapped file that the file system cannot hold (a full disk, a quota) raises
 * SIGBUS in the application, so when the disk refuses even MIN_GROW_BYTES the
 * records stop and the calls after are summarized per function in <real>.lost, a small
 * file reserved and mapped before the first call: whatever ends the process, the
 * kernel keeps the totals written so far (docs/records.md).
 *
 * That is the whole trace, echorun --trace (and where a verdict needs every call: copies, --perf-tests, a role's
 * slots).  By default the file is a bounded ring instead, as profilers left on in production keep theirs: call 0
 * (MPI_Init's) and then the last `records_ring` calls (plan key), its room reserved and faulted in once when the
 * records open.  A call that takes the slot of an older one adds the older one to its function's totals in the
 * lost file, so the records and the totals hold every call exactly once, whatever ends the process: the file's
 * pages are the same few pages written again (the trace's cost per call was mostly new pages the kernel wrote
 * back, bench/results/records.md). */
#define GROW_BYTES (4u << 20)
#define MIN_GROW_BYTES (64u << 10)
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

/* The calls not in the file (the records stopped: bound or disk), per function: what the store's call summaries
 * hold, so that the run's totals stay whole.  They live in <real>.lost (layout in docs/records.md, read by
 * echo/runformat/records.py), reserved (posix_fallocate) and mapped MAP_SHARED when the records open, before the program's
 * first call: the page cache holds each total the moment it is counted, so a process killed after its records
 * stopped (SIGKILL, a crash, mpirun ending the job) leaves them too.  Only where the disk refuses even this one page
 * are they kept in memory and written at the end. */
#define LOST_VERSION 2
typedef struct {
    char name[40];
    uint64_t calls, errors, bytes, ticks, max_ticks;
} lost_entry_t;
typedef struct {
    char magic[8];              /* "ECHOLST" */
    uint32_t version, nentries; /* entries that fit; the last one takes the functions that do not */
    uint64_t stopped;           /* 0 while the records go on: the reader then finds nothing lost; LOST_RING: the
                                 * ring's calls that left it */
    uint64_t stopped_at;        /* the first call not in the record file (a ring: the first call it holds after
                                 * call 0) */
    uint64_t ns, ticks;         /* elapsed in both clocks (ticks -> seconds for the reader) */
    char reason[256];
    lost_entry_t entry[];
} lost_file_t;
enum { LOST_STOPPED = 1, LOST_RING = 2 };
static size_t lost_bytes;        /* a page (47 entries, the last one the "others"); beside a ring, every function's */
#define LOST_PAGE 4096
static lost_file_t *lost;        /* mapped (or, where the disk refused it, allocated) when the records open */
static int lost_on_disk;         /* mapped: the kernel keeps it; else written at the end */
static uint16_t *lost_slot;      /* per function of the table: its entry + 1, 0 before its first lost call */
static uint32_t lost_used;
static const char *const *function_names;
static int nfunction_names;
static uint64_t stopped_at;      /* the first call not in the file */
static char stop_reason[256];    /* why: "" while the records go on */
static char lost_path[1200];
static pid_t opener;             /* a forked child's exit closes nothing of its parent's */

/* The ring (no --trace): `ring` slots after call 0's record; 0 for the whole trace.  `first` is in the mapped
 * header: the first call after call 0 the ring holds (the calls between are in the lost file's totals). */
static uint64_t ring;
static volatile uint64_t *first;
static size_t header_bytes;      /* where the records start */
static int lost_calibrated;      /* the lost file's clock pair written once the ring first wraps (then at the end) */

static MPI_Comm *seen;           /* communicators in order of first use (ids 2, 3, ...) */
static int nseen, capseen;

/* offsets in the header (see echo_records.h) */
#define CALIBRATION_OFFSET 64
#define NRECORDS_OFFSET 80
#define RING_OFFSET 88
#define FIRST_OFFSET 96

static uint64_t mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

ECHO_TLS int echo_ticks_by_kernel;
static double ticks_per_ns = 1; /* the counter's rate, measured by echo_records_rate */

/* Measured before the application's rdtsc traps (echo_tsc.c), from the library's load on (MPI_Init takes
 * milliseconds at least, so the rate is good to a few parts in a million). */
void echo_records_rate(void) {
#if defined(__x86_64__)
    uint64_t ns = mono_ns() - mono_origin_ns, ticks = __rdtsc() - tick_origin;
    if (ns > 0) ticks_per_ns = (double)ticks / (double)ns;
#endif
}

/* The kernel's monotonic clock, asked by a system call (the kernel reads the counter in its own mode, which the
 * trap does not stop; the vDSO's clock_gettime would read it here and fault), in ticks since the same origin, for
 * an MPI call made while the counter traps.  Two system calls a call, where the trap's lifting took two prctl: the
 * vDSO's coarse clock costs neither but has a few milliseconds' resolution, which left every call of an --sdc run
 * 0 s long and its compute phases in steps of 4 ms. */
uint64_t echo_ticks_trapped(void) {
    struct timespec t;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t);
    uint64_t ns = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
    return tick_origin + (ns > mono_origin_ns ? (uint64_t)((double)(ns - mono_origin_ns) * ticks_per_ns) : 0);
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
 * program that makes calls without end must not fill the disk. */
static uint64_t max_bytes;
static int said; /* the stop was said in the events (once, at the next call) */
static int capped; /* the stop was the bound's, not the disk's */

/* The records stop at call `seq`: from now on, calls are summarized in memory only. */
static void close_at_exit(void);

static void stop(const char *fmt, const char *what) {
    if (stop_reason[0]) return;
    stopped_at = seq;
    snprintf(stop_reason, sizeof stop_reason, fmt, what);
    if (!lost) return;
    memcpy(lost->reason, stop_reason, sizeof lost->reason);
    lost->stopped_at = stopped_at;
    __atomic_signal_fence(__ATOMIC_RELEASE); /* the reason is there before the flag says so */
    lost->stopped = 1;
}

/* A stop at the bound is said in the events at once (the .lost file at the end says every stop, the disk's too:
 * an event written on a full disk would be refused). */
static void say_stopped(void) {
    if (said || !capped) return;
    said = 1;
    char detail[400];
    snprintf(detail, sizeof detail, "records stopped after %llu calls: %s", (unsigned long long)stopped_at,
             stop_reason);
    echo_event("records", "capped", stopped_at, -1, -1, used - ECHO_REC_HEADER_SIZE, echo.copy, -1, detail);
}

/* The tick rate over the run so far (ticks -> ns for the reader), written in
 * place.  Async-signal-safe: clock reads and stores only.  The counter itself, never
 * a trapped call's ticks (echo_records.h): those are derived from this rate. */
void echo_records_flush(void) {
    if (!map) return;
#if defined(__x86_64__)
    uint64_t pair[2] = {mono_ns() - mono_origin_ns, __rdtsc() - tick_origin};
#else
    uint64_t pair[2] = {mono_ns() - mono_origin_ns, echo_ticks() - tick_origin};
#endif
    memcpy(map + CALIBRATION_OFFSET, pair, sizeof pair);
    if (lost && lost_calibrated) {
        lost->ns = pair[0];
        lost->ticks = pair[1];
    }
}

/* The file's bytes [from, from + want) reserved on the disk, or fewer (halved down to MIN_GROW_BYTES) when the disk
 * has less room; returns the bytes reserved, 0 if none (errno-like code in *err).  No more than half the free room
 * is asked at once: a reservation the disk cannot hold fills it page by page before failing, and the processes
 * reserving beside it would fail meanwhile. */
static size_t reserve(size_t from, size_t want, int *err) {
    struct statvfs fs;
    if (fstatvfs(fd, &fs) == 0 && fs.f_bavail < (fsblkcnt_t)-1 / 2 / (fs.f_frsize ? fs.f_frsize : 1)) {
        size_t half = (size_t)(fs.f_bavail * fs.f_frsize / 2) & ~(size_t)4095;
        if (half < want) want = half > MIN_GROW_BYTES ? half : MIN_GROW_BYTES;
    }
    for (size_t n = want;; n /= 2) {
        do *err = posix_fallocate(fd, (off_t)from, (off_t)n);
        while (*err == EINTR);
        if (*err == 0) return n;
        if (n / 2 < MIN_GROW_BYTES || (*err != ENOSPC && *err != EDQUOT && *err != EFBIG)) return 0;
    }
}

/* Room for the next record: more of the file reserved and mapped again.
 * 0 when the bound is reached or the disk refuses (records stop; the run goes on). */
static int grow(void) {
    size_t want = mapped + GROW_BYTES;
    if (max_bytes && want - ECHO_REC_HEADER_SIZE > max_bytes) want = ECHO_REC_HEADER_SIZE + (size_t)max_bytes;
    if (want < used + record_size) {
        char bound[32];
        snprintf(bound, sizeof bound, "%llu", (unsigned long long)(max_bytes >> 20));
        capped = 1;
        stop("the file reached its bound of %s MiB (echorun --records-max-mb)", bound);
        return 0;
    }
    if (ring) return 0; /* reserved whole when it opened: the disk refused part of it (echo_records_open) */
    int err = 0;
    size_t got = reserve(mapped, want - mapped, &err);
    if (got < record_size) {
        stop("the disk refused more (%s)", strerror(err ? err : ENOSPC));
        return 0;
    }
    want = mapped + got;
    void *m = mremap(map, mapped, want, MREMAP_MAYMOVE);
    if (m == MAP_FAILED) {
        stop("the record file could not be mapped further (%s)", strerror(errno));
        return 0;
    }
    map = m;
    nrecords = (volatile uint64_t *)(map + NRECORDS_OFFSET);
    first = (volatile uint64_t *)(map + FIRST_OFFSET);
    madvise(map + mapped, want - mapped, MADV_POPULATE_WRITE);
    mapped = want;
    echo_records_flush(); /* a fresh calibration now and then, for a process that never closes */
    return 1;
}

/* A call added to its function's totals in the lost file: one the records stopped before, or one the ring let go. */
static void add_to_lost(uint16_t fn, uint64_t ticks, uint64_t bytes, int error) {
    if (!lost || fn >= nfunction_names) return;
    if (!lost_slot[fn]) {
        if (lost_used < lost->nentries) {
            lost_entry_t *e = &lost->entry[lost_used];
            snprintf(e->name, sizeof e->name, "%s",
                     lost_used + 1 < lost->nentries ? function_names[fn] : "(other MPI functions)");
            lost_used++;
        }
        lost_slot[fn] = (uint16_t)lost_used;
    }
    lost_entry_t *l = &lost->entry[lost_slot[fn] - 1];
    l->errors += error;
    l->bytes += bytes;
    l->ticks += ticks;
    if (ticks > l->max_ticks) l->max_ticks = ticks;
    __atomic_signal_fence(__ATOMIC_RELEASE);
    l->calls++; /* last: a reader never sees a call without its name */
}

/* A call after the records stopped. */
static void keep_in_lost(uint16_t fn, uint64_t t_start, uint64_t bytes, int rc) {
    if (!lost) return;
    uint64_t now = echo_ticks();
    lost->ns = mono_ns() - mono_origin_ns;
    lost->ticks = now - tick_origin;
    add_to_lost(fn, now - t_start, bytes, rc != MPI_SUCCESS);
}

/* The ring's slot for call `n` (n >= 1: call 0 keeps slot 0): its oldest call goes to the lost file's totals first.
 * A process that dies between the two steps counts that one call twice at most; the reader trusts `first`. */
static uint64_t ring_next = 1; /* the slot of the next call: 1 + (n - 1) % ring, counted rather than divided */
static echo_record_t *ring_slot(uint64_t n) {
    echo_record_t *r = (echo_record_t *)(map + header_bytes + record_size * ring_next);
    ring_next = ring_next == ring ? 1 : ring_next + 1;
    if (n <= ring) return r;
    if (__builtin_expect(!lost_calibrated, 0)) { /* the clock pair the totals need, once (and at the end) */
        lost_calibrated = 1;
        echo_records_flush();
    }
    add_to_lost(r->fn, r->t_end - r->t_start, r->bytes, r->flags & ECHO_REC_ERROR);
    if (__builtin_expect(lost && !lost->stopped, 0)) {
        snprintf(lost->reason, sizeof lost->reason, "a ring of the last %llu calls (echorun --trace records every "
                 "call)", (unsigned long long)ring);
        __atomic_signal_fence(__ATOMIC_RELEASE);
        lost->stopped = LOST_RING;
    }
    if (lost) lost->stopped_at = n - ring + 1;
    __atomic_signal_fence(__ATOMIC_RELEASE); /* the totals hold the call before the file stops holding it */
    *first = n - ring + 1;
    return r;
}

/* The lost file, reserved and mapped before the first call (or in memory where the disk refuses it). */
static void open_lost(void) {
    lost_bytes = LOST_PAGE;
    int lfd = open(lost_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int err = lfd < 0 ? errno : 0;
    if (!err) do err = posix_fallocate(lfd, 0, (off_t)lost_bytes);
        while (err == EINTR);
    void *m = err ? MAP_FAILED : mmap(NULL, lost_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, lfd, 0);
    if (lfd >= 0) close(lfd);
    lost_on_disk = m != MAP_FAILED;
    if (!lost_on_disk) {
        if (lfd >= 0) unlink(lost_path); /* written at the end if it can be */
        m = calloc(1, LOST_PAGE);
    }
    lost = m;
    lost_slot = calloc((size_t)nfunction_names, sizeof *lost_slot); /* now: never an allocation inside a call */
    if (!lost || !lost_slot) {
        lost = NULL;
        return;
    }
    memcpy(lost->magic, "ECHOLST", 8);
    lost->version = LOST_VERSION;
    lost->nentries = (uint32_t)((lost_bytes - sizeof(lost_file_t)) / sizeof(lost_entry_t));
}

/* A ring lets go of calls of every function the program uses: the lost file grown to an entry for each (a few pages
 * beside the ring's MiBs; the whole trace's page only fills once a disk refused the records).  0 if the disk
 * refuses: the records are then the whole trace. */
static int grow_lost(void) {
    size_t want = sizeof(lost_file_t) + sizeof(lost_entry_t) * ((size_t)nfunction_names + 1);
    want = (want + LOST_PAGE - 1) & ~(size_t)(LOST_PAGE - 1);
    if (!lost || want <= lost_bytes) return lost != NULL;
    void *m;
    if (lost_on_disk) {
        int lfd = open(lost_path, O_RDWR | O_CLOEXEC), err = lfd < 0 ? errno : 0;
        if (!err) do err = posix_fallocate(lfd, 0, (off_t)want);
            while (err == EINTR);
        if (lfd >= 0) close(lfd);
        m = err ? MAP_FAILED : mremap(lost, lost_bytes, want, MREMAP_MAYMOVE);
        if (m == MAP_FAILED) return 0;
    } else {
        if (!(m = realloc(lost, want))) return 0;
        memset((char *)m + lost_bytes, 0, want - lost_bytes);
    }
    lost = m;
    lost_bytes = want;
    lost->nentries = (uint32_t)((lost_bytes - sizeof(lost_file_t)) / sizeof(lost_entry_t));
    return 1;
}

void echo_record(uint16_t fn, uint64_t t_start, int32_t comm, int32_t peer, int32_t tag, uint64_t bytes, int rc) {
    echo_record_t *r;
    if (ring && seq && !stop_reason[0]) r = ring_slot(seq);
    else if (!map || stop_reason[0] || (used + record_size > mapped && !grow())) {
        keep_in_lost(fn, t_start, bytes, rc);
        seq++; /* calls are still counted: events name them by number */
        say_stopped();
        return;
    } else r = (echo_record_t *)(map + used);
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
    if (!ring || seq <= ring + 1) used += record_size; /* a ring's slots, each counted once */
    __atomic_signal_fence(__ATOMIC_RELEASE); /* the record is whole before the count says so */
    *nrecords = seq;
}

void echo_records_open(const char *const *functions, int nfunctions) {
    char path[1200];
    snprintf(path, sizeof path, "%s/records/%d.rec", echo.run_dir, echo.real_rank);
    if (echo_mode->restarted && echo_mode->restarted()) { /* a restarted rank: beside the failed one's records, not over them */
        snprintf(path, sizeof path, "%s/records/restarts", echo.run_dir);
        mkdir(path, 0755);
        snprintf(path, sizeof path, "%s/records/restarts/%d-%d.rec", echo.run_dir, echo.app_rank, (int)getpid());
    }
    snprintf(lost_path, sizeof lost_path, "%.*s.lost", (int)(strlen(path) - 4), path);
    function_names = functions;
    nfunction_names = nfunctions;
    opener = getpid();
    /* the ring, unless the plan asks for the whole trace; a role's slots are read call by call (PAPI's counters,
     * the perturbation's values): their records are always whole */
    const char *r = echo_plan_value("records_ring");
    ring = r && !nslots ? (uint64_t)atoll(r) : 0;
    open_lost(); /* first: its page is taken before the record file asks for the disk's room */
    atexit(close_at_exit);
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const char *mb = echo_plan_value("records_max_mb");
    max_bytes = (uint64_t)(mb ? atoll(mb) : 1024) << 20;
    if (fd < 0) {
        stop("the record file could not be created (%s)", strerror(errno));
        return;
    }
    record_size = sizeof(echo_record_t) + sizeof(uint64_t) * (size_t)nslots;
    /* the header holds the whole function table, however many functions the MPI has */
    size_t header_size = ECHO_REC_HEADER_SIZE, table = 0;
    for (int i = 0; i < nfunctions; i++) table += strlen(functions[i]) + 1;
    while (header_size < ECHO_REC_TABLE_OFFSET + table) header_size *= 2;
    int err = posix_fallocate(fd, 0, (off_t)header_size);
    size_t want = ring ? record_size * (size_t)(ring + 1)
                : max_bytes && max_bytes < GROW_BYTES ? (size_t)max_bytes : GROW_BYTES;
    size_t room = err ? 0 : reserve(header_size, want, &err);
    /* a ring's room is reserved whole, or the disk is short: then the records are the whole trace, up to the
     * disk's refusal (what was reserved is their first room) */
    if (ring && (room < want || !grow_lost())) ring = 0;
    void *m = err ? MAP_FAILED : mmap(NULL, header_size + room, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        stop(err ? "the disk refused the record file (%s)" : "the record file could not be mapped (%s)",
             strerror(err ? err : errno));
        if (err && ftruncate(fd, 0) != 0) { /* an empty file: the reader says it holds no records */ }
        close(fd);
        fd = -1;
        return;
    }
    mapped = header_size + room;
    map = m;
    madvise(map, mapped, MADV_POPULATE_WRITE);
    struct {
        char magic[8];
        uint32_t version, header_size, record_size, nfunctions;
        int32_t app_rank, copy, ncopies, real_rank, pid;
        uint32_t nslots;
        double start_time;
        uint64_t tick_origin, ns, ticks, nrecords, ring, first;
    } fixed = {"ECHOREC", ECHO_REC_VERSION, (uint32_t)header_size, (uint32_t)record_size, (uint32_t)nfunctions,
               echo.app_rank, echo.copy, echo.ncopies, echo.real_rank, (int32_t)getpid(), (uint32_t)nslots,
               start_time, tick_origin, 0, 0, 0, ring, 1};
    _Static_assert(offsetof(__typeof__(fixed), ns) == CALIBRATION_OFFSET, "calibration pair offset");
    _Static_assert(offsetof(__typeof__(fixed), nrecords) == NRECORDS_OFFSET, "record count offset");
    _Static_assert(offsetof(__typeof__(fixed), ring) == RING_OFFSET, "ring offset");
    _Static_assert(offsetof(__typeof__(fixed), first) == FIRST_OFFSET, "first call offset");
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
    first = (volatile uint64_t *)(map + FIRST_OFFSET);
    used = header_bytes = header_size;
    if (room < record_size) stop("the disk refused the records (%s)", strerror(err ? err : ENOSPC));
    echo_records_flush(); /* a first calibration: the time since the library was loaded (MPI_Init's) */
}

/* The lost file where the disk refused it when the records opened: written now, if the disk has room after the
 * record file gave back its unused reserved room.  If not, the process says on its terminal what was lost. */
static void write_lost(void) {
    uint64_t calls = 0;
    for (uint32_t i = 0; i < lost_used; i++) calls += lost->entry[i].calls;
    int lfd = open(lost_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int ok = lfd >= 0 && write(lfd, lost, lost_bytes) == (ssize_t)lost_bytes && fsync(lfd) == 0;
    if (lfd >= 0 && close(lfd) != 0) ok = 0;
    if (!ok && lfd >= 0) unlink(lost_path); /* half a summary would be read as a whole one */
    if (!ok && !capped && stop_reason[0]) /* the terminal is the one place left to say it */
        echo_warn("records stopped after %llu calls (%s); the %llu calls after could not be summarized on the disk "
                  "either: they are lost", (unsigned long long)stopped_at, stop_reason, (unsigned long long)calls);
}

/* At a clean end the file is cut to its records (the reader trusts the count either way); a lost file that holds
 * nothing (the records never stopped, the ring never wrapped) is removed. */
void echo_records_close(void) {
    if (getpid() != opener) return; /* a forked child's exit: the files are its parent's */
    if (map) {
        echo_records_flush();
        munmap(map, mapped);
        map = NULL;
        if (ftruncate(fd, (off_t)used) != 0) { /* the count in the header still tells the reader */ }
        close(fd);
        fd = -1;
    }
    say_stopped();
    if (lost) {
        lost->ns = mono_ns() - mono_origin_ns;
        lost->ticks = echo_ticks() - tick_origin;
        if (!lost->stopped && lost_on_disk) unlink(lost_path); /* every call is in the record file */
        else if (lost->stopped && !lost_on_disk) write_lost();
        if (lost_on_disk) munmap(lost, lost_bytes);
        else free(lost);
    }
    free(lost_slot);
    lost = NULL;
    lost_slot = NULL;
}

static void close_at_exit(void) { echo_records_close(); }
