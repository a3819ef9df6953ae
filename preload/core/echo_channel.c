/* The channel between a representative and its copies: every message a copy
 * waits for goes through here (forwards, SDC hashes and verdicts, clock
 * readings), in program order.
 *
 * Copies wait for their representative most of the time, and their
 * representative must keep its native speed.  When a rank's copies all live on
 * its representative's host, the channel is a ring in shared memory: the
 * representative writes each message once, whatever the number of copies (one
 * copy of the data and an atomic store), and each copy reads it at its own pace;
 * a copy with nothing to read sleeps on a futex instead of polling, so waiting
 * copies leave the cores to the representatives.
 *
 * The representative does not wake its copies for each message: a wake-up is a
 * system call on the representative's path and a context switch that, with more
 * processes than cores, takes a core from a representative (a copy woken per
 * message made a 1-byte ping-pong 17x slower than native on 2 cores).  A copy
 * wakes by itself every SLEEP_NS and reads everything written meanwhile in one
 * go; it is woken at once only when its representative is about to wait for it:
 * the ring is half full, a message travels as MPI messages, the representative
 * reached MPI_Finalize, or it waits for its copies' answers (--sdc stop/vote,
 * echo_channel_wake).  The representative waits for its copies only when the
 * ring is full (the slowest copy is RING_BYTES behind).  A message too large for the
 * ring (or described from MPI_BOTTOM) travels as MPI messages, announced in the
 * ring so that order is kept.  Copies on another host: every message is an MPI
 * message on clone_comm, and copies wait inside MPI. */
#define _GNU_SOURCE
#include "echo_internal.h"
#include "echo_records.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define RING_BYTES (2u << 20)
#define LARGE_BYTES (RING_BYTES / 4) /* larger messages go as MPI messages */
#define SLEEP_NS (5 * 1000 * 1000) /* a sleeper looks again (and lets MPI progress) at least this often */
#define PROGRESS_EVERY 64          /* records a copy reads between two turns of MPI's progress engine */
#define MAX_INLINE_COPIES 16

/* a message in the ring, one that follows as MPI messages, the ring's end, a message in the ring as the span of
 * memory its type covers (LAYOUT_SPAN) */
enum { REC_DATA, REC_MPI, REC_PAD, REC_SPAN };
#define TAG_END (-100)                /* the representative's last record: it reached MPI_Finalize */

typedef struct {
    uint32_t len;  /* payload bytes */
    int32_t tag;
    int32_t kind;
    int32_t dest;  /* the copy it is for, or -1: every copy */
} record_t;        /* followed by the payload, padded to 16 bytes */

typedef struct {
    _Atomic uint64_t head;       /* bytes the representative has written */
    _Atomic uint32_t posted;     /* futex of sleeping copies: changes at every message */
    _Atomic uint32_t sleepers;
    _Atomic uint32_t freed;      /* futex of the representative when the ring is full: changes as copies read */
    _Atomic uint32_t rep_sleeps;
    _Atomic uint32_t attached;   /* processes of the rank that mapped the channel */
    _Atomic uint64_t tail[];     /* bytes copy k has read: tail[k], k >= 1 */
} header_t;

static header_t *hdr;            /* NULL: no shared channel (copies on other hosts, or no copies) */
static unsigned char *ring;
static size_t header_bytes, mapped_bytes;
static uint64_t min_tail;        /* the representative's last look at its slowest copy */
static char shm_name[128];

