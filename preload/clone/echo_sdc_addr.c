/* Addresses in what copies hand to MPI: each process's own, not data (docs/sdc.md, "Addresses").
 *
 * Codes publish the addresses of their buffers (ARMCI and Global Arrays allgather them and read their own slot
 * back; structs carry pointers beside data).  A copy's address necessarily differs from its representative's, so
 * SDC's byte comparison flagged every such call.  Only once the hashes differ (no cost otherwise), the two sides'
 * bytes are compared here with each side's memory map: a differing 8-byte word is an address, not a divergence,
 * when the representative's value points into its memory and the copy's into the corresponding memory of the copy:
 *
 *   a file's mapping (the program, its libraries, a mapped input): the same file and the same offset in it; a
 *     pointer to a function, a constant or a global initialised in the file is exact, so a flip in any bit of it
 *     is still caught;
 *   MPI's memory (MPI_Alloc_mem's blocks, windows' memory: echo_mpi_memory): the same block, by the order the
 *     program made it, and the same offset in it (a representative's MPI may give it other memory than a copy's,
 *     shared segments at another alignment, so its kind says nothing);
 *   memory without a file (the heap, anonymous mappings, MPI's shared segments, where window memory lives) and
 *     the stack: the same kind, and the same address modulo 16.  Where such memory lies is decided by history and
 *     randomisation, which differ between a representative and its copies by design: MPI allocates in the
 *     representative only (its heap holds more, the kernel merges adjacent anonymous mappings differently), the
 *     kernel randomises the stack's top and the first stack pointer.  So no offset inside the mapping can be
 *     required.  The 4 low bits are: glibc's malloc, mmap and the ABI's stack frames all align to 16 bytes, so
 *     the same field of the same object has the same address modulo 16.
 *
 * What this leaves undetected: a flip in bits 4 to 47 of such an address that leaves it pointing into memory of the
 * same kind.  A copy's address never leaves the copy (only the representative's data reaches other ranks), and
 * a copy that uses a wrong address of its own diverges or fails later; a representative's flipped address does
 * reach other ranks, which is what this rule cannot see.  Everything the address points to is compared as data
 * when it is sent. */
#define _GNU_SOURCE
#include "echo_clone.h"
#include "echo_sdc_addr.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { KIND_NONE = 0, KIND_STACK = 1, KIND_MEMORY = 2 }; /* else a file: a hash of its path, >= 3 */
#define LOWEST ((uint64_t)1 << 16)                         /* below Linux's mmap_min_addr nothing is mapped */
#define HIGHEST ((uint64_t)1 << 48)                        /* user space of x86-64 and AArch64 */

static uint64_t path_id(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h < 3 ? h + 3 : h;
}

char *echo_maps_text(int pid, size_t *len) {
    char path[64];
    if (pid > 0) snprintf(path, sizeof path, "/proc/%d/maps", pid);
    else snprintf(path, sizeof path, "/proc/self/maps");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *text = malloc(cap + 1);
    for (ssize_t got; text && (got = read(fd, text + n, cap - n)) > 0;) {
        n += (size_t)got;
        if (n == cap) {
            char *more = realloc(text, 2 * cap + 1);
            if (!more) { free(text); text = NULL; break; }
            text = more;
            cap *= 2;
        }
    }
    close(fd);
    if (!text || n == 0) { free(text); return NULL; }
    text[n] = 0;
    /* this process's MPI memory, by number (echo_mpi_memory): lines of the same form, named "[mpi memory I]" */
    const void *base;
    MPI_Aint size;
    for (int i = 0; pid <= 0 && echo_mpi_memory(i, &base, &size); i++) {
        char line[96];
        int k = snprintf(line, sizeof line, "%llx-%llx rw-p 00000000 00:00 0 [mpi memory %d]\n",
                         (unsigned long long)(uintptr_t)base, (unsigned long long)((uintptr_t)base + (uintptr_t)size), i);
        char *more = realloc(text, n + (size_t)k + 1);
        if (!more) break;
        text = more;
        memcpy(text + n, line, (size_t)k + 1);
        n += (size_t)k;
    }
    *len = n;
    return text;
}

/* What a mapping is: the kind of memory, and for a file its path (memory without a file is anonymous, the heap,
 * a writable shared mapping — MPI's shared segments, whose file names differ from process to process — a deleted
 * file or /dev/shm; vdso and friends are named like files: the same in every process) */
