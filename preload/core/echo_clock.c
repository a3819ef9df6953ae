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
 * What is virtualized: MPI_Wtime and MPI_Wtick, and the libc clocks called by
 * the application's own code (the program and its libraries, libstdc++,
 * libgomp, libgfortran and the Python interpreter included), on the thread that
 * initialized MPI, between MPI_Init and MPI_Finalize.  Not virtualized: calls
 * made by the MPI library, its runtime, echo itself, or PAPI (they time MPI's
 * own work), calls from other threads (their order is not the program's), and
 * clocks read without libc (rdtsc, a raw syscall): docs/sdc.md says so.
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
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define TAG_CLOCK_OFFSET 1 /* below MPI_TAG_UB: forwards use small even/odd tags (rc << 1) */
/* the libc clocks are interposed: exported whatever the library's default visibility */
#define INTERPOSED __attribute__((visibility("default")))

enum { K_REALTIME_GTOD = 1000, K_TIME, K_CLOCK, K_WTIME, K_WTICK };

typedef struct {
    int32_t kind;   /* a clockid_t, or one of the K_* above */
    int32_t spare;
    uint64_t count; /* readings so far: both sides count them */
    union {
        struct timespec ts;
        double d;
        int64_t i;
    } v;
} reading_t;

static int on;           /* copies of this rank read the representative's clocks */
int echo_clocks_parted;  /* this copy's readings parted from its representative's (echo_internal.h) */
static int tag_clock;
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

/* ---- whose call it is: the application's, or MPI's, its runtime's, echo's ---- */
static const char *const not_application[] = {
    "libmpi", "libopen-", "libpmix", "libprrte", "libhwloc", "libevent", "libucp", "libucs", "libuct", "libucm",
    "libfabric", "libpsm", "libmpich", "libmpl", "libpapi", "libpfm", "libibverbs", "librdmacm", "libnuma",
    "vgpreload", "libecho", "ld-linux", "libc.so", "libpthread", "libcuda", "libze", "libmunge", "libslurm",
};

#define CALLERS 512
static struct { const void *at; int app; } callers[CALLERS];

static char interpreter[512]; /* the object file of an interpreter whose own reads are not the program's */

void echo_clock_not_application(const char *object_file) {
    snprintf(interpreter, sizeof interpreter, "%s", object_file);
    memset(callers, 0, sizeof callers); /* classified before: classify again */
}

static int application_caller(const void *at) {
    unsigned h = (unsigned)(((uintptr_t)at >> 3) * 2654435761u) % CALLERS;
    if (callers[h].at == at) return callers[h].app;
    Dl_info info;
    int app = 1;
    if (dladdr(at, &info) && info.dli_fname) {
        const char *base = strrchr(info.dli_fname, '/');
        base = base ? base + 1 : info.dli_fname;
        for (size_t i = 0; i < sizeof not_application / sizeof *not_application; i++)
            if (strstr(base, not_application[i])) app = 0;
        if (interpreter[0] && strcmp(info.dli_fname, interpreter) == 0) app = 0;
    }
    callers[h].at = at;
    callers[h].app = app;
    return app;
}

/* a reading to virtualize: copies exist, the job runs, the thread is MPI's, not inside an MPI call */
static int virtual(void) {
    return on && echo.active && !echo_depth && pthread_equal(pthread_self(), owner);
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
static int share(reading_t *r) {
    r->count = count++;
    echo_depth = 1; /* the MPI calls below are echo's own, and so are their clock readings */
    int ok = 1;
    if (echo_is_rep()) {
        echo_to_copies(r, (int)sizeof *r, MPI_BYTE, tag_clock);
    } else {
        int next_tag;
        echo_probe_rep(&next_tag); /* the representative's next message, in order */
        reading_t got;
        if (next_tag != tag_clock) {
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
    echo_depth = 0;
    return ok;
}

void echo_clock_setup(void) {
    resolve();
    on = 0;
    if (!echo_has_copies()) return;
    int *ub, flag = 0;
    PMPI_Comm_get_attr(echo.clone_comm, MPI_TAG_UB, &ub, &flag);
    tag_clock = (flag ? *ub : 32767) - TAG_CLOCK_OFFSET;
    owner = pthread_self();
    count = 0;
    on = 1;
    echo_clock_python_setup(); /* a Python program's clocks are its time module's */
}

void echo_clock_teardown(void) { on = 0; }

/* A copy whose clocks parted: the representative's readings that it will never take are stepped over before
 * each forward it receives (they come first, in order: a probe sees the next message whatever its tag). */
void echo_clock_step_over(void) {
    for (int next_tag;;) {
        echo_probe_rep(&next_tag);
        if (next_tag != tag_clock) return;
        reading_t dropped;
        echo_from_rep(&dropped, (int)sizeof dropped, MPI_BYTE, tag_clock, MPI_STATUS_IGNORE);
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
    if (rc == 0 && virtual()) {
        reading_t r = {.kind = (int32_t)id, .v.ts = *ts};
        if (share(&r)) *ts = r.v.ts;
    }
    return rc;
}

/* ---- libc's clocks, as the application calls them ---- */
INTERPOSED int clock_gettime(clockid_t id, struct timespec *ts) {
    resolve();
    int rc = real_clock_gettime(id, ts);
    if (rc == 0 && virtual() && application_caller(__builtin_return_address(0))) {
        reading_t r = {.kind = (int32_t)id, .v.ts = *ts};
        if (share(&r)) *ts = r.v.ts;
    }
    return rc;
}

INTERPOSED int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    resolve();
    int rc = real_gettimeofday(tv, tz);
    if (rc == 0 && virtual() && application_caller(__builtin_return_address(0))) {
        reading_t r = {.kind = K_REALTIME_GTOD, .v.ts = {tv->tv_sec, tv->tv_usec}};
        if (share(&r)) *tv = (struct timeval){r.v.ts.tv_sec, r.v.ts.tv_nsec};
    }
    return rc;
}

INTERPOSED time_t time(time_t *out) {
    resolve();
    time_t t = real_time(NULL);
    if (virtual() && application_caller(__builtin_return_address(0))) {
        reading_t r = {.kind = K_TIME, .v.i = (int64_t)t};
        if (share(&r)) t = (time_t)r.v.i;
    }
    if (out) *out = t;
    return t;
}

INTERPOSED clock_t clock(void) {
    resolve();
    clock_t t = real_clock();
    if (virtual() && application_caller(__builtin_return_address(0))) {
        reading_t r = {.kind = K_CLOCK, .v.i = (int64_t)t};
        if (share(&r)) t = (clock_t)r.v.i;
    }
    return t;
}

/* getrusage: Fortran's cpu_time (libgfortran) and codes timing their own CPU use read it.  Its user and system
 * times are two readings (a reading holds one timespec); the other fields stay the copy's own. */
#include <sys/resource.h>
#define K_RUSAGE 2000 /* + 2 * (who + 1), + 1 for the system time: RUSAGE_SELF, _CHILDREN, _THREAD apart */

INTERPOSED int getrusage(int who, struct rusage *usage) {
    static int (*real_getrusage)(int, struct rusage *);
    if (!real_getrusage) real_getrusage = (int (*)(int, struct rusage *))dlsym(RTLD_NEXT, "getrusage");
    int rc = real_getrusage(who, usage);
    if (rc == 0 && virtual() && application_caller(__builtin_return_address(0))) {
        int32_t kind = K_RUSAGE + 2 * (who + 1);
        reading_t user = {.kind = kind, .v.ts = {usage->ru_utime.tv_sec, usage->ru_utime.tv_usec}};
        reading_t sys = {.kind = kind + 1, .v.ts = {usage->ru_stime.tv_sec, usage->ru_stime.tv_usec}};
        if (share(&user) && share(&sys)) {
            usage->ru_utime = (struct timeval){user.v.ts.tv_sec, user.v.ts.tv_nsec};
            usage->ru_stime = (struct timeval){sys.v.ts.tv_sec, sys.v.ts.tv_nsec};
        }
    }
    return rc;
}