static void futex_wait(_Atomic uint32_t *word, uint32_t seen) {
    struct timespec limit = {0, SLEEP_NS};
    syscall(SYS_futex, word, FUTEX_WAIT, seen, &limit, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word) { syscall(SYS_futex, word, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0); }

/* The representative is about to wait for its copies: those asleep read what waits for them now. */
void echo_channel_wake(void) {
    if (hdr && atomic_load(&hdr->sleepers)) futex_wake(&hdr->posted);
}

static void learn_basic_types(void);

void echo_channel_setup(void) {
    hdr = NULL;
    if (!echo_has_copies()) return;
    /* every copy on this host?  (a collective of the rank's copies, at set-up) */
    MPI_Comm local;
    int nlocal = 0;
    PMPI_Comm_split_type(echo.clone_comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    PMPI_Comm_size(local, &nlocal);
    PMPI_Comm_free(&local);
    if (nlocal != echo.ncopies) return;
    /* every process opens (the first creates) the same zeroed pages: no process waits for another here */
    const char *run_id = echo_plan_value("run_id");
    snprintf(shm_name, sizeof shm_name, "/echo-%s-r%d", run_id ? run_id : "run", echo.app_rank);
    header_bytes = (sizeof(header_t) + sizeof(uint64_t) * (size_t)echo.ncopies + 4095) & ~(size_t)4095;
    mapped_bytes = header_bytes + RING_BYTES;
    /* the pages reserved before they are mapped: a page of a mapped file that a full /dev/shm cannot hold raises
     * SIGBUS in the application when touched (a container's /dev/shm is often small) */
    int fd = shm_open(shm_name, O_RDWR | O_CREAT, 0600);
    void *p = fd >= 0 && posix_fallocate(fd, 0, (off_t)mapped_bytes) == 0
                  ? mmap(NULL, mapped_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (fd >= 0) close(fd);
    /* every copy of the rank takes the channel, or none does (they go on over MPI): decided together */
    int mine = p != MAP_FAILED, all = 0;
    PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, echo.clone_comm);
    if (!all) {
        if (mine) munmap(p, mapped_bytes);
        shm_unlink(shm_name);
        return;
    }
    hdr = p;
    ring = (unsigned char *)p + header_bytes;
    learn_basic_types();
    min_tail = 0;
    /* the last of the rank's processes to map it removes the name (a copy slow to start, under Valgrind say, must
     * not find the name gone and make a channel of its own); echorun removes what a job that died left */
    if (atomic_fetch_add(&hdr->attached, 1) + 1 == (uint32_t)echo.ncopies) shm_unlink(shm_name);
}

/* how (count, dt) lies in a record: its bytes as they are, the span of memory its data lies in (holes too: the
 * copy takes the data out with MPI's own copy), or packed */
enum { LAYOUT_PACKED, LAYOUT_CONTIGUOUS, LAYOUT_SPAN };
static void put(int kind, int tag, int dest, size_t len, const void *buf, int count, MPI_Datatype dt, MPI_Aint lb,
                int layout);
static record_t *next(void);
static void advance(const record_t *r);

/* The representative's last record says it reached MPI_Finalize; a copy reads on to it (what it did not take is
 * dropped, and a large message still waiting in MPI is received), so that nothing waits for anybody. */
void echo_channel_teardown(void) {
    if (!hdr) return;
    if (echo_is_rep()) {
        put(REC_DATA, TAG_END, -1, 0, NULL, 0, MPI_BYTE, 0, LAYOUT_CONTIGUOUS);
    } else {
        for (record_t *r;; advance(r)) {
            r = next();
            if (r->tag == TAG_END) break;
            if (r->kind == REC_MPI) { /* its sender waits for it */
                MPI_Status st;
                int n = 0;
                PMPI_Probe(0, r->tag, echo.clone_comm, &st);
                PMPI_Get_count(&st, MPI_BYTE, &n);
                void *scratch = malloc(n > 0 ? (size_t)n : 1);
                PMPI_Recv(scratch, n, MPI_BYTE, 0, r->tag, echo.clone_comm, MPI_STATUS_IGNORE);
                free(scratch);
            }
        }
    }
    munmap(hdr, mapped_bytes);
    hdr = NULL;
}

/* ---- the representative's side ---- */

static uint64_t slowest_tail(void) {
    uint64_t m = atomic_load(&hdr->head);
    for (int k = 1; k < echo.ncopies; k++) {
        uint64_t t = atomic_load_explicit(&hdr->tail[k], memory_order_acquire);
        if (t < m) m = t;
    }
    return m;
}

/* room for `need` bytes at the head, waiting (asleep) for the slowest copy if the ring is full */
static void reserve(uint64_t head, size_t need) {
    while (head + need - min_tail > RING_BYTES) {
        uint32_t seen = atomic_load(&hdr->freed);
        min_tail = slowest_tail();
        if (head + need - min_tail <= RING_BYTES) return;
        echo_channel_wake();
        atomic_fetch_add(&hdr->rep_sleeps, 1);
        if (atomic_load(&hdr->freed) == seen) futex_wait(&hdr->freed, seen);
        atomic_fetch_sub(&hdr->rep_sleeps, 1);
    }
}

/* Writes one record: `len` bytes of (buf, count, dt), copied from buf + lb unless packed. */
static void put(int kind, int tag, int dest, size_t len, const void *buf, int count, MPI_Datatype dt, MPI_Aint lb,
                int layout) {
    size_t need = sizeof(record_t) + ((len + 15) & ~(size_t)15);
    uint64_t head = atomic_load_explicit(&hdr->head, memory_order_relaxed);
    size_t at = (size_t)(head % RING_BYTES);
    if (at + need > RING_BYTES) { /* no record wraps: the rest of the ring is skipped */
        reserve(head, RING_BYTES - at);
        *(record_t *)(ring + at) = (record_t){(uint32_t)(RING_BYTES - at - sizeof(record_t)), 0, REC_PAD, -1};
        head += RING_BYTES - at;
        at = 0;
    }
    reserve(head, need);
    *(record_t *)(ring + at) = (record_t){(uint32_t)len, tag, kind, dest};
    unsigned char *payload = ring + at + sizeof(record_t);
    if (len && layout != LAYOUT_PACKED) {
        memcpy(payload, (const unsigned char *)buf + lb, len);
    } else if (len) {
        int pos = 0; /* Pack_size may promise more than packing takes */
        PMPI_Pack(buf, count, dt, payload, (int)len, &pos, MPI_COMM_SELF);
        ((record_t *)(ring + at))->len = (uint32_t)pos;
    }
    atomic_store_explicit(&hdr->head, head + need, memory_order_release);
    atomic_fetch_add(&hdr->posted, 1);
    /* copies asleep are woken only if the representative will wait for them (see the top of this file); the
     * slowest copy's place is looked at again only when the last look says the ring may be half full */
    int half_full = 0;
    if (head + need - min_tail > RING_BYTES / 2) {
        min_tail = slowest_tail();
        half_full = head + need - min_tail > RING_BYTES / 2;
    }
    if (kind == REC_MPI || tag == TAG_END || half_full) echo_channel_wake();
}

/* The predefined types most messages carry, learnt once: count x size bytes in one span from the buffer (lower
 * bound 0, extent = size), without asking MPI three questions per message (they were most of the cost of
 * writing a small message to the ring). Most frequent first: a derived type is looked for in vain. */
#define BASIC_TYPES 24
static MPI_Datatype basic_type[BASIC_TYPES];
static int basic_size[BASIC_TYPES], nbasic;

static void learn_basic_types(void) {
    const MPI_Datatype all[] = {MPI_DOUBLE, MPI_INT, MPI_BYTE, MPI_CHAR, MPI_FLOAT, MPI_LONG, MPI_UNSIGNED,
                                MPI_LONG_LONG, MPI_UNSIGNED_LONG, MPI_UNSIGNED_LONG_LONG, MPI_INT64_T, MPI_INT32_T,
                                MPI_UINT64_T, MPI_UINT32_T, MPI_SHORT, MPI_UNSIGNED_SHORT, MPI_SIGNED_CHAR,
                                MPI_UNSIGNED_CHAR, MPI_INT8_T, MPI_UINT8_T, MPI_INT16_T, MPI_UINT16_T, MPI_C_BOOL,
                                MPI_AINT};
    nbasic = 0;
    for (size_t i = 0; i < sizeof all / sizeof *all && nbasic < BASIC_TYPES; i++) {
        int size = 0;
        MPI_Aint lb = -1, extent = 0, tlb = -1, textent = 0;
        if (all[i] == MPI_DATATYPE_NULL || PMPI_Type_size(all[i], &size) != MPI_SUCCESS) continue;
        PMPI_Type_get_extent(all[i], &lb, &extent);
        PMPI_Type_get_true_extent(all[i], &tlb, &textent);
        if (size > 0 && lb == 0 && tlb == 0 && extent == size && textent == size) {
            basic_type[nbasic] = all[i];
            basic_size[nbasic++] = size;
        }
    }
}

/* The bytes (count, dt) takes in the ring and how they lie there (LAYOUT_*), from `*lb` bytes after the buffer
 * unless packed.  A type with holes goes as the span of memory it covers when that is not much more than its
 * data: MPI_Pack and MPI_Unpack may drop bytes MPI's transfer carries (Open MPI 5 packs a strided
 * MPI_LONG_DOUBLE as the 10 value bytes of each 16, echo_pack.c), and the copy takes its data out of the span with
 * MPI's own copy.  A sparse type is packed (its span would fill the ring). */
static int ring_layout(int count, MPI_Datatype dt, size_t *len, MPI_Aint *lb) {
    int size = 0;
    *lb = 0;
    for (int i = 0; i < nbasic; i++)
        if (basic_type[i] == dt) {
            *len = count > 0 ? (size_t)count * (size_t)basic_size[i] : 0;
            return LAYOUT_CONTIGUOUS;
        }
    if (count <= 0 || PMPI_Type_size(dt, &size) != MPI_SUCCESS || size == 0) {
        *len = 0;
        return LAYOUT_CONTIGUOUS;
    }
    MPI_Aint xlb, extent, textent;
    PMPI_Type_get_extent(dt, &xlb, &extent);
    PMPI_Type_get_true_extent(dt, lb, &textent);
    if (textent == size && (count == 1 || extent == size)) {
        *len = (size_t)count * (size_t)size;
        return LAYOUT_CONTIGUOUS;
    }
    int psize = 0;
    PMPI_Pack_size(count, dt, MPI_COMM_SELF, &psize);
    size_t span = echo_type_span(count, dt, psize, lb);
    *len = span ? span : (size_t)psize;
    return span ? LAYOUT_SPAN : LAYOUT_PACKED;
}

static int mpi_send(int dest, const void *buf, int count, MPI_Datatype dt, int tag) {
    int first = dest < 0 ? 1 : dest, last = dest < 0 ? echo.ncopies - 1 : dest, n = last - first + 1;
    MPI_Request reqs[MAX_INLINE_COPIES];
    MPI_Request *r = n <= MAX_INLINE_COPIES ? reqs : malloc(sizeof *r * (size_t)n);
    for (int c = first; c <= last; c++) PMPI_Isend(buf, count, dt, c, tag, echo.clone_comm, &r[c - first]);
    if (hdr) put(REC_MPI, tag, dest, 0, NULL, 0, MPI_BYTE, 0, LAYOUT_CONTIGUOUS); /* copies wake up to receive it */
    int rc = PMPI_Waitall(n, r, MPI_STATUSES_IGNORE);
    if (r != reqs) free(r);
    return rc;
}

static int send(int dest, const void *buf, int count, MPI_Datatype dt, int tag) {
    size_t len;
    MPI_Aint lb;
    int layout = ring_layout(count, dt, &len, &lb);
    /* a description from MPI_BOTTOM (NULL with absolute addresses) is MPI's to read */
    if (!hdr || len > LARGE_BYTES || (buf == NULL && len > 0)) return mpi_send(dest, buf, count, dt, tag);
    if (layout == LAYOUT_SPAN && !echo_span_readable((const char *)buf + lb, len)) { /* holes on unmapped pages */
        int psize = 0;
        PMPI_Pack_size(count, dt, MPI_COMM_SELF, &psize);
        layout = LAYOUT_PACKED, len = (size_t)psize;
    }
    put(layout == LAYOUT_SPAN ? REC_SPAN : REC_DATA, tag, dest, len, buf, count, dt, lb, layout);
    return MPI_SUCCESS;
}

int echo_to_copies(const void *buf, int count, MPI_Datatype dt, int tag) { return send(-1, buf, count, dt, tag); }

int echo_to_copy(int copy, const void *buf, int count, MPI_Datatype dt, int tag) {
    return send(copy, buf, count, dt, tag);
}

/* ---- a copy's side ---- */

/* this copy is done with the record at its tail: the representative may write over it */
static void advance(const record_t *r) {
    uint64_t tail = atomic_load_explicit(&hdr->tail[echo.copy], memory_order_relaxed);
    atomic_store_explicit(&hdr->tail[echo.copy], tail + sizeof(record_t) + ((r->len + 15) & ~15u),
                          memory_order_release);
    atomic_fetch_add(&hdr->freed, 1);
    if (atomic_load(&hdr->rep_sleeps)) futex_wake(&hdr->freed);
}

/* A copy reading the ring makes no MPI call, but MPI may need it to: Open MPI's partitioned component, for one,
 * sets itself up with a nonblocking collective over the real world, which completes only as every process of the
 * job lets MPI progress.  A copy turns MPI's progress engine every PROGRESS_EVERY records it reads and every
 * time it wakes up (at least every SLEEP_NS while it waits), not before it sleeps (see next()). */
static void progress(void) {
    int flag;
    PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, echo.clone_comm, &flag, MPI_STATUS_IGNORE);
}

/* The next record for this copy (records for other copies and the ring's end are stepped over), waiting
 * (asleep) until there is one; its payload follows it. */
static record_t *next(void) {
    static unsigned reads;
    if (++reads % PROGRESS_EVERY == 0) progress();
    for (;;) {
        uint64_t tail = atomic_load_explicit(&hdr->tail[echo.copy], memory_order_relaxed);
        uint32_t seen = atomic_load(&hdr->posted);
        if (atomic_load_explicit(&hdr->head, memory_order_acquire) > tail) {
            record_t *r = (record_t *)(ring + tail % RING_BYTES);
            if (r->kind != REC_PAD && (r->dest < 0 || r->dest == echo.copy)) return r;
            advance(r);
            continue;
        }
        /* nothing to read: sleep (no spinning, the cores are the representatives'), to be woken by the
         * representative if it waits for this copy, else after SLEEP_NS to read what it wrote meanwhile.  No
         * call into MPI between the look and the sleep: Open MPI's progress yields the core when the node is
         * oversubscribed (as it is with copies), the representative wrote its next message meanwhile, and the
         * copy found it instead of sleeping: it never slept, one yield per message and as much CPU as its
         * representative (bench/run_latency_parts.py counts them) */
        atomic_fetch_add(&hdr->sleepers, 1);
        futex_wait(&hdr->posted, seen);
        atomic_fetch_sub(&hdr->sleepers, 1);
        progress();
    }
}

/* This copy's path through the program parted from its representative's (a corruption changed what it does, or
 * something of its own that echo does not give it from its representative): what its representative sends next is
 * not what it waits for, its representative already reached MPI_Finalize, or what it sent does not fit the copy's
 * call (echo_internal.h).  The copy cannot go on; it ends here, finalizing as the job does (it reads what its
 * representative still sends, so that nobody waits for it), and its event says where.  The representatives,
 * and so the application, go on. */
void echo_copy_parted(const char *why) {
    char detail[320];
    int awaited = echo_copies_awaited(); /* --sdc stop|vote: the representative would wait for this copy's data */
    snprintf(detail, sizeof detail, "at call %llu %s: the copy's path through the program parted from its "
             "representative's; %s", (unsigned long long)echo_record_seq(), why,
             awaited ? "the job stops (--sdc stop and vote wait for every copy)" : "the copy ends here");
    echo_event("copy-parted", "", echo_record_seq(), -1, -1, 0, echo.copy, -1, detail);
    if (awaited) {
        fprintf(stderr, "echo: SDC: application rank %d copy %d: %s\n", echo.app_rank, echo.copy, detail);
        echo_events_close();
        echo_records_close();
        PMPI_Abort(MPI_COMM_WORLD, ECHO_EXIT_DIVERGED);
        _exit(ECHO_EXIT_DIVERGED); /* MPI_Abort does not return; its declaration does not say so */
    }
    echo_copy_ends();
}

static record_t *next_or_end(void) {
    record_t *r = next();
    if (r->tag == TAG_END) echo_copy_parted("its representative had reached MPI_Finalize");
    return r;
}

int echo_from_rep(void *buf, int count, MPI_Datatype dt, int tag, MPI_Status *status) {
    if (!hdr) return PMPI_Recv(buf, count, dt, 0, tag, echo.clone_comm, status);
    record_t *r = next_or_end();
    if (tag != MPI_ANY_TAG && r->tag != tag)
        echo_copy_parted("its representative sent another message than it waited for");
    int got_tag = r->tag;
    if (r->kind == REC_MPI) {
        advance(r);
        return PMPI_Recv(buf, count, dt, 0, got_tag, echo.clone_comm, status);
    }
    size_t len = r->len;
    const unsigned char *payload = (const unsigned char *)(r + 1);
    size_t room;
    MPI_Aint lb;
    int layout = ring_layout(count, dt, &room, &lb);
    if (r->kind == REC_SPAN) { /* the elements the span holds, taken out by MPI's copy as a receive would */
        MPI_Aint xlb, extent, tlb, textent;
        PMPI_Type_get_extent(dt, &xlb, &extent);
        PMPI_Type_get_true_extent(dt, &tlb, &textent);
        size_t n = extent > 0 && len >= (size_t)textent ? (len - (size_t)textent) / (size_t)extent + 1 : 0;
        if (n == 0 || n > (size_t)count || (n - 1) * (size_t)extent + (size_t)textent != len)
            echo_copy_parted("its representative sent a larger message than it waited for");
        echo_copy_as_sent(payload - tlb, (int)n, dt, buf, (int)n, dt);
    } else if (len > room) {
        echo_copy_parted("its representative sent a larger message than it waited for");
    } else if (len && layout == LAYOUT_CONTIGUOUS) {
        memcpy((unsigned char *)buf + lb, payload, len);
    } else if (len) {
        int size = 0, pos = 0;
        PMPI_Type_size(dt, &size);
        PMPI_Unpack(payload, (int)len, &pos, buf, (int)(len / (size_t)size), dt, MPI_COMM_SELF);
    }
    advance(r);
    if (status != MPI_STATUS_IGNORE) {
        status->MPI_SOURCE = 0;
        status->MPI_TAG = got_tag;
        status->MPI_ERROR = MPI_SUCCESS;
    }
    return MPI_SUCCESS;
}

int echo_probe_rep(int *tag) {
    if (!hdr) {
        MPI_Status st;
        int rc = PMPI_Probe(0, MPI_ANY_TAG, echo.clone_comm, &st);
        *tag = st.MPI_TAG;
        return rc;
    }
    *tag = next_or_end()->tag;
    return MPI_SUCCESS;
}
