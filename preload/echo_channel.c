/* The channel between a representative and its copies: every message a copy
 * waits for goes through here (forwards, SDC hashes and verdicts, clock
 * readings), over clone_comm, in program order.
 *
 * Copies wait for their representative most of the time.  A blocking MPI
 * receive polls: on a machine where copies share cores with representatives
 * (two copies a rank on two cores), every waiting copy would take CPU the
 * representatives need.  So when a rank's copies all live on its
 * representative's host, they sleep instead: a page of shared memory holds a
 * counter of messages the representative has posted to its copies; a copy with
 * nothing to receive waits on that counter with a futex, and the representative
 * wakes sleepers after posting (one atomic add, and a system call only when
 * some copy sleeps).  The representative never waits for its copies, except
 * where MPI makes a large send wait for its receiver.  Copies on other hosts
 * wait in MPI as before. */
#define _GNU_SOURCE
#include "echo_internal.h"

#include <fcntl.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAX_INLINE_COPIES 16
#define SLEEP_NS (50 * 1000 * 1000) /* a sleeper looks again at least this often (a wake-up lost is slow, not a hang) */
#define SPIN_NS (20 * 1000)         /* after a wake-up, look this long before sleeping again (a message on its way) */

typedef struct {
    _Atomic uint32_t posted;  /* messages the representative posted to its copies */
    _Atomic uint32_t sleepers;
} shared_t;

static shared_t *shared; /* NULL: copies not all on this host, or no copies */
static char shm_name[128];

static uint64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void echo_channel_setup(void) {
    shared = NULL;
    if (!echo_has_copies()) return;
    /* every copy on this host?  (a collective of the rank's copies, at set-up) */
    MPI_Comm local;
    int nlocal = 0;
    PMPI_Comm_split_type(echo.clone_comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    PMPI_Comm_size(local, &nlocal);
    PMPI_Comm_free(&local);
    if (nlocal != echo.ncopies) return;
    /* each process opens (creating if first) the same page: no process waits for another here */
    const char *run_id = echo_plan_value("run_id");
    snprintf(shm_name, sizeof shm_name, "/echo-%s-r%d", run_id ? run_id : "run", echo.app_rank);
    int fd = shm_open(shm_name, O_RDWR | O_CREAT, 0600);
    if (fd < 0) return;
    void *p = ftruncate(fd, sizeof(shared_t)) == 0
                  ? mmap(NULL, sizeof(shared_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    close(fd);
    if (p != MAP_FAILED) shared = p;
}

void echo_channel_teardown(void) {
    if (!shared) return;
    if (echo_is_rep()) shm_unlink(shm_name); /* mapped by every copy by now: the name is no longer needed */
    munmap(shared, sizeof(shared_t));
    shared = NULL;
}

/* the representative posted a message to its copies */
static void posted(void) {
    if (!shared) return;
    atomic_fetch_add(&shared->posted, 1);
    if (atomic_load(&shared->sleepers)) syscall(SYS_futex, &shared->posted, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

/* A copy returns once a message from its representative is there to be received: it sleeps while there is none */
static void wait_for_rep(void) {
    if (!shared) return;
    int flag = 0;
    uint64_t spin_until = now_ns() + SPIN_NS;
    for (;;) {
        uint32_t seen = atomic_load(&shared->posted);
        PMPI_Iprobe(0, MPI_ANY_TAG, echo.clone_comm, &flag, MPI_STATUS_IGNORE);
        if (flag) return;
        if (now_ns() < spin_until) continue;
        atomic_fetch_add(&shared->sleepers, 1);
        struct timespec limit = {0, SLEEP_NS};
        if (atomic_load(&shared->posted) == seen)
            syscall(SYS_futex, &shared->posted, FUTEX_WAIT, seen, &limit, NULL, 0);
        atomic_fetch_sub(&shared->sleepers, 1);
        spin_until = now_ns() + SPIN_NS;
    }
}

/* ---- the representative's side ---- */

int echo_to_copies(const void *buf, int count, MPI_Datatype dt, int tag) {
    MPI_Request reqs[MAX_INLINE_COPIES];
    MPI_Request *r = echo.ncopies - 1 <= MAX_INLINE_COPIES ? reqs : malloc(sizeof *r * (size_t)echo.ncopies);
    for (int c = 1; c < echo.ncopies; c++) PMPI_Isend(buf, count, dt, c, tag, echo.clone_comm, &r[c - 1]);
    posted(); /* before waiting: a large send completes only once its copy, awake, receives it */
    int rc = PMPI_Waitall(echo.ncopies - 1, r, MPI_STATUSES_IGNORE);
    if (r != reqs) free(r);
    return rc;
}

int echo_to_copy(int copy, const void *buf, int count, MPI_Datatype dt, int tag) {
    MPI_Request r;
    PMPI_Isend(buf, count, dt, copy, tag, echo.clone_comm, &r);
    posted();
    return PMPI_Wait(&r, MPI_STATUS_IGNORE);
}

/* ---- a copy's side ---- */

int echo_from_rep(void *buf, int count, MPI_Datatype dt, int tag, MPI_Status *status) {
    wait_for_rep();
    return PMPI_Recv(buf, count, dt, 0, tag, echo.clone_comm, status);
}

int echo_probe_rep(MPI_Status *status) {
    wait_for_rep();
    return PMPI_Probe(0, MPI_ANY_TAG, echo.clone_comm, status);
}
