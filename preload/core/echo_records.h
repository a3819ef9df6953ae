/* Record files: what every process of a run did, one fixed-size record per
 * intercepted MPI call (the whole trace, or call 0 and a ring of the last calls).  Layout version 3 (read by echo/runformat/records.py; documented
 * in docs/records.md):
 *
 *   header, header_size bytes (ECHO_REC_HEADER_SIZE or a multiple that holds the function table; the
 *   machine's byte order, little-endian on x86):
 *     char     magic[8]        "ECHOREC\0"
 *     uint32   version, header_size, record_size, nfunctions
 *     int32    app_rank, copy, ncopies, real_rank, pid
 *     uint32   nslots          role-data slots per record (0..ECHO_REC_MAX_SLOTS)
 *     double   start_time      Unix time when the library was loaded (the clock origin)
 *     uint64   tick_origin     clock ticks at that moment
 *     uint64   ns, ticks       elapsed since the origin in both clocks (ticks -> ns), updated as records grow
 *     uint64   nrecords        whole records written so far (updated after each one: a process that dies
 *                              leaves the file longer than its records); the calls the process made
 *     uint64   ring            0: the records are every call, in order; else call 0's record, then a ring of
 *                              this many slots, call n >= 1 in slot 1 + (n - 1) % ring
 *     uint64   first           a ring's first call after call 0 it holds (the calls between are totals in the
 *                              .lost file); 1 until it wraps
 *     char     run_id[64], host[64], role[64], slot_names[ECHO_REC_MAX_SLOTS][32], mpi_library[256]
 *     char     functions[]     NUL-separated function names; a record's `fn` indexes them
 *   records, record_size bytes each: nrecords of them (the file may hold zeros after them).
 */
#ifndef ECHO_RECORDS_H
#define ECHO_RECORDS_H

#include "compat/echo_mpi.h"
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "echo_constants.h" /* ECHO_REC_VERSION, ECHO_REC_MAX_SLOTS (generated from echo/runformat/constants.py) */
#define ECHO_REC_HEADER_SIZE 16384 /* at least; doubled until the function table fits */
#define ECHO_REC_TABLE_OFFSET 1064 /* where the function table starts */

typedef struct echo_record {
    uint64_t seq;      /* 0, 1, 2, ... in call order */
    uint16_t fn;       /* index in the header's function table */
    uint16_t flags;    /* ECHO_REC_* */
    int32_t comm;      /* communicator id: 0 world, 1 self, then in order of first use; -1 none */
    int32_t peer;      /* application rank of dest/source/root; -1 none, -2 MPI_ANY_SOURCE, -3 MPI_PROC_NULL */
    int32_t tag;       /* -1 none or MPI_ANY_TAG */
    uint64_t bytes;    /* count x size of the datatype the call names (a receive's capacity) */
    uint64_t t_start;  /* clock ticks since tick_origin */
    uint64_t t_end;
    uint64_t slot[];   /* nslots of role data (counter deltas, buffer hashes), named in the header */
} echo_record_t;

enum { ECHO_REC_ERROR = 1 }; /* the call returned an error code */

/* The clock of the records: the TSC where it is constant (x86-64), else
 * CLOCK_MONOTONIC in ns.  Calls are timed with two reads, so it must be cheap.
 * While the application's rdtsc traps (echo_tsc.c) an MPI call's own reads of the
 * counter would fault: that call is timed by the kernel's monotonic clock through a
 * system call, in ticks (echo_records.c). */
uint64_t echo_ticks_trapped(void);
extern __thread __attribute__((tls_model("initial-exec"))) int echo_ticks_by_kernel; /* set by echo_tsc_enter */
static inline uint64_t echo_ticks(void) {
#if defined(__x86_64__)
    if (__builtin_expect(echo_ticks_by_kernel, 0)) return echo_ticks_trapped();
    return __rdtsc();
#else
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
#endif
}

static inline int32_t echo_peer(int rank) {
    return rank == MPI_ANY_SOURCE ? -2 : rank == MPI_PROC_NULL ? -3 : rank;
}

/* Called by every generated wrapper after the call: fills the next record (or ring slot) in the
 * mapped record file (kept by the kernel whatever ends the process). */
void echo_record(uint16_t fn, uint64_t t_start, int32_t comm, int32_t peer, int32_t tag, uint64_t bytes, int rc);
int32_t echo_comm_id(MPI_Comm comm);
uint64_t echo_record_seq(void); /* the call number of the call under way */
uint64_t echo_bytes(int64_t count, MPI_Datatype dt);
/* a v- or w-collective's counts x type sizes over n processes (preload/gen/gen_bytes.py) */
uint64_t echo_sum_bytes(const int *counts, MPI_Datatype dt, uint64_t n);
uint64_t echo_sum_bytes_c(const MPI_Count *counts, MPI_Datatype dt, uint64_t n);
uint64_t echo_sum_bytes_w(const int *counts, const MPI_Datatype *types, uint64_t n);
uint64_t echo_sum_bytes_w_c(const MPI_Count *counts, const MPI_Datatype *types, uint64_t n);

/* Role collectors declare their slots before the records are opened, and fill
 * them during a call (echo_record_slots() is the record being made). */
int echo_records_add_slot(const char *name);
uint64_t *echo_record_slots(void);

void echo_records_open(const char *const *functions, int nfunctions);
void echo_records_flush(void); /* the clock calibration, in place; async-signal-safe */
void echo_records_close(void);

#endif
