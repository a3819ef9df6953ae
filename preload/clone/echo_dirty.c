/* Write tracking of memory ranges; what it sees and what it does not is in echo_dirty.h.  One userfaultfd per
 * process, in write-protect mode with the kernel resolving the faults itself (UFFD_FEATURE_WP_ASYNC): a write
 * costs one minor fault per page and epoch, and no thread of ours waits on the descriptor.  Written pages are
 * read and protected again in one PAGEMAP_SCAN call, whose cost grows with the pages of the range (a walk of its
 * page table, a few microseconds for 16 MiB here), not with their bytes. */
#define _GNU_SOURCE
#include "echo_dirty.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Build machines' headers may predate the kernel that runs the job: the kernel decides at run time (values from
 * the kernel's uapi headers, linux/userfaultfd.h and linux/fs.h of 6.7) */
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#ifndef UFFD_FEATURE_WP_HUGETLBFS_SHMEM
#define UFFD_FEATURE_WP_HUGETLBFS_SHMEM (1 << 12)
#endif
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef PAGEMAP_SCAN
struct page_region {
    uint64_t start, end, categories;
};
struct pm_scan_arg {
    uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted, category_mask,
        category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#define PAGE_IS_WRITTEN (1 << 1)
#define PM_SCAN_WP_MATCHING (1 << 0)
#define PM_SCAN_CHECK_WPASYNC (1 << 1)
#endif

static int uffd = -1, pagemap = -1, tried;
static const char *why;
static uintptr_t syspage;

static void open_tracker(void) {
    tried = 1;
    syspage = (uintptr_t)sysconf(_SC_PAGESIZE);
    /* Valgrind knows neither the descriptor's ioctls nor what PAGEMAP_SCAN writes: a copy under it compares */
    if (echo_under_valgrind()) {
        why = "the process runs under Valgrind";
        return;
    }
    /* user-mode-only faults are all an unprivileged process may ask for (vm.unprivileged_userfaultfd=0) and all
     * asynchronous write protection needs: the kernel resolves its own writes' faults without us */
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    if (fd < 0 && errno == EINVAL) fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        why = "the kernel refused a userfaultfd";
        return;
    }
    struct uffdio_api api = {.api = UFFD_API,
                             .features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED |
                                         UFFD_FEATURE_WP_HUGETLBFS_SHMEM};
    if (ioctl(fd, UFFDIO_API, &api) < 0) {
        close(fd);
        why = "the kernel has no asynchronous userfaultfd write protection (Linux 6.7 or later has)";
        return;
    }
    pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    if (pagemap < 0) {
        close(fd);
        why = "/proc/self/pagemap cannot be opened";
        return;
    }
    uffd = fd;
}

const char *echo_dirty_unavailable(void) {
    if (!tried) open_tracker();
    return uffd < 0 ? why : NULL;
}

struct echo_dirty {
    char *base;
    size_t size;
    uintptr_t start, end;    /* whole system pages */
    unsigned char *written;  /* a byte a system page: found written, not yet taken by this range */
    int resting;             /* takes left that answer "every page" without a scan (below) */
    int busy;                /* takes in a row that found most pages written */
    int rest, since;         /* the length of its next rest; scanned takes since its last rest ended */
    struct echo_dirty *next;
};
static echo_dirty_t *ranges;

static uintptr_t down(uintptr_t a) { return a & ~(syspage - 1); }
static uintptr_t up(uintptr_t a) { return (a + syspage - 1) & ~(syspage - 1); }

static const echo_dirty_t *covering(uintptr_t page, const echo_dirty_t *self) {
    for (const echo_dirty_t *d = ranges; d; d = d->next)
        if (d != self && page >= d->start && page < d->end) return d;
    return NULL;
}

/* (Un)register the runs of pages of d no other range covers: a page another range tracks stays protected as it
 * is, so that range loses none of its writes */
static int own_runs(echo_dirty_t *d, int on) {
    int ok = 1;
    for (uintptr_t at = d->start; at < d->end;) {
        if (covering(at, d)) {
            at += syspage;
            continue;
        }
        uintptr_t end = at + syspage;
        while (end < d->end && !covering(end, d)) end += syspage;
        struct uffdio_range range = {at, end - at};
        if (!on) ioctl(uffd, UFFDIO_UNREGISTER, &range); /* fails if the application unmapped it first: nothing left */
        else {
            struct uffdio_register reg = {.range = range, .mode = UFFDIO_REGISTER_MODE_WP};
            struct uffdio_writeprotect wp = {.range = range, .mode = UFFDIO_WRITEPROTECT_MODE_WP};
            ok = ok && ioctl(uffd, UFFDIO_REGISTER, &reg) == 0 && ioctl(uffd, UFFDIO_WRITEPROTECT, &wp) == 0;
        }
        at = end;
    }
    return ok;
}

echo_dirty_t *echo_dirty_track(void *base, size_t size) {
    if (echo_dirty_unavailable() || size == 0) return NULL;
    echo_dirty_t *d = calloc(1, sizeof *d);
    d->base = base;
    d->size = size;
    d->start = down((uintptr_t)base);
    d->end = up((uintptr_t)base + size);
    /* pages another range already tracks may have been written before: taken as written the first time */
    d->written = malloc((d->end - d->start) / syspage);
    for (uintptr_t at = d->start; at < d->end; at += syspage) d->written[(at - d->start) / syspage] = covering(at, d) != 0;
    if (!own_runs(d, 1)) {
        own_runs(d, 0);
        free(d->written);
        free(d);
        return NULL;
    }
    d->next = ranges;
    ranges = d;
    return d;
}

