/* Silent data corruption: copies of a rank hand MPI the same data unless
 * something corrupted one of them.  At every call that carries data out of a
 * copy (sends, collective contributions), each copy hashes the bytes MPI would
 * send (derived types are packed first, so holes never count) and the copy
 * group compares:
 *
 *   detect  the representative posts its hash to its copies (an eager send: it
 *           waits for nobody) and each copy compares its own with it, off the
 *           representative's critical path; a divergence is recorded (by the
 *           copy that differs) and the run goes on.
 *   stop    synchronous: the representative collects the hashes before the real
 *           call; on a mismatch it fetches the odd copy's data to find the first
 *           differing byte, reports and ends the job (exit status ECHO_EXIT_DIVERGED).
 *   vote    synchronous, 3+ copies: the majority buffer wins; the representative
 *           sends it (taking it from a majority copy if it is itself the odd one),
 *           the odd copy's buffer is overwritten with it, and a corrected
 *           divergence is recorded.
 *
 * Where the hashes differ, each process's own addresses of the same place are told from data
 * (echo_sdc_addr.c): no divergence, and never voted on.
 *
 * Plan keys: sdc (detect|stop|vote), sdc_every N, sdc_only (all|collectives),
 * inject (bitflip:... / memflip:..., parsed and checked by echo/sdc.py). */
#define _GNU_SOURCE
#include "echo_clone.h"
#include "echo_hash.h"
#include "echo_records.h"
#include "echo_sdc_addr.h"

#include <dlfcn.h>
#include <malloc.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { SDC_OFF, SDC_DETECT, SDC_STOP, SDC_VOTE };
enum { VERDICT_OK, VERDICT_TAKE, VERDICT_GIVE }; /* to a copy: fine / receive the right data / send yours */
#define TAG_HASH (1 << 24)
#define TAG_VERDICT (TAG_HASH + 1)
#define TAG_DATA (TAG_HASH + 2)
#define TAG_MAPS (TAG_HASH + 3)
/* Copies see other ranks' stores into a shared window, and updates of MPI's window memory, at their next
 * synchronization call only (docs/rma.md): a program that reads them with plain loads and no MPI_Win_sync gives
 * its copies older values than its representative.  Where copy 0 holds such memory its copies have not been
 * given, their data is no evidence against copy 0's: it is not voted on; copy 0's stands (the run's data is
 * what it would be natively) and the copies that differ take it. */
#define UNVOTED                                                                                                    \
    "differs from copy 0, which holds window memory (other ranks' stores into a shared window, or MPI's updates) " \
    "its copies had not been given: they read it late (no MPI_Win_sync), so they did not outvote copy 0; copy 0's " \
    "data stands and this copy took it"
/* A buffer on the stack (a local variable) that a program sends whole but filled in part: the bytes it never wrote
 * hold what its own earlier calls left there (echo zeroes what MPI and echo leave: core/echo_stack.c), which may
 * differ between processes by nature: heap addresses, the stack protector's canary. */
#define ON_STACK                                                                                                   \
    "the buffer is on the stack (a local variable): if the program sends it whole but filled it in part, the "   \
    "bytes it never wrote hold what its own earlier calls left there (heap addresses, the stack protector's "     \
    "canary), each process's own"

static int mode, every = 1, only_collectives;
static char *excluded; /* ",MPI_X,MPI_Y,": --sdc-exclude */
static uint64_t checks;       /* data-carrying calls seen (same count on every copy) */
static int diverged;

/* injection (one process only) */
static struct { int on; uint64_t call; long byte; int bit; } bitflip;
static struct { int on; double after; unsigned seed; int bit; } memflip;

/* The bytes MPI would send for (buf, count, dt): the span itself when the type
 * is contiguous, else packed into `scratch` (holes left out). */
static const unsigned char *data_bytes(const void *buf, int count, MPI_Datatype dt, size_t *n, unsigned char **scratch) {
    int size = 0;
    MPI_Aint lb, extent, tlb, textent;
    *scratch = NULL;
    if (count <= 0 || PMPI_Type_size(dt, &size) != MPI_SUCCESS || size == 0) { *n = 0; return NULL; }
    PMPI_Type_get_extent(dt, &lb, &extent);
    PMPI_Type_get_true_extent(dt, &tlb, &textent);
    if (textent == size && (count == 1 || extent == size)) {
        *n = (size_t)count * (size_t)size;
        return (const unsigned char *)buf + tlb;
    }
    int psize = 0, pos = 0;
    PMPI_Pack_size(count, dt, MPI_COMM_SELF, &psize);
    *scratch = malloc((size_t)psize);
    PMPI_Pack(buf, count, dt, *scratch, psize, &pos, MPI_COMM_SELF);
    *n = (size_t)pos;
    return *scratch;
}

