/* Addresses in what copies hand to MPI (echo_sdc_addr.c): which differing bytes are each process's own
 * address of the same place, read from the two processes' memory maps. */
#ifndef ECHO_SDC_ADDR_H
#define ECHO_SDC_ADDR_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint64_t lo, hi, off; /* its addresses [lo, hi) and, for a file, the file offset at lo */
    uint64_t kind;        /* the stack, memory without a file, or a file (a hash of its path) */
    char name[96];        /* the file's path (or "[mpi memory I]"), for messages */
} echo_map_t;
/* m[0, n): the kernel's mappings by address; mpi[0, nmpi): MPI's memory blocks, within them, looked at first */
typedef struct { echo_map_t *m, *mpi; int n, nmpi; } echo_maps_t;

/* /proc/<pid>/maps as text (pid 0: this process's), NULL if it cannot be read; the caller frees it */
char *echo_maps_text(int pid, size_t *len);
int echo_maps_parse(const char *text, echo_maps_t *maps); /* 0 if nothing was read */
void echo_maps_free(echo_maps_t *maps);
/* The first byte where a (mapped as ma) and b (as mb) differ other than by an address of the same place in
 * each, -1 if none.  With `patch` (b's bytes, to be given a's data): every such byte is set to a's, the addresses
 * stay b's own, and the whole buffer is scanned. */
long echo_sdc_unlike(const unsigned char *a, const echo_maps_t *ma, const unsigned char *b, const echo_maps_t *mb,
                     size_t n, unsigned char *patch);
/* where v points in a process mapped as maps, in words, for messages */
void echo_sdc_where(const echo_maps_t *maps, uint64_t v, char *out, size_t len);
/* The mappings of this process that hold the aligned words of bytes[0, n) that look like addresses, at most max
 * of them (the representative's side under detect: echo_sdc.c sends them with its bytes) */
int echo_sdc_addr_maps(const unsigned char *bytes, size_t n, echo_map_t *out, int max);
/* those n mappings as a map to compare with (sorts them; maps points into m) */
void echo_maps_of(echo_map_t *m, int n, echo_maps_t *maps);
/* The first aligned word where both hold addresses of their own memory, not of the same place: a vote must not
 * take one for the other (the address of one process in another's buffer); -1 if none */
long echo_sdc_unvotable(const unsigned char *a, const echo_maps_t *ma, const unsigned char *b,
                        const echo_maps_t *mb, size_t n);

#endif
