/* MPI's and echo's allocations on a heap of their own, under --sdc (docs/sdc.md, "Bytes the program never wrote").
 *
 * A program sends bytes it never wrote, and those hold what was there before: a CHARACTER(512) local left unfilled
 * by a DFT code's check_namelist_read holds what gfortran's namelist reader left on the stack, heap addresses among
 * it; a buffer malloc recycles holds a chunk's old contents.  A representative's heap and its copies' differed in
 * history (MPI communicates, and allocates for it, in the representative only; its copies allocate echo's channel
 * instead), so the program's own malloc returned other addresses in each process, the leftovers differed and SDC
 * flagged clean runs.  Here every allocation MPI and echo make goes to a heap apart (memory echo reserves when the
 * library loads), so the program's own allocations see the same glibc heap, with the same history, in a
 * representative and its copies (ASLR is off: the same addresses too).
 *
 * Whose an allocation is: the caller's address, as for clocks and process ids (echo_clock.c's classification):
 * code of libmpi, its runtime and plugins, and echo's goes apart, the program's (its runtime's: libgfortran,
 * libstdc++, an interpreter) stays on glibc's heap.  libc and the dynamic loader allocate for whoever called them
 * (strdup, fopen, dlopen): theirs go apart while this thread is inside an MPI call (echo_depth) or echo's load,
 * else they are the program's.  free, realloc and malloc_usable_size know a block by its address, so a pointer may cross owners
 * (MPI_Alloc_mem's memory freed by MPI_Free_mem, a program's buffer MPI frees): each heap takes back its own.
 *
 * The heap apart: blocks of power-of-two sizes (a 16-byte header, then the bytes asked for), carved from one
 * reserved range, kept on a free list per size when freed and never given back to the kernel (MPI's allocations
 * are few and mostly at MPI_Init; no munmap either, which Open MPI's memory hooks watch).  What it returns is
 * filled as glibc's is under --sdc (ECHO_HEAP_FILL ^ 0xff), so memory MPI_Alloc_mem gives the program holds the
 * same unwritten bytes in every process.  One mutex (MPI's threads allocate too), held across fork.  Off under
 * Valgrind (its allocator tracks the program's blocks; a heap of echo's own would hide MPI's from it) and outside
 * --sdc: then every call goes straight to glibc, at the cost of one test. */
#define _GNU_SOURCE
#include "echo_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define INTERPOSED __attribute__((visibility("default")))

/* glibc's own entry points (the interposed names below are echo's) */
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

#define RESERVED ((size_t)64 << 30) /* address space for MPI's allocations; past it they fall back to glibc's */
#define GROW ((size_t)1 << 20)      /* made usable in steps of this */
#define HEADER 16
#define CLASSES 40                  /* block sizes 2^5 .. 2^39 */
#define MAGIC_BLOCK 0xEC40B10Cu
#define MAGIC_ALIGNED 0xEC40A11Cu   /* an aligned pointer inside a block: `back` bytes after the block's data */

typedef struct {
    uint32_t magic;
    uint32_t cls;  /* the block's size is 1 << cls (header included) */
    uint64_t back; /* MAGIC_ALIGNED: bytes from the block's data to this pointer */
} header_t;

static size_t (*usable_glibc)(void *); /* glibc's malloc_usable_size (exported under that name only): at first use */
ECHO_TLS int echo_own_work;
static int apart; /* MPI's and echo's allocations go to the heap below */
static unsigned char *base, *top, *usable; /* the reserved range, what is carved, what is writable */
static void *free_list[CLASSES];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int ours(const void *p) { return apart && (const unsigned char *)p >= base && (const unsigned char *)p < top; }

/* the allocation the call at `at` makes is MPI's or echo's */
static int for_mpi(const void *at) {
    if (!apart) return 0;
    int owner = echo_code_owner(at);
    return owner == ECHO_CODE_MPI || (owner == ECHO_CODE_RUNTIME && (echo_depth || echo_own_work));
}

static void prepare(void) { pthread_mutex_lock(&lock); }
static void release(void) { pthread_mutex_unlock(&lock); }