#define event echo_event

/* ---- set-up ---- */

static double plan_number(const char *spec, const char *key, double fallback) {
    const char *p = spec ? strstr(spec, key) : NULL;
    return p ? atof(p + strlen(key)) : fallback;
}

#if defined(__x86_64__)
static uint64_t tsc_now(void) {
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}
/* the counter when this process set up SDC: a counter value the job read is later, give or take the processes'
 * start-up (ten minutes of a 4 GHz counter is ample), so a small integer or a double on a host up for less than a day
 * is not taken for one (unless the host is up for less than ten minutes) */
static uint64_t tsc_at_setup;
#define TSC_START_MARGIN (600ull * 4000000000ull)
#endif

void echo_sdc_init(void) {
#if defined(__x86_64__)
    tsc_at_setup = tsc_now();
#endif
    const char *m = echo_plan_value("sdc");
    mode = !m ? SDC_OFF : !strcmp(m, "detect") ? SDC_DETECT : !strcmp(m, "stop") ? SDC_STOP : !strcmp(m, "vote") ? SDC_VOTE : SDC_OFF;
    const char *v = echo_plan_value("sdc_every");
    every = v ? atoi(v) : 1;
    if (every < 1) every = 1;
    v = echo_plan_value("sdc_only");
    only_collectives = v && !strcmp(v, "collectives");
    if (mode != SDC_OFF) {
        /* Bytes the program never wrote must be alike in a representative and its copies, whose heaps differ in
         * history (MPI allocates in the representative only): glibc fills every chunk malloc returns (with
         * ECHO_HEAP_FILL ^ 0xff) and frees (with ECHO_HEAP_FILL), in every process; echorun turned glibc's
         * per-thread cache off, which recycles chunks unfilled (echo/sdc.py's heap_tunables).  A fixed mmap
         * threshold: a dynamic one moves with what the process freed, so the same request would come zeroed from
         * the kernel in one process and filled from the heap in another. */
        mallopt(M_PERTURB, ECHO_HEAP_FILL);
        mallopt(M_MMAP_THRESHOLD, 128 * 1024);
        /* and the stack below the program's frame, where MPI's frames (deep in a representative, echo's channel in
         * its copies) left different bytes: zeroed when each call returns (core/echo_stack.c) */
        /* not under Valgrind: its client stack ends where the program has been, and it tracks unwritten bytes
         * itself (a memcheck copy under --sdc died writing below it) */
        echo_stack_scrub = echo_under_valgrind() ? 0 : ECHO_STACK_SCRUB_DEPTH;
    }
    v = echo_plan_value("sdc_exclude");
    if (v && *v && asprintf(&excluded, ",%s,", v) < 0) excluded = NULL;
    /* inject lines: "bitflip rank=R copy=K call=N byte=B bit=b" / "memflip rank=R copy=K after=S seed=X bit=b" */
    const char *inj = echo_plan_value("inject");
    if (inj && (int)plan_number(inj, "rank=", -1) == echo.app_rank && (int)plan_number(inj, "copy=", -1) == echo.copy) {
        if (!strncmp(inj, "bitflip", 7)) {
            bitflip.on = 1;
            bitflip.call = (uint64_t)plan_number(inj, "call=", 0);
            bitflip.byte = (long)plan_number(inj, "byte=", 0);
            bitflip.bit = (int)plan_number(inj, "bit=", 0);
        } else if (!strncmp(inj, "memflip", 7)) {
            memflip.on = 1;
            memflip.after = plan_number(inj, "after=", 0);
            memflip.seed = (unsigned)plan_number(inj, "seed=", 1);
            memflip.bit = (int)plan_number(inj, "bit=", 0);
        }
    }
}

int echo_sdc_diverged(void) { return diverged; }

/* ---- memflip: a bit of a random writable anonymous page, once, after a time ---- */

