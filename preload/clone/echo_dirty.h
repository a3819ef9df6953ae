/* Which pages of a memory range were written: the kernel's asynchronous userfaultfd write protection (Linux >= 6.7),
 * read and re-armed with the PAGEMAP_SCAN ioctl.  The kernel marks a page written at the first write through this
 * process's page table after the last take: a store of this process (any thread), a write the kernel makes on its
 * behalf (read(2), process_vm_writev(2) of another process: CMA), a device's page fault.  It does not see what other
 * processes store through their own mapping of shared memory, nor what a network card writes by DMA into memory
 * it pinned earlier: docs/rma.md says how the clone layer keeps those cases right. */
#ifndef ECHO_DIRTY_H
#define ECHO_DIRTY_H

#include <stddef.h>

#define ECHO_DIRTY_PAGE 4096 /* the granularity callers count pages in (the clone layer's window pages) */

/* NULL if tracking can work in this process, else why not (said once by the caller) */
const char *echo_dirty_unavailable(void);

/* A tracked range.  Ranges may share pages (two windows' small buffers on one page, the segments of a node window):
 * a write found while taking one range is kept for every range that covers its page. */
typedef struct echo_dirty echo_dirty_t;
/* Start tracking [base, base+size) (extended to whole system pages); NULL if the kernel refused it. */
echo_dirty_t *echo_dirty_track(void *base, size_t size);
void echo_dirty_untrack(echo_dirty_t *d);
/* Set pages[i] = 1 for every ECHO_DIRTY_PAGE page i of the range (counted from its base) that a page written since
 * the last take (or the track) overlaps, and write-protect those pages again.  0, or -1 if the scan failed: the
 * caller must then take every page as written. */
int echo_dirty_take(echo_dirty_t *d, unsigned char *pages);
/* Take and forget the pages written since the last take, as writes of no program: the caller's own copy of a whole
 * range must not look like a program that writes most of its pages (which makes a range rest: echo_dirty.c) */
void echo_dirty_forget(echo_dirty_t *d, unsigned char *pages);
/* 1 if some page of [base, base+size) lies in a shared mapping (other processes may store into it), 0 if every
 * page is in private mappings, -1 if a page is not mapped or the mappings could not be read. */
int echo_dirty_shared_mapping(const void *base, size_t size);

/* The mapping that holds addr: where it starts and ends here, and the file and offset it maps (inode 0: memory of
 * no file); 0, or -1 if addr is not mapped */
typedef struct echo_mapping {
    unsigned long start, end, offset, inode, dev;
    int shared;
} echo_mapping_t;
int echo_dirty_mapping(const void *addr, echo_mapping_t *m);

#endif
