/* Clocks under clones: every copy reads the representative's time.
 *
 * Real codes time themselves (MPI_Wtime, gettimeofday, clock_gettime, time,
 * clock, std::chrono, omp_get_wtime, Fortran's system_clock and cpu_time) and
 * reduce or print what they measured; some run until a time budget is spent.
 * Each copy measuring its own time would hand MPI different buffers (a false
 * SDC alarm) or take a different path.  So while the job runs, a copy's clock
 * reading is the representative's reading of the same call: the representative
 * sends each reading to its copies through the channel (echo_channel.c, a tag
 * of its own, in program order with the forwards), and a copy takes the next one.
 *
 * What is virtualized: MPI_Wtime and MPI_Wtick, getrusage, a file system's free space (statfs, statvfs: it
 * changes by itself between the representative's reading and a copy's, as a clock does), and the libc clocks
 * called by the application's own code (the program and its libraries,
 * libstdc++, libgomp, libgfortran and the Python interpreter included), between
 * MPI_Init and MPI_Finalize: on the thread that initialized MPI in a program at
 * MPI_THREAD_SINGLE or FUNNELED (other threads' order is not the program's),
 * on every thread in one at SERIALIZED or MULTIPLE (it calls MPI from whichever
 * thread, one at a time, and times on whichever thread too: a reading takes the
 * one slot MPI calls take, echo_serial.c, so readings and calls reach the copies
 * in the representative's order).  Not virtualized: calls made by the MPI
 * library, its runtime, echo itself, or PAPI (they time MPI's own work), and
 * clocks read without libc (a raw syscall): docs/sdc.md says so.  The time-stamp
 * counter (rdtsc) is: echo_tsc.c.
 * An interpreter is the exception: Python reads the monotonic clock for its own
 * timed waits (the GIL, locks with timeouts) as often as thread scheduling makes
 * it, so its libc reads are not the program's; echo_clock_python.c gives the
 * program's reads (the time module) instead.
 *
 * A copy checks each reading it takes is of the same clock at the same count.
 * If its reads part from the representative's (the first message waiting is
 * not a clock reading, or is another clock's), its clocks are its own from then
 * on, with an event that says where: never a hang or a wrong forward. */
#define _GNU_SOURCE
#include "echo_internal.h"
#include "echo_records.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define TAG_CLOCK_OFFSET 1 /* below MPI_TAG_UB: forwards use small even/odd tags (rc << 1) */
/* the libc clocks are interposed: exported whatever the library's default visibility */
#define INTERPOSED __attribute__((visibility("default")))

enum { K_REALTIME_GTOD = 1000, K_TIME, K_CLOCK, K_WTIME, K_WTICK, K_TSC };
enum { K_BYTES = 2900, K_BYTES_CHUNK }; /* a file's content as the program read it (echo_fileview.c) */
enum { K_STATFS = 3000, K_STATFS64, K_FSTATFS, K_FSTATFS64, K_STATVFS, K_STATVFS64, K_FSTATVFS, K_FSTATVFS64 };
#define K_RUSAGE 2000 /* + who + 1: RUSAGE_SELF, _CHILDREN, _THREAD apart */

typedef struct {
    int32_t kind;   /* a clockid_t, or one of the K_* above */
    int32_t spare;
    uint64_t count; /* readings so far: both sides count them */
    union {
        struct timespec ts;
        double d;
        int64_t i;
        struct rusage ru; /* all of it: a code reduces its maximum resident size, not only its times */
        struct statfs fs; /* a file system's free space (below) */
        struct statfs64 fs64;
        struct statvfs vfs;
        struct statvfs64 vfs64;
    } v;
} reading_t;

static int on;           /* copies of this rank read the representative's clocks */
int echo_clocks_parted;  /* this copy's readings parted from its representative's (echo_internal.h) */
static int tag_clock;
int echo_clocks_threaded; /* the program is at SERIALIZED or MULTIPLE: every thread's readings are shared */
static pthread_t owner;  /* the thread that initialized MPI */
static uint64_t count;

/* ---- the real clocks ---- */
static int (*real_clock_gettime)(clockid_t, struct timespec *);
static int (*real_gettimeofday)(struct timeval *, void *);
static time_t (*real_time)(time_t *);
static clock_t (*real_clock)(void);