static void maybe_memflip(void) {
    if (!memflip.on) return;
    static double t0 = -1;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double t = (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
    if (t0 < 0) t0 = t;
    if (t - t0 < memflip.after) return;
    memflip.on = 0;
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps) return;
    char line[512];
    unsigned long lo[256], hi[256];
    int n = 0;
    while (n < 256 && fgets(line, sizeof line, maps)) {
        unsigned long a, b;
        char perms[8], path[256] = "";
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &a, &b, perms, path) >= 3 && !strncmp(perms, "rw-p", 4) &&
            (path[0] == 0 || !strcmp(path, "[heap]"))) {
            lo[n] = a; hi[n] = b; n++;
        }
    }
    fclose(maps);
    if (!n) return;
    srand(memflip.seed);
    int r = rand() % n;
    unsigned char *addr = (unsigned char *)(lo[r] + (unsigned long)rand() % (hi[r] - lo[r]));
    *addr ^= (unsigned char)(1u << (memflip.bit & 7));
    char detail[128];
    snprintf(detail, sizeof detail, "flipped bit %d at address %p", memflip.bit & 7, (void *)addr);
    event("injection", "memflip", 0, -1, -1, 0, echo.copy, -1, detail);
}

/* ---- the check ---- */

/* --sdc-exclude: the same answer on every copy (the same call of the same program) */
static int is_excluded(const char *fn) {
    if (!excluded) return 0;
    size_t len = strlen(fn);
    for (const char *at = strstr(excluded, fn); at; at = strstr(at + 1, fn))
        if (at[-1] == ',' && at[len] == ',') return 1;
    return 0;
}

/* What the differing bytes look like, when they differ by nature rather than by corruption: malloc's fill
 * (memory the program never wrote: every process fills it alike under --sdc, so one side wrote it and the other
 * did not, or the stack's leftovers differ), an address (each process's own memory), a time-stamp counter. */
/* copies read their representative's time-stamp counter (under --sdc unless --tsc own: echo_tsc.c) */
static int tsc_shared(void) {
    const char *v = echo_plan_value("tsc");
    return v && strcmp(v, "share") == 0;
}

/* ma, mb: each side's memory map (NULL: it could not be read, and `why` says why) */
static size_t differing_bytes(const unsigned char *a, const unsigned char *b, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += a[i] != b[i];
    return k;
}

/* A program running several OpenMP threads a process combines what they computed in the order they finish
 * (atomic or critical updates of a shared grid, dynamic schedules), so the last bits of its sums may differ from
 * run to run natively too, and so between copies: no copy can be given its representative's order.  Said where
 * the bytes look like nothing else (CP2K with 2 threads a rank wrote 4 different restart files in 4 native runs;
 * with 1, the same file every time).  omp_get_max_threads is the OpenMP runtime's, if the program loaded one. */
static void threads_note(char *out, size_t len) {
    int (*max_threads)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "omp_get_max_threads");
    int n = max_threads ? max_threads() : 1;
    if (n > 1)
        snprintf(out, len, "; the program runs %d OpenMP threads a process: sums its threads combine in the order "
                 "they finish (atomic or critical updates, dynamic schedules) may round differently from run to run, "
                 "natively too (compare two native runs with OMP_NUM_THREADS=%d; OMP_NUM_THREADS=1 makes them "
                 "repeatable)", n, n);
}