static void classify(echo_map_t *m, const char *perms, const char *path) {
    m->name[0] = 0;
    int shared_writable = perms[1] == 'w' && perms[3] == 's';
    if (!strcmp(path, "[stack]")) {
        m->kind = KIND_STACK;
    } else if (!*path || !strcmp(path, "[heap]") || !strncmp(path, "[anon", 5) || shared_writable ||
               strstr(path, " (deleted)") || !strncmp(path, "/dev/shm/", 9) || !strcmp(path, "/dev/zero")) {
        m->kind = KIND_MEMORY;
    } else { /* a file, or MPI's memory by its number: the place is the offset in it, exactly */
        m->kind = path_id(path);
        snprintf(m->name, sizeof m->name, "%s", path);
    }
}

#define MPI_MEMORY "[mpi memory "

/* MPI's memory overlaps the mappings it lies in and is looked at first: its entries go to the end of the array,
 * out of the address-ordered part (which keeps the kernel's order) */
static int mpi_last(const void *x, const void *y) {
    const echo_map_t *a = x, *b = y;
    int ma = !strncmp(a->name, MPI_MEMORY, strlen(MPI_MEMORY)), mb = !strncmp(b->name, MPI_MEMORY, strlen(MPI_MEMORY));
    if (ma != mb) return ma - mb;
    return a->lo < b->lo ? -1 : a->lo > b->lo;
}

static void split_mpi(echo_maps_t *maps) {
    maps->nmpi = 0;
    for (int i = 0; i < maps->n; i++) maps->nmpi += !strncmp(maps->m[i].name, MPI_MEMORY, strlen(MPI_MEMORY));
    if (maps->n) qsort(maps->m, (size_t)maps->n, sizeof *maps->m, mpi_last);
    maps->n -= maps->nmpi;
    maps->mpi = maps->m + maps->n;
}

int echo_maps_parse(const char *text, echo_maps_t *maps) {
    maps->n = maps->nmpi = 0;
    maps->m = maps->mpi = NULL;
    if (!text) return 0;
    int cap = 0;
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[512], perms[8] = "", path[400] = "";
        unsigned long long lo, hi, off;
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf - 1 ? len : sizeof buf - 1), line);
        int got = sscanf(buf, "%llx-%llx %7s %llx %*s %*s %399[^\n]", &lo, &hi, perms, &off, path);
        if (got >= 4) {
            if (maps->n == cap) {
                cap = cap ? 2 * cap : 256;
                echo_map_t *more = realloc(maps->m, sizeof *more * (size_t)cap);
                if (!more) break;
                maps->m = more;
            }
            echo_map_t *m = &maps->m[maps->n++];
            m->lo = lo;
            m->hi = hi;
            m->off = off;
            classify(m, perms, path);
        }
        line += len + (end ? 1 : 0);
    }
    split_mpi(maps);
    return maps->n > 0;
}

void echo_maps_free(echo_maps_t *maps) {
    free(maps->m);
    maps->m = maps->mpi = NULL;
    maps->n = maps->nmpi = 0;
}

/* the mapping holding v (maps are listed by address), or NULL */
static const echo_map_t *holding(const echo_maps_t *maps, uint64_t v) {
    if (v < LOWEST || v >= HIGHEST) return NULL;
    for (int i = 0; i < maps->nmpi; i++)
        if (v >= maps->mpi[i].lo && v < maps->mpi[i].hi) return &maps->mpi[i];
    int lo = 0, hi = maps->n - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const echo_map_t *m = &maps->m[mid];
        if (v < m->lo) hi = mid - 1;
        else if (v >= m->hi) lo = mid + 1;
        else return m;
    }
    return NULL;
}

/* where v points, as it can be compared across processes: the file's offset, or the address modulo 16 */
static uint64_t place(const echo_map_t *m, uint64_t v) {
    return m->kind >= 3 ? m->off + (v - m->lo) : (v & 15);
}

static int same_place(uint64_t va, const echo_maps_t *ma, uint64_t vb, const echo_maps_t *mb) {
    const echo_map_t *x = holding(ma, va), *y = holding(mb, vb);
    return x && y && x->kind == y->kind && place(x, va) == place(y, vb);
}

static uint64_t word_at(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8); /* little-endian hosts: x86-64 and AArch64 as Linux runs them */
    return v;
}

/* The 8-byte window holding byte i where both sides hold addresses of the same place, or -1.  The aligned word
 * first (pointers are aligned in memory); packed derived types can put them anywhere, so the others next. */