static void resolve(void) {
    if (real_clock_gettime) return;
    real_gettimeofday = (int (*)(struct timeval *, void *))dlsym(RTLD_NEXT, "gettimeofday");
    real_time = (time_t (*)(time_t *))dlsym(RTLD_NEXT, "time");
    real_clock = (clock_t (*)(void))dlsym(RTLD_NEXT, "clock");
    real_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
}

/* a reading to virtualize: copies exist, the job runs, the thread is MPI's (any thread of a threaded program), not
 * inside an MPI call */
static int virtual(void) {
    return on && echo.active && !echo_depth && (echo_clocks_threaded || pthread_equal(pthread_self(), owner));
}

/* A threaded program's reading made while another thread was in an MPI call may reach the channel before that
 * call's forward on the representative and after it on a copy: the copy's forward then finds the reading first
 * and keeps it here for the reading it belongs to (echo_clock_step_over).  How many is the program's: an OpenMP
 * code whose thread 0 polls MPI_Testany while the other threads time every block they multiply (DBCSR's, under
 * CP2K) has its copy's thread 0 step over thousands of readings its other threads have yet to make, so the queue
 * grows as it needs to (a fixed 64 parted that copy's clocks, and then its path). */
static reading_t *kept;
static unsigned kept_first, kept_n, kept_cap;

static int keep(const reading_t *got) {
    if (kept_n == kept_cap) {
        unsigned cap = kept_cap ? kept_cap * 2 : 256;
        reading_t *more = malloc(sizeof *more * cap);
        if (!more) return 0;
        for (unsigned i = 0; i < kept_n; i++) more[i] = kept[(kept_first + i) % kept_cap];
        free(kept);
        kept = more;
        kept_first = 0;
        kept_cap = cap;
    }
    kept[(kept_first + kept_n++) % kept_cap] = *got;
    return 1;
}

static void parted(const char *why) {
    on = 0;
    echo_clocks_parted = 1; /* the representative's readings still come: forwards step over them */
    char detail[200];
    snprintf(detail, sizeof detail, "clock reading %llu: %s; this copy reads its own clocks from here on",
             (unsigned long long)count, why);
    echo_event("clocks-apart", "clock", echo_record_seq(), -1, -1, 0, echo.copy, -1, detail);
}

/* The representative sends its reading `r` to its copies; a copy replaces `r` with the representative's.
 * 0: `r` is not the representative's (this copy's clocks parted from it). */
static __attribute__((noinline)) int exchange(reading_t *r) {
    int claimed = echo_clocks_threaded && echo_serial_claim_reading(); /* one thread on the channel at a time */
    r->count = count++;
    echo_depth = 1; /* the MPI calls below are echo's own, and so are their clock readings */
    int held = echo_tsc_hold(0); /* ... and so are their reads of the counter (echo_tsc_trap.c) */
    int ok = 1;
    if (echo_is_rep()) {
        echo_to_copies(r, (int)sizeof *r, MPI_BYTE, tag_clock);
    } else {
        int next_tag = tag_clock;
        if (!kept_n) echo_probe_rep(&next_tag); /* the representative's next message, in order */
        reading_t got;
        if (kept_n) {
            got = kept[kept_first];
            kept_first = (kept_first + 1) % kept_cap;
            kept_n--;
            if (got.kind != r->kind || got.count != r->count) {
                parted("the representative read another clock here");
                ok = 0;
            } else {
                *r = got;
            }
        } else if (next_tag != tag_clock) {
            parted("the representative's next message is an MPI call's, not a clock reading");
            ok = 0;
        } else {
            echo_from_rep(&got, (int)sizeof got, MPI_BYTE, tag_clock, MPI_STATUS_IGNORE);
            if (got.kind != r->kind || got.count != r->count) {
                parted("the representative read another clock here");
                ok = 0;
            } else {
                *r = got;
            }
        }
    }
    echo_tsc_release(held);
    echo_depth = 0;
    if (claimed) echo_serial_leave();
    return ok;
}

/* exchange(), on the program's stack below its clock call: the representative sends, its copies probe and receive,
 * through MPI, whose frames differ and stay there.  Under --sdc they are zeroed when the exchange ends, as an MPI
 * call's are (echo_stack.c), or a local the program never wrote would hold them (NWChem's rtdb_cget_ broadcasts its
 * 32 KiB buffer whole after reading timers; tests/programs/timed_lookup.c) */
static int share(reading_t *r) {
    int ok = exchange(r);
    if (echo_stack_scrub) (void)echo_stack_scrubbed(0); /* a call, not a tail call: zeroes below this frame */
    return ok;
}