static void describe_bytes(const unsigned char *a, const echo_maps_t *ma, const unsigned char *b,
                           const echo_maps_t *mb, const char *why, int odd, size_t n, long at, char *out, size_t len) {
    *out = 0;
    if (at < 0) return;
    size_t from = (size_t)at, run_a = 0, run_b = 0;
    const unsigned char fill = (unsigned char)(ECHO_HEAP_FILL ^ 0xff), freed = (unsigned char)ECHO_HEAP_FILL;
    while (from + run_a < n && (a[from + run_a] == fill || a[from + run_a] == freed)) run_a++;
    while (from + run_b < n && (b[from + run_b] == fill || b[from + run_b] == freed)) run_b++;
    if (run_a >= 4 || run_b >= 4) {
        snprintf(out, len, "; the bytes from there are malloc's fill (0x%02x) in copy %d: memory the program "
                 "never wrote since it allocated it, sent as if it had", run_a >= 4 ? a[from] : b[from],
                 run_a >= 4 ? 0 : odd);
        return;
    }
    size_t w = from & ~(size_t)7;
    if (w + 8 > n) {
        threads_note(out, len);
        return;
    }
    uint64_t va, vb;
    memcpy(&va, a + w, 8);
    memcpy(&vb, b + w, 8);
#if defined(__x86_64__)
    uint64_t now = tsc_now();
    uint64_t since = tsc_at_setup > TSC_START_MARGIN ? tsc_at_setup - TSC_START_MARGIN : 0;
    if (va <= now && vb <= now && va >= since && vb >= since) {
        snprintf(out, len, "; the 8 bytes at %zu look like a time-stamp counter (rdtsc) value%s", w,
                 tsc_shared() ? "" : ": copies read their own counter (--tsc own), without --tsc own their representative's");
        return;
    }
#endif
    /* user-space addresses of x86-64 and AArch64 (47/48 bits) beyond 4 GiB, where heaps and mappings are: no
     * small integer, and no double (whose exponent sets the top bits) */
    if (va >= (1ull << 32) && vb >= (1ull << 32) && va < (1ull << 48) && vb < (1ull << 48)) {
        /* addresses of the same place in each process were no divergence (echo_sdc_addr.c): these are not */
        if (!ma || !mb) {
            snprintf(out, len, "; the 8 bytes at %zu look like addresses (0x%llx, 0x%llx), each process's own, but "
                     "could not be matched: %s", w, (unsigned long long)va, (unsigned long long)vb, why);
            return;
        }
        char wa[160], wb[160];
        echo_sdc_where(ma, va, wa, sizeof wa);
        echo_sdc_where(mb, vb, wb, sizeof wb);
        snprintf(out, len, "; the 8 bytes at %zu look like addresses (0x%llx, 0x%llx) but could not be matched as "
                 "each process's own address of the same place: copy 0's points to %s, copy %d's to %s", w,
                 (unsigned long long)va, (unsigned long long)vb, wa, odd, wb);
        return;
    }
#if defined(__x86_64__)
    /* a count of cycles (two readings' difference, as an MD code gathers them) is no larger than the counter now,
     * more than a few instructions take, and within a few orders of magnitude in a copy that did the same work (a
     * copy preempted on an oversubscribed node counts its time slice too: 100x was seen in CI): small integers
     * (a count, a flag) are not taken for one */
    uint64_t lo_v = va < vb ? va : vb, hi_v = va < vb ? vb : va;
    if (hi_v <= now && lo_v >= 1000 && hi_v / lo_v < 1000000 && !tsc_shared())
        snprintf(out, len, "; the 8 bytes at %zu (%llu, %llu) could be cycle counts read with rdtsc: copies read "
                 "their own counter (--tsc own), without --tsc own their representative's", w, (unsigned long long)va,
                 (unsigned long long)vb);
#endif
    if (!*out) threads_note(out, len);
}

static long first_difference(const unsigned char *a, const unsigned char *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i]) return (long)i;
    return -1;
}

static void write_back(void *buf, int count, MPI_Datatype dt, const unsigned char *bytes, size_t n) {
    int pos = 0;
    PMPI_Unpack(bytes, (int)n, &pos, buf, count, dt, MPI_COMM_SELF);
}

/* The lowest byte of (count, dt) at offset 0, and how many bytes the buffer spans from it (a negative extent
 * lays the elements out downwards). */
static void span_of(int count, MPI_Datatype dt, MPI_Aint *lo, MPI_Aint *span) {
    MPI_Aint lb, extent, tlb, textent;
    PMPI_Type_get_extent(dt, &lb, &extent);
    PMPI_Type_get_true_extent(dt, &tlb, &textent);
    MPI_Aint rest = (MPI_Aint)(count - 1) * extent;
    *lo = extent >= 0 ? tlb : tlb + rest;
    *span = extent >= 0 ? rest + textent : textent - rest;
}

/* bitflip: bit b of byte B of the send buffer, counted from its lowest byte (a hole of a derived type is the
 * program's data all the same: tests/preload/test_sdc.py flips one).  A byte past the buffer is the program's other
 * memory, which the test would corrupt and no comparison sees: never flipped, and the injection says it did not
 * fire and why (echo/injections.py reads the event). */
static void flip(const char *fn, const void *buf, int count, MPI_Datatype dt, uint64_t seq, int32_t comm,
                 int32_t peer) {
    MPI_Aint lo, span;
    span_of(count, dt, &lo, &span);
    char detail[200];
    if (bitflip.byte >= (long)span) {
        snprintf(detail, sizeof detail, "byte %ld is past the end of %s's send buffer (%lld bytes): nothing was "
                 "flipped", bitflip.byte, fn, (long long)span);
        event("injection-not-fired", fn, seq, comm, peer, 0, echo.copy, bitflip.byte, detail);
        return;
    }
    ((unsigned char *)buf)[lo + bitflip.byte] ^= (unsigned char)(1u << (bitflip.bit & 7));
    snprintf(detail, sizeof detail, "flipped bit %d of byte %ld of the send buffer", bitflip.bit & 7, bitflip.byte);
    event("injection", fn, seq, comm, peer, 0, echo.copy, bitflip.byte, detail);
}