static long address_window(const unsigned char *a, const echo_maps_t *ma, const unsigned char *b,
                           const echo_maps_t *mb, size_t n, size_t i) {
    if (n < 8) return -1;
    size_t first = i >= 7 ? i - 7 : 0, last = i + 8 <= n ? i : n - 8, aligned = i & ~(size_t)7;
    if (aligned + 8 <= n && same_place(word_at(a + aligned), ma, word_at(b + aligned), mb)) return (long)aligned;
    for (size_t w = first; w <= last; w++)
        if (w != aligned && same_place(word_at(a + w), ma, word_at(b + w), mb)) return (long)w;
    return -1;
}

long echo_sdc_unlike(const unsigned char *a, const echo_maps_t *ma, const unsigned char *b, const echo_maps_t *mb,
                     size_t n, unsigned char *patch) {
    long first = -1;
    for (size_t i = 0; i < n;) {
        if (a[i] == b[i]) { i++; continue; }
        long w = address_window(a, ma, b, mb, n, i);
        if (w >= 0) { /* an address each: the patched buffer keeps its own */
            i = (size_t)w + 8;
            continue;
        }
        if (first < 0) first = (long)i;
        if (!patch) return first;
        patch[i] = a[i];
        i++;
    }
    return first;
}

void echo_sdc_where(const echo_maps_t *maps, uint64_t v, char *out, size_t len) {
    const echo_map_t *m = maps ? holding(maps, v) : NULL;
    if (!m) snprintf(out, len, "nothing mapped");
    else if (!strncmp(m->name, MPI_MEMORY, strlen(MPI_MEMORY)))
        snprintf(out, len, "MPI's memory block %s at offset %llu", m->name + strlen(MPI_MEMORY),
                 (unsigned long long)place(m, v));
    else if (m->kind == KIND_STACK) snprintf(out, len, "the stack");
    else if (m->kind == KIND_MEMORY) snprintf(out, len, "memory without a file");
    else snprintf(out, len, "%s at offset %llu", m->name, (unsigned long long)place(m, v));
}

/* ---- the representative's side under detect, at every small send ----
 * Its copies compare later, when its memory may have changed (a buffer freed, unmapped), so it describes its
 * addresses at the call: the mappings that hold the aligned words that look like addresses.  A map read once and
 * kept; a word outside it is looked up with mincore (one system call): unmapped, it is data; mapped, the map is
 * read again (a mapping made since).  So a send of small integers costs a system call per word in the address
 * range, a send of addresses a lookup, and neither reads /proc each time. */
static echo_maps_t cache;

static const echo_map_t *lookup_now(uint64_t v) {
    if (v < LOWEST || v >= HIGHEST) return NULL;
    static echo_map_t block;
    const void *base;
    MPI_Aint size;
    for (int i = 0; echo_mpi_memory(i, &base, &size); i++)
        if (v >= (uintptr_t)base && v < (uintptr_t)base + (uintptr_t)size) {
            snprintf(block.name, sizeof block.name, MPI_MEMORY "%d]", i);
            block.kind = path_id(block.name);
            block.lo = (uintptr_t)base;
            block.hi = block.lo + (uintptr_t)size;
            block.off = 0;
            return &block;
        }
    const echo_map_t *m = holding(&cache, v);
    if (m) return m;
    unsigned char resident;
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    if (mincore((void *)(uintptr_t)(v & ~(page - 1)), 1, &resident) != 0) return NULL; /* nothing mapped there */
    size_t len;
    char *text = echo_maps_text(0, &len);
    echo_maps_t fresh;
    if (echo_maps_parse(text, &fresh)) {
        echo_maps_free(&cache);
        cache = fresh;
    }
    free(text);
    return holding(&cache, v);
}

int echo_sdc_addr_maps(const unsigned char *bytes, size_t n, echo_map_t *out, int max) {
    int k = 0;
    for (size_t w = 0; w + 8 <= n && k < max; w += 8) {
        const echo_map_t *m = lookup_now(word_at(bytes + w));
        if (!m) continue;
        int seen = 0;
        for (int i = 0; i < k && !seen; i++) seen = out[i].lo == m->lo;
        if (!seen) out[k++] = *m;
    }
    return k;
}

void echo_maps_of(echo_map_t *m, int n, echo_maps_t *maps) {
    maps->m = m;
    maps->n = n;
    split_mpi(maps);
}

long echo_sdc_unvotable(const unsigned char *a, const echo_maps_t *ma, const unsigned char *b,
                        const echo_maps_t *mb, size_t n) {
    for (size_t w = 0; w + 8 <= n; w += 8) {
        uint64_t va = word_at(a + w), vb = word_at(b + w);
        if (va != vb && holding(ma, va) && holding(mb, vb) && !same_place(va, ma, vb, mb)) return (long)w;
    }
    return -1;
}