int echo_clock_setup(void) {
    resolve();
    on = 0;
    if (!echo_has_copies()) return 0;
    int *ub, flag = 0;
    PMPI_Comm_get_attr(echo.clone_comm, MPI_TAG_UB, &ub, &flag);
    tag_clock = (flag ? *ub : 32767) - TAG_CLOCK_OFFSET;
    owner = pthread_self();
    int level = MPI_THREAD_SINGLE;
    PMPI_Query_thread(&level);
    echo_clocks_threaded = level >= MPI_THREAD_SERIALIZED;
    count = 0;
    kept_first = kept_n = 0; /* the queue's memory stays for the next job (an MPI_Session's, a restart's) */
    on = 1;
    return 1;
}

void echo_clock_teardown(void) {
    on = echo_clocks_threaded = 0;
    echo_tsc_teardown();
}

/* Before each forward a copy receives, the representative's readings that come first (a probe sees the next
 * message whatever its tag): a copy whose clocks parted steps over them, it will never take them; a threaded
 * program's copy keeps them for the readings they belong to (above). */
void echo_clock_step_over(void) {
    for (int next_tag;;) {
        echo_probe_rep(&next_tag);
        if (next_tag != tag_clock) return;
        reading_t got;
        echo_from_rep(&got, (int)sizeof got, MPI_BYTE, tag_clock, MPI_STATUS_IGNORE);
        if (echo_clocks_parted) continue;
        if (!keep(&got)) parted("no memory left to keep the representative's readings for this copy's threads");
    }
}

/* ---- MPI's clocks ---- */
double echo_MPI_Wtime(void) {
    reading_t r = {.kind = K_WTIME, .v.d = PMPI_Wtime()};
    if (virtual()) share(&r);
    return r.v.d;
}

double echo_MPI_Wtick(void) {
    reading_t r = {.kind = K_WTICK, .v.d = PMPI_Wtick()};
    if (virtual()) share(&r);
    return r.v.d;
}

/* ---- a clock the application reads through an interpreter (echo_clock_python.c) ---- */
int echo_clock_read(clockid_t id, struct timespec *ts) {
    resolve();
    int rc = real_clock_gettime(id, ts);
    /* the interpreter's threads take turns by its own timer, not in the program's order: its main thread's only */
    if (rc == 0 && virtual() && pthread_equal(pthread_self(), owner)) {
        reading_t r = {.kind = (int32_t)id, .v.ts = *ts};
        if (share(&r)) *ts = r.v.ts;
    }
    return rc;
}

/* ---- libc's clocks, as the application calls them ---- */
INTERPOSED int clock_gettime(clockid_t id, struct timespec *ts) {
    resolve();
    /* while the time-stamp counter faults (echo_tsc.c: not inside an MPI call) the vDSO's clocks do too: the
     * kernel's are cheaper */
    int rc = echo_tsc_trapped && !echo_depth ? (int)syscall(SYS_clock_gettime, id, ts) : real_clock_gettime(id, ts);
    if (rc == 0 && virtual() && echo_application_caller(__builtin_return_address(0))) {
        reading_t r = {.kind = (int32_t)id, .v.ts = *ts};
        if (share(&r)) *ts = r.v.ts;
    }
    return rc;
}

INTERPOSED int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    resolve();
    int rc = echo_tsc_trapped && !echo_depth ? (int)syscall(SYS_gettimeofday, tv, tz) : real_gettimeofday(tv, tz);
    if (rc == 0 && virtual() && echo_application_caller(__builtin_return_address(0))) {
        reading_t r = {.kind = K_REALTIME_GTOD, .v.ts = {tv->tv_sec, tv->tv_usec}};
        if (share(&r)) *tv = (struct timeval){r.v.ts.tv_sec, r.v.ts.tv_nsec};
    }
    return rc;
}

INTERPOSED time_t time(time_t *out) {
    resolve();
    time_t t = real_time(NULL);
    if (virtual() && echo_application_caller(__builtin_return_address(0))) {
        reading_t r = {.kind = K_TIME, .v.i = (int64_t)t};
        if (share(&r)) t = (time_t)r.v.i;
    }
    if (out) *out = t;
    return t;
}

INTERPOSED clock_t clock(void) {
    resolve();
    clock_t t = real_clock();
    if (virtual() && echo_application_caller(__builtin_return_address(0))) {
        reading_t r = {.kind = K_CLOCK, .v.i = (int64_t)t};
        if (share(&r)) t = (clock_t)r.v.i;
    }
    return t;
}