/* ---- detect: a hash, and the bytes themselves when they are few ----
 * Addresses are published in small messages (a word per buffer, a struct with a pointer in it), so up to
 * SDC_INLINE bytes the representative sends its bytes with its hash, and the mappings its addresses among them
 * point into (echo_sdc_addr.c: described at the call, since its memory may have changed by the time a copy
 * compares): one small eager message as before, and a copy whose hash differs tells addresses from data without
 * waiting for anybody, on any host.  Beyond that only the hash travels and a difference stays a divergence
 * (--sdc stop matches addresses at any size). */
#define SDC_INLINE 256
#define SDC_INLINE_MAPS (SDC_INLINE / 8)
typedef struct {
    uint64_t hash;
    int32_t n, nmaps; /* n: how many bytes follow, -1 for none */
    unsigned char bytes[SDC_INLINE];
    echo_map_t maps[SDC_INLINE_MAPS];
} rep_hash_t;

/* A copy whose hash differs from its representative's: 1 if the bytes differ only by addresses of the same place
 * in each, else 0, the first differing byte (-1: unknown) and what the bytes look like. */
static int only_addresses(rep_hash_t *theirs, const unsigned char *mine, size_t n, long *byte, char *looks,
                          size_t len) {
    *byte = -1;
    *looks = 0;
    if (theirs->n < 0 || (size_t)theirs->n != n) return 0;
    echo_maps_t ma, mb = {0};
    echo_maps_of(theirs->maps, theirs->nmaps, &ma);
    size_t tlen;
    char *text = echo_maps_text(0, &tlen);
    int mapped = echo_maps_parse(text, &mb);
    free(text);
    /* without its own map a copy cannot match addresses: the first byte that differs at all */
    *byte = mapped ? echo_sdc_unlike(theirs->bytes, &ma, mine, &mb, n, NULL) : first_difference(theirs->bytes, mine, n);
    if (*byte >= 0)
        describe_bytes(theirs->bytes, mapped ? &ma : NULL, mine, mapped ? &mb : NULL,
                       "this copy's memory map (/proc/self/maps) could not be read", echo.copy, n, *byte, looks, len);
    echo_maps_free(&mb);
    return *byte < 0;
}

static void detect(const char *fn, const unsigned char *bytes, size_t n, uint64_t h, uint64_t seq, int32_t comm,
                   int32_t peer, int on_stack) {
    rep_hash_t msg;
    if (echo_is_rep()) {
        msg.hash = h;
        msg.n = n <= SDC_INLINE ? (int32_t)n : -1;
        msg.nmaps = 0;
        size_t len = offsetof(rep_hash_t, bytes);
        if (msg.n >= 0) {
            memcpy(msg.bytes, bytes, n);
            msg.nmaps = echo_sdc_addr_maps(bytes, n, msg.maps, SDC_INLINE_MAPS);
            len = offsetof(rep_hash_t, maps) + sizeof(echo_map_t) * (size_t)msg.nmaps;
        }
        echo_to_copies(&msg, (int)len, MPI_BYTE, TAG_HASH);
        return;
    }
    /* matched in program order, like every message from the representative */
    echo_from_rep(&msg, (int)sizeof msg, MPI_BYTE, TAG_HASH, MPI_STATUS_IGNORE);
    if (msg.hash == h) return;
    long byte;
    char looks[512];
    if (only_addresses(&msg, bytes, n, &byte, looks, sizeof looks)) return;
    diverged = 1;
    char detail[1024];
    if (byte >= 0)
        snprintf(detail, sizeof detail, "differs from copy 0 from byte %ld%s%s%s%s%s", byte, looks,
                 *looks ? "; if that is the program's nature, not a corruption: --sdc-exclude " : "", *looks ? fn : "",
                 on_stack ? "; " : "", on_stack ? ON_STACK : "");
    else {
        threads_note(looks, sizeof looks);
        snprintf(detail, sizeof detail,
                 "hash differs from copy 0's (detect mode: the byte is not known beyond %d bytes; --sdc stop names it "
                 "and what it looks like, and tells each process's own addresses from data at any size: if the call "
                 "sends what differs by nature, such as a time-stamp counter, --sdc-exclude %s leaves it out%s)%s%s%s",
                 SDC_INLINE, fn, tsc_shared() ? "" : "; cycle counts read with rdtsc: without --tsc own copies read their "
                 "representative's counter", looks, on_stack ? "; " : "", on_stack ? ON_STACK : "");
    }
    event("divergence", fn, seq, comm, peer, n, echo.copy, byte, detail);
}