void echo_dirty_untrack(echo_dirty_t *d) {
    if (!d) return;
    for (echo_dirty_t **at = &ranges; *at; at = &(*at)->next)
        if (*at == d) {
            *at = d->next;
            break;
        }
    d->next = NULL;
    own_runs(d, 0); /* the pages no remaining range covers */
    free(d->written);
    free(d);
}

/* a page written: every range that covers it keeps it */
static void found(uintptr_t page) {
    for (echo_dirty_t *d = ranges; d; d = d->next)
        if (page >= d->start && page < d->end) d->written[(page - d->start) / syspage] = 1;
}

/* A range most of whose pages are written between takes pays a fault per page and take to be told "most pages",
 * more than the comparison of every page it saves: after two such takes in a row (one alone is a program filling
 * its window once) it rests for REST takes, in which its pages stay writable (no fault after the first write) and
 * every page counts as written; the last of them protects the pages again and finds every page written since.  A
 * range busy again right after its rest rests again, twice as long (up to MAX_REST takes), so a program that
 * rewrites its window at every epoch pays the faults of two epochs, then almost never. */
#define REST 8
#define MAX_REST 1024

int echo_dirty_take(echo_dirty_t *d, unsigned char *pages) {
    size_t npg = (d->end - d->start) / syspage;
    if (d->resting > 0) {
        if (--d->resting == 0) d->since = 0;
        memset(d->written, 1, npg);
    } else d->since++;
    struct page_region vec[64];
    struct pm_scan_arg arg = {.size = sizeof arg,
                              .flags = PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
                              .start = d->start,
                              .end = d->end,
                              .vec = (uintptr_t)vec,
                              .vec_len = 64,
                              .category_mask = PAGE_IS_WRITTEN,
                              .return_mask = PAGE_IS_WRITTEN};
    int rc = 0;
    size_t many = 0;
    for (; !d->resting;) {
        long n = ioctl(pagemap, PAGEMAP_SCAN, &arg);
        if (n < 0) { /* pages it protected again are lost to the ranges that share them: they take everything */
            for (uintptr_t at = d->start; at < d->end; at += syspage) found(at);
            rc = -1;
            break;
        }
        for (long i = 0; i < n; i++) {
            for (uintptr_t at = vec[i].start; at < vec[i].end; at += syspage) found(at);
            many += (vec[i].end - vec[i].start) / syspage;
        }
        if (arg.walk_end >= arg.end) break;
        arg.start = arg.walk_end; /* the vector filled up: go on from where the walk stopped */
    }
    d->busy = many > npg / 2 && npg >= 16 ? d->busy + 1 : 0;
    /* the take that ends a rest finds what the rest let be written: most pages again, and the range rests on */
    if (d->busy >= 2 || (d->busy && d->rest && d->since == 0)) {
        d->rest = d->rest && d->since <= 3 ? (d->rest < MAX_REST ? 2 * d->rest : MAX_REST) : REST;
        d->resting = d->rest;
        d->busy = 0;
    }
    /* this range's written system pages, in the caller's pages from its base */
    uintptr_t lo = (uintptr_t)d->base, hi = lo + d->size;
    for (const unsigned char *w = d->written; (w = memchr(w, 1, npg - (size_t)(w - d->written))) != NULL; w++) {
        uintptr_t s = d->start + (size_t)(w - d->written) * syspage, e = s + syspage;
        s = s > lo ? s : lo;
        e = e < hi ? e : hi;
        memset(pages + (s - lo) / ECHO_DIRTY_PAGE, 1, (e - 1 - lo) / ECHO_DIRTY_PAGE - (s - lo) / ECHO_DIRTY_PAGE + 1);
    }
    memset(d->written, 0, npg);
    return rc;
}

void echo_dirty_forget(echo_dirty_t *d, unsigned char *pages) {
    if (!d) return;
    int busy = d->busy, resting = d->resting;
    echo_dirty_take(d, pages);
    d->busy = busy;
    d->resting = resting;
}

int echo_dirty_shared_mapping(const void *base, size_t size) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return -1;
    uintptr_t at = (uintptr_t)base, end = at + size;
    int shared = 0;
    char line[4352]; /* PATH_MAX and the fields before it */
    while (at < end && fgets(line, sizeof line, f)) {
        unsigned long s, e;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s", &s, &e, perms) != 3 || e <= at) continue;
        if (s > at) break; /* a hole: not mapped */
        shared |= perms[3] == 's';
        at = e;
    }
    fclose(f);
    return at < end ? -1 : shared;
}

int echo_dirty_mapping(const void *addr, echo_mapping_t *m) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return -1;
    char line[4352];
    int found = -1;
    while (found < 0 && fgets(line, sizeof line, f)) {
        unsigned long s, e, off, ino;
        unsigned major, minor;
        char perms[8];
        if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu", &s, &e, perms, &off, &major, &minor, &ino) != 7) continue;
        if ((uintptr_t)addr < s || (uintptr_t)addr >= e) continue;
        *m = (echo_mapping_t){s, e, off, ino, (unsigned long)major << 20 | minor, perms[3] == 's'};
        found = 0;
    }
    fclose(f);
    return found;
}