/* getrusage: Fortran's cpu_time (libgfortran) and codes timing their own CPU use read it, and codes reduce its
 * maximum resident size at the end.  A copy gets all of the representative's: its own resident size, page faults
 * and context switches differ (the representative's MPI allocates what a copy's never does). */
INTERPOSED int getrusage(int who, struct rusage *usage) {
    static int (*real_getrusage)(int, struct rusage *);
    if (!real_getrusage) real_getrusage = (int (*)(int, struct rusage *))dlsym(RTLD_NEXT, "getrusage");
    int rc = real_getrusage(who, usage);
    if (rc == 0 && virtual() && echo_application_caller(__builtin_return_address(0))) {
        reading_t r = {.kind = K_RUSAGE + who + 1, .v.ru = *usage};
        if (share(&r)) *usage = r.v.ru;
    }
    return rc;
}

/* A file system's free space: codes size their scratch files by it (NWChem writes a probe file, reads the free
 * space before and after with statfs, and divides by the difference it saw).  A copy's reading is taken at
 * another moment, while other processes (its representative, the other ranks) write and delete, and its own
 * writes go to its file view (maybe another file system): its free space differs from its representative's, and
 * a copy that saw no difference divided by zero.  A copy gets the representative's whole answer. */
#define SHARED_FS_READING(name, kind_of, where_t, buf_t)                                                             \
    INTERPOSED int name(where_t where, buf_t *buf) {                                                                 \
        static int (*real)(where_t, buf_t *);                                                                        \
        if (!real) real = (int (*)(where_t, buf_t *))dlsym(RTLD_NEXT, #name);                                        \
        int rc = real(where, buf);                                                                                   \
        if (rc == 0 && virtual() && echo_application_caller(__builtin_return_address(0))) {                              \
            reading_t r = {.kind = kind_of};                                                                         \
            memcpy(&r.v, buf, sizeof *buf);                                                                          \
            if (share(&r)) memcpy(buf, &r.v, sizeof *buf);                                                           \
        }                                                                                                            \
        return rc;                                                                                                   \
    }
SHARED_FS_READING(statfs, K_STATFS, const char *, struct statfs)
SHARED_FS_READING(statfs64, K_STATFS64, const char *, struct statfs64)
SHARED_FS_READING(fstatfs, K_FSTATFS, int, struct statfs)
SHARED_FS_READING(fstatfs64, K_FSTATFS64, int, struct statfs64)
SHARED_FS_READING(statvfs, K_STATVFS, const char *, struct statvfs)
SHARED_FS_READING(statvfs64, K_STATVFS64, const char *, struct statvfs64)
SHARED_FS_READING(fstatvfs, K_FSTATVFS, int, struct statvfs)
SHARED_FS_READING(fstatvfs64, K_FSTATVFS64, int, struct statvfs64)

/* Bytes the application read whose content changes by itself (a /proc file: echo_fileview.c): the
 * representative's `len` bytes at `buf` go to its copies as readings, in pieces the size of one; a copy's own
 * are replaced with them.  `at` is the reading call's caller.  Returns the length of what `buf` holds now (at
 * most `cap`; the representative's length on a copy), or -1 if a copy's readings parted from its
 * representative's on the way (its own bytes stay: `len`). */
long echo_clock_share_bytes(char *buf, long len, long cap, const void *at) {
    if (!virtual() || !echo_application_caller(at)) return len;
    reading_t r = {.kind = K_BYTES, .v.i = len};
    if (!share(&r)) return -1;
    long n = r.v.i < cap ? r.v.i : cap;
    for (long off = 0; off < n; off += (long)sizeof r.v) {
        long k = n - off < (long)sizeof r.v ? n - off : (long)sizeof r.v;
        reading_t piece = {.kind = K_BYTES_CHUNK};
        memcpy(&piece.v, buf + off, (size_t)k);
        if (!share(&piece)) return -1;
        memcpy(buf + off, &piece.v, (size_t)k);
    }
    return n;
}

/* the time-stamp counter as the application read it (echo_tsc.c): `tsc` on the representative, its reading on a
 * copy; `at` is the reading instruction (whose it is decides, as a libc clock's caller does) */
uint64_t echo_clock_tsc(uint64_t tsc, const void *at) {
    if (virtual() && echo_application_caller(at)) {
        reading_t r = {.kind = K_TSC, .v.i = (int64_t)tsc};
        if (share(&r)) tsc = (uint64_t)r.v.i;
    }
    return tsc;
}