/* ---- stop and vote ----
 * Each copy sends its hash; where any differs, every copy sends its bytes and its memory map (so it works with
 * copies on another host), the representative tells addresses from data (echo_sdc_addr.c) and sends each copy
 * its final verdict.  A copy given other data keeps its own addresses (a patch of the differing data only), and
 * so does a representative outvoted: nobody is ever given another process's address. */
static void copy_check(const void *buf, int count, MPI_Datatype dt, const unsigned char *bytes, size_t n,
                       uint64_t h) {
    PMPI_Send(&h, 1, MPI_UINT64_T, 0, TAG_HASH, echo.clone_comm);
    int verdict;
    echo_from_rep(&verdict, 1, MPI_INT, TAG_VERDICT, MPI_STATUS_IGNORE);
    if (verdict != VERDICT_GIVE) return;
    PMPI_Send(bytes, (int)n, MPI_BYTE, 0, TAG_DATA, echo.clone_comm);
    size_t len = 0;
    char *text = echo_maps_text(0, &len);
    PMPI_Send(text ? text : "", (int)len, MPI_CHAR, 0, TAG_MAPS, echo.clone_comm);
    free(text);
    echo_from_rep(&verdict, 1, MPI_INT, TAG_VERDICT, MPI_STATUS_IGNORE);
    if (verdict != VERDICT_TAKE) return;
    unsigned char *right = malloc(n ? n : 1);
    echo_from_rep(right, (int)n, MPI_BYTE, TAG_DATA, MPI_STATUS_IGNORE);
    write_back((void *)buf, count, dt, right, n);
    free(right);
}

typedef struct {
    int C;
    const uint64_t *hs;
    unsigned char *data[64];
    echo_maps_t maps[64];
    int mapped[64];
} group_t;

/* the first byte where copies c and d differ other than by their own addresses, -1 if none */
static long unlike(const group_t *g, int c, int d, size_t n) {
    if (g->hs[c] == g->hs[d]) return -1;
    if (!g->mapped[c] || !g->mapped[d]) return first_difference(g->data[c], g->data[d], n);
    return echo_sdc_unlike(g->data[c], &g->maps[c], g->data[d], &g->maps[d], n, NULL);
}

static int support(const group_t *g, int c, size_t n) {
    int k = 0;
    for (int d = 0; d < g->C; d++) k += unlike(g, c, d, n) < 0;
    return k;
}

/* copy c's bytes with the data where it differs from copy `from` taken from `from`, its own addresses kept */
static unsigned char *patched(const group_t *g, int from, int c, size_t n) {
    unsigned char *p = malloc(n ? n : 1);
    memcpy(p, g->data[c], n);
    if (g->mapped[from] && g->mapped[c]) echo_sdc_unlike(g->data[from], &g->maps[from], g->data[c], &g->maps[c], n, p);
    else memcpy(p, g->data[from], n);
    return p;
}

