/* The packed bytes of a typed buffer as MPI's own transfer carries them.
 *
 * MPI_Pack and a send need not copy the same bytes: Open MPI 5's MPI_Pack of a strided MPI_LONG_DOUBLE writes
 * the 10 value bytes of each 16-byte element and leaves the 6 of padding in the packed buffer as they were,
 * where its send carries all 16 (its MPI_Unpack into such a type writes the 10 too).  A program that sends long
 * doubles and compares the received bytes with memcmp (MPICH's datatype/sendrecvt2 and sendrecvt4) saw
 * natively what the sender had, and under echo whatever lay in echo's uninitialized copy (and a collective's own
 * block, which Open MPI copies whole, lost them in echo's pack and unpack).  So echo's packed copies that stand
 * for a send (a sparse datatype's: others are copied as the memory they cover and sent with their own type) are
 * made by a send: to this process, on a private duplicate of MPI_COMM_SELF (an application's self-messages never
 * match it), received as MPI_PACKED.  Each call has a tag of its own, so that two threads' copies never match
 * each other's. */
#include "echo_internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/uio.h>
#include <unistd.h>

static MPI_Comm self_comm = MPI_COMM_NULL;
static pthread_mutex_t self_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint next_tag;

/* the private duplicate of MPI_COMM_SELF and a tag no other copy in flight has */
static MPI_Comm self_channel(int *tag) {
    pthread_mutex_lock(&self_lock); /* made on first use, once even if two threads copy at once */
    if (self_comm == MPI_COMM_NULL) {
        PMPI_Comm_dup(MPI_COMM_SELF, &self_comm);
        PMPI_Comm_set_errhandler(self_comm, MPI_ERRORS_RETURN);
    }
    pthread_mutex_unlock(&self_lock);
    *tag = (int)(atomic_fetch_add(&next_tag, 1) % 32768u); /* MPI_TAG_UB is at least 32767 */
    return self_comm;
}

int echo_pack_as_sent(const void *buf, int count, MPI_Datatype dt, void *packed, int size, int *position) {
    int tag;
    MPI_Comm comm = self_channel(&tag);
    MPI_Status st;
    int rc = PMPI_Sendrecv(buf, count, dt, 0, tag, (char *)packed + *position, size - *position, MPI_PACKED, 0, tag,
                           comm, &st);
    if (rc != MPI_SUCCESS) return rc;
    int got = 0;
    PMPI_Get_count(&st, MPI_PACKED, &got);
    *position += got;
    return MPI_SUCCESS;
}

int echo_copy_as_sent(const void *in, int count, MPI_Datatype dt, void *out, int rcount, MPI_Datatype rdt) {
    int tag;
    MPI_Comm comm = self_channel(&tag);
    return PMPI_Sendrecv(in, count, dt, 0, tag, out, rcount, rdt, 0, tag, comm, MPI_STATUS_IGNORE);
}

/* Whether every page of [addr, addr + len) can be read, where addr and the span's last byte hold data (a type's
 * true bounds).  A type with holes covers memory the program may never have mapped: a struct type over two
 * separately mapped arrays with a freed one between them, a guard page; copying that span would kill the process
 * echo watches.  A span of one page's size or less touches at most two pages, each holding data; past that, the
 * kernel reads a byte of each page (process_vm_readv of this process answers a short count, never a fault).
 * Where it cannot say (the call refused), the span is taken as not readable: the caller packs instead. */
int echo_span_readable(const void *addr, size_t len) {
    static long page;
    if (!page) page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
    if (len <= (size_t)page) return 1;
    enum { BATCH = 64 };
    char sink[BATCH];
    struct iovec local = {sink, 0}, remote[BATCH];
    uintptr_t at = (uintptr_t)addr & ~(uintptr_t)(page - 1), end = (uintptr_t)addr + len;
    while (at < end) {
        int n = 0;
        for (; n < BATCH && at < end; n++, at += (uintptr_t)page)
            remote[n] = (struct iovec){(void *)(at < (uintptr_t)addr ? (uintptr_t)addr : at), 1};
        local.iov_len = (size_t)n;
        if (process_vm_readv(getpid(), &local, 1, remote, (unsigned long)n, 0) != n) return 0;
    }
    return 1;
}

/* The memory (count, dt) covers from its true lower bound (`*tlb` from the buffer), when a copy of it should be
 * that span sent with its own type rather than packed bytes (which may lack bytes a send carries, above): when the
 * span is not much more than its `packed` bytes (4 times, or 4 KiB); 0 for a sparse type, packed instead. */
size_t echo_type_span(int count, MPI_Datatype dt, int packed, MPI_Aint *tlb) {
    MPI_Aint lb, extent, textent;
    PMPI_Type_get_extent(dt, &lb, &extent);
    PMPI_Type_get_true_extent(dt, tlb, &textent);
    if (count <= 0 || extent <= 0 || textent <= 0) return 0;
    size_t span = (size_t)(count - 1) * (size_t)extent + (size_t)textent;
    return span <= 4 * (size_t)(packed > 0 ? packed : 0) || span <= 4096 ? span : 0;
}