void echo_heap_apart(void) {
    void *range = mmap(NULL, RESERVED, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (range == MAP_FAILED) return; /* every allocation stays glibc's, as without --sdc */
    base = top = usable = range;
    pthread_atfork(prepare, release, release);
    apart = 1;
}

/* a block of 1 << cls bytes, under the lock; NULL: the range is used up */
static header_t *carve(unsigned cls) {
    if (free_list[cls]) {
        header_t *h = free_list[cls];
        free_list[cls] = *(void **)(h + 1);
        return h;
    }
    size_t size = (size_t)1 << cls;
    if ((size_t)(base + RESERVED - top) < size) return NULL;
    if (top + size > usable) {
        size_t more = (top + size - usable + GROW - 1) / GROW * GROW;
        if (more > (size_t)(base + RESERVED - usable)) more = (size_t)(base + RESERVED - usable);
        if (mprotect(usable, more, PROT_READ | PROT_WRITE) != 0) return NULL;
        usable += more;
    }
    header_t *h = (header_t *)top;
    top += size;
    h->cls = cls;
    return h;
}

/* `size` bytes aligned to `align` (a power of two) from the heap apart; NULL: none there (glibc's then) */
static void *take(size_t size, size_t align, int fill) {
    /* at least a byte: the data of an empty block would begin where the next block does, and be taken for it;
     * at least 32 bytes, the header and the free list's link */
    size_t need = (size ? size : 1) + HEADER + (align > HEADER ? align : 0);
    if (need < size) return NULL;
    unsigned cls = 5;
    while (cls < CLASSES && ((size_t)1 << cls) < need) cls++;
    if (cls >= CLASSES) return NULL;
    pthread_mutex_lock(&lock);
    header_t *h = carve(cls);
    pthread_mutex_unlock(&lock);
    if (!h) return NULL;
    h->magic = MAGIC_BLOCK;
    h->back = 0;
    unsigned char *data = (unsigned char *)(h + 1), *p = data;
    if (align > HEADER) {
        p = (unsigned char *)(((uintptr_t)data + align - 1) & ~(uintptr_t)(align - 1));
        if (p != data) {
            header_t *a = (header_t *)p - 1;
            a->magic = MAGIC_ALIGNED;
            a->cls = cls;
            a->back = (uint64_t)(p - data);
        }
    }
    if (fill) memset(p, ECHO_HEAP_FILL ^ 0xff, size); /* as glibc's M_PERTURB fills (echo_sdc.c) */
    else memset(p, 0, size);
    return p;
}

static header_t *block_of(void *p) {
    header_t *h = (header_t *)p - 1;
    return h->magic == MAGIC_ALIGNED ? (header_t *)((unsigned char *)p - h->back) - 1 : h;
}

static size_t usable_ours(void *p) {
    header_t *h = (header_t *)p - 1;
    size_t back = h->magic == MAGIC_ALIGNED ? h->back : 0;
    return ((size_t)1 << block_of(p)->cls) - HEADER - back;
}

static void give_back(void *p) {
    header_t *h = block_of(p);
    pthread_mutex_lock(&lock);
    *(void **)(h + 1) = free_list[h->cls];
    free_list[h->cls] = h;
    pthread_mutex_unlock(&lock);
}

static size_t usable_theirs(void *p) {
    if (!usable_glibc) usable_glibc = (size_t (*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
    return usable_glibc(p);
}

static void *aligned(size_t align, size_t size, const void *at) {
    if (for_mpi(at)) {
        void *p = take(size, align, 1);
        if (p) return p;
    }
    return __libc_memalign(align, size);
}

INTERPOSED void *malloc(size_t size) {
    if (for_mpi(__builtin_return_address(0))) {
        void *p = take(size, 0, 1);
        if (p) return p;
    }
    return __libc_malloc(size);
}

INTERPOSED void free(void *p) {
    if (!p) return;
    if (ours(p)) give_back(p);
    else __libc_free(p);
}

INTERPOSED void *calloc(size_t n, size_t size) {
    if (for_mpi(__builtin_return_address(0))) {
        size_t total;
        if (__builtin_mul_overflow(n, size, &total)) {
            errno = ENOMEM;
            return NULL;
        }
        void *p = take(total, 0, 0);
        if (p) return p;
    }
    return __libc_calloc(n, size);
}

static void *resized(void *p, size_t size, const void *at) {
    if (!p) {
        if (for_mpi(at)) {
            void *q = take(size, 0, 1);
            if (q) return q;
        }
        return __libc_malloc(size);
    }
    if (!size) {
        free(p);
        return NULL;
    }
    int mine = ours(p), to_mpi = for_mpi(at);
    if (!mine && !to_mpi) return __libc_realloc(p, size);
    size_t have = mine ? usable_ours(p) : usable_theirs(p);
    if (mine && size <= have) return p;
    void *q = to_mpi ? take(size, 0, 1) : NULL;
    if (!q) q = __libc_malloc(size);
    if (!q) return NULL;
    memcpy(q, p, have < size ? have : size);
    free(p);
    return q;
}

INTERPOSED void *realloc(void *p, size_t size) { return resized(p, size, __builtin_return_address(0)); }

INTERPOSED void *reallocarray(void *p, size_t n, size_t size) {
    size_t total;
    if (__builtin_mul_overflow(n, size, &total)) {
        errno = ENOMEM;
        return NULL;
    }
    return resized(p, total, __builtin_return_address(0));
}

INTERPOSED void *memalign(size_t align, size_t size) { return aligned(align, size, __builtin_return_address(0)); }
INTERPOSED void *aligned_alloc(size_t align, size_t size) { return aligned(align, size, __builtin_return_address(0)); }
INTERPOSED int posix_memalign(void **out, size_t align, size_t size) {
    if (!align || (align & (align - 1)) || align % sizeof(void *)) return EINVAL;
    void *p = aligned(align, size, __builtin_return_address(0));
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
INTERPOSED void *valloc(size_t size) { return aligned(4096, size, __builtin_return_address(0)); }
INTERPOSED void *pvalloc(size_t size) {
    return aligned(4096, (size + 4095) & ~(size_t)4095, __builtin_return_address(0));
}
INTERPOSED size_t malloc_usable_size(void *p) { return !p ? 0 : ours(p) ? usable_ours(p) : usable_theirs(p); }