static int rep_check(const char *fn, const void *buf, int count, MPI_Datatype dt, const unsigned char *bytes,
                     size_t n, uint64_t h, uint64_t seq, int32_t comm, int32_t peer) {
    int C = echo.ncopies;
    uint64_t hs[64];
    if (C > 64) echo_fatal("--sdc %s supports up to 64 copies of a rank", mode == SDC_STOP ? "stop" : "vote");
    hs[0] = h;
    echo_channel_wake(); /* copies asleep catch up and send their hashes */
    for (int c = 1; c < C; c++) PMPI_Recv(&hs[c], 1, MPI_UINT64_T, c, TAG_HASH, echo.clone_comm, MPI_STATUS_IGNORE);
    int agree = 1, verdict = VERDICT_OK;
    for (int c = 1; c < C; c++) agree &= hs[c] == h;
    if (agree) {
        for (int c = 1; c < C; c++) echo_to_copy(c, &verdict, 1, MPI_INT, TAG_VERDICT);
        return 0;
    }
    /* every copy's bytes and map: only on a mismatch */
    group_t g = {.C = C, .hs = hs};
    verdict = VERDICT_GIVE;
    for (int c = 1; c < C; c++) echo_to_copy(c, &verdict, 1, MPI_INT, TAG_VERDICT);
    echo_channel_wake(); /* the copies asked for their data read their verdict now */
    size_t len;
    char *text = echo_maps_text(0, &len);
    g.data[0] = (unsigned char *)bytes;
    g.mapped[0] = echo_maps_parse(text, &g.maps[0]);
    free(text);
    for (int c = 1; c < C; c++) {
        g.data[c] = malloc(n ? n : 1);
        PMPI_Recv(g.data[c], (int)n, MPI_BYTE, c, TAG_DATA, echo.clone_comm, MPI_STATUS_IGNORE);
        MPI_Status st;
        int tl = 0;
        PMPI_Probe(c, TAG_MAPS, echo.clone_comm, &st);
        PMPI_Get_count(&st, MPI_CHAR, &tl);
        text = malloc((size_t)tl + 1);
        PMPI_Recv(text, tl, MPI_CHAR, c, TAG_MAPS, echo.clone_comm, MPI_STATUS_IGNORE);
        text[tl] = 0;
        g.mapped[c] = tl > 0 && echo_maps_parse(text, &g.maps[c]);
        free(text);
    }
    int verdicts[64] = {0}, rc = 0, winner = 0, addresses = 0;
    int rep_support = support(&g, 0, n);
    if (rep_support == C) goto verdicts; /* each its own addresses, the same data: no divergence */
    int unseen = mode == SDC_VOTE && echo_win_unseen();
    winner = unseen || 2 * rep_support > C ? 0 : -1;
    for (int c = 1; c < C && winner < 0 && mode == SDC_VOTE; c++)
        if (2 * support(&g, c, n) > C) winner = c;
    /* Whoever takes another's data keeps its own addresses; an address that could not be matched (each process's
     * own, pointing to memory of its own, not to the same place) is not voted on: given to another process it
     * would point into memory that process does not own (a representative outvoted so died of SIGSEGV) */
    for (int c = 0; c < C && winner >= 0 && mode == SDC_VOTE; c++)
        if (unlike(&g, winner, c, n) >= 0 && g.mapped[winner] && g.mapped[c] &&
            echo_sdc_unvotable(g.data[winner], &g.maps[winner], g.data[c], &g.maps[c], n) >= 0) {
            winner = -1;
            addresses = 1;
        }
    if (unseen && winner == 0) { /* no vote: the copies may have read window memory late */
        for (int c = 1; c < C; c++) {
            if (unlike(&g, 0, c, n) < 0) continue;
            verdicts[c] = VERDICT_TAKE;
            event("unvoted", fn, seq, comm, peer, n, c, -1, UNVOTED);
        }
        goto verdicts;
    }
    if (mode == SDC_STOP || winner < 0) {
        int odd = 1; /* the first copy that differs from the representative in its data */
        while (odd < C && unlike(&g, 0, odd, n) < 0) odd++;
        long byte = unlike(&g, 0, odd, n);
        char looks[512];
        describe_bytes(bytes, g.mapped[0] ? &g.maps[0] : NULL, g.data[odd], g.mapped[odd] ? &g.maps[odd] : NULL,
                       "a memory map could not be read", odd, n, byte, looks, sizeof looks);
        if (byte >= 0 && differing_bytes(bytes, g.data[odd], n) > 1 && echo_stack_holds(buf)) {
            /* said whatever the bytes look like; not for one byte, as a flipped bit differs */
            size_t used = strlen(looks);
            snprintf(looks + used, sizeof looks - used, "; %s", ON_STACK);
        }
        char detail[1024];
        snprintf(detail, sizeof detail, "copy %d differs from copy 0%s%s%s%s", odd,
                 mode == SDC_STOP ? "" : addresses ? " in addresses of memory of its own (below): not voted on"
                 : " and no majority agrees: cannot vote", looks,
                 *looks ? "; if that is the program's nature, not a corruption: --sdc-exclude " : "", *looks ? fn : "");
        event("divergence", fn, seq, comm, peer, n, odd, byte, detail);
        echo_records_flush();
        char msg[1536];
        char peer_text[32] = ""; /* collectives have no peer */
        if (peer >= 0) snprintf(peer_text, sizeof peer_text, ", peer %d", peer);
        snprintf(msg, sizeof msg,
                 "echo: SDC: application rank %d: copy %d differs from copy 0 in %s (call #%llu, communicator %d"
                 "%s, %zu bytes), first differing byte %ld%s; stopping (--sdc %s%s%s)\n",
                 echo.app_rank, odd, fn, (unsigned long long)seq, comm, peer_text, n, byte, looks,
                 mode == SDC_STOP ? "stop" : "vote", *looks ? "; to leave this call out: --sdc-exclude " : "",
                 *looks ? fn : "");
        if (write(2, msg, strlen(msg)) < 0) { /* the event file has it too */ }
        echo_events_close();
        echo_records_close();
        PMPI_Abort(MPI_COMM_WORLD, ECHO_EXIT_DIVERGED);
    }
    /* vote: the majority's data wins, each process keeping its own addresses */
    for (int c = 0; c < C; c++) {
        long byte = unlike(&g, winner, c, n);
        if (byte < 0) continue;
        rc = 1;
        if (c == 0) { /* the representative itself is the odd one: the real call sends the majority's data */
            unsigned char *p = patched(&g, winner, 0, n);
            write_back((void *)buf, count, dt, p, n);
            g.data[0] = p; /* freed below */
            event("corrected", fn, seq, comm, peer, n, 0, byte, "copy 0 was outvoted; its buffer was overwritten");
        } else {
            verdicts[c] = VERDICT_TAKE;
            event("corrected", fn, seq, comm, peer, n, c, byte, "outvoted; its buffer was overwritten");
        }
    }
verdicts:
    for (int c = 1; c < C; c++) echo_to_copy(c, &verdicts[c], 1, MPI_INT, TAG_VERDICT);
    for (int c = 1; c < C; c++) {
        if (verdicts[c] != VERDICT_TAKE) continue;
        unsigned char *p = patched(&g, winner, c, n);
        echo_to_copy(c, p, (int)n, MPI_BYTE, TAG_DATA);
        free(p);
    }
    if (g.data[0] != bytes) free(g.data[0]);
    for (int c = 0; c < C; c++) {
        if (c) free(g.data[c]);
        echo_maps_free(&g.maps[c]);
    }
    return rc;
}

int echo_outgoing(const char *fn, int collective, const void *buf, int count, MPI_Datatype dt, int32_t comm,
                   int32_t peer) {
    if (echo_hooks.outgoing && buf != MPI_IN_PLACE && buf && count > 0) echo_hooks.outgoing(buf, count, dt);
    /* Whether the copies compare at this call must not depend on the buffer's address: with nothing to send
     * (count 0) a program may pass any pointer, NULL on one copy and a stray value on another, and the hash
     * exchange has to stay in step (a NULL buffer with a count is MPI_BOTTOM: compared like any other).  What
     * is compared is what MPI would read: at count 0, nothing. */
    if (mode == SDC_OFF || echo.ncopies < 2 || buf == MPI_IN_PLACE || is_excluded(fn)) return 0;
    maybe_memflip();
    if (only_collectives && !collective) return 0;
    uint64_t idx = checks++;
    if (idx % (uint64_t)every) return 0;
    uint64_t seq = echo_record_seq();
    int type_size = 0;
    if (count > 0) PMPI_Type_size(dt, &type_size);
    if (bitflip.on && seq >= bitflip.call && type_size > 0) { /* corrupt this copy's data, once */
        bitflip.on = 0;
        flip(fn, buf, count, dt, seq, comm, peer);
    }
    unsigned char *scratch;
    size_t n;
    const unsigned char *bytes = data_bytes(buf, count, dt, &n, &scratch);
    uint64_t h = echo_hash64(bytes, n);

    if (mode == SDC_DETECT) {
        detect(fn, bytes, n, h, seq, comm, peer, echo_stack_holds(buf));
        free(scratch);
        return 0;
    }
    if (!echo_is_rep()) {
        copy_check(buf, count, dt, bytes, n, h);
        free(scratch);
        return 0;
    }
    int rc = rep_check(fn, buf, count, dt, bytes, n, h, seq, comm, peer);
    free(scratch);
    return rc;
}

int echo_outgoing_blocks(const char *fn, const void *buf, int n, const int *counts, const int *displs,
                          MPI_Datatype dt, int32_t comm) {
    if ((mode == SDC_OFF && !echo_hooks.outgoing) || buf == MPI_IN_PLACE) return 0;
    MPI_Datatype t;
    PMPI_Type_indexed(n, counts, displs, dt, &t);
    PMPI_Type_commit(&t);
    int rc = echo_outgoing(fn, 1, buf, 1, t, comm, -1);
    PMPI_Type_free(&t);
    return rc;
}

int echo_outgoing_wblocks(const char *fn, const void *buf, int n, const int *counts, const int *bdispls,
                           const MPI_Datatype *types, int32_t comm) {
    if ((mode == SDC_OFF && !echo_hooks.outgoing) || buf == MPI_IN_PLACE) return 0;
    MPI_Aint *d = malloc(sizeof *d * (size_t)n);
    for (int i = 0; i < n; i++) d[i] = bdispls[i];
    MPI_Datatype t;
    PMPI_Type_create_struct(n, counts, d, (MPI_Datatype *)types, &t);
    PMPI_Type_commit(&t);
    int rc = echo_outgoing(fn, 1, buf, 1, t, comm, -1);
    PMPI_Type_free(&t);
    free(d);
    return rc;
}
