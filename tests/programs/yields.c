/* A 1-byte ping-pong between ranks 0 and 1 that counts, in each process, the
 * times MPI gave its core away (sched_yield) during the loop, and says whether
 * Open MPI's progress engine yields when idle (opal_progress_yield_when_idle;
 * -1: not Open MPI).  Its sched_yield takes the place of libc's for the MPI
 * library only when the program exports it: build with -rdynamic
 * (tests/preload/test_channel_wait.py does).  argv[1]: round trips. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

static __thread int counting; /* the main thread's loop only: MPI's own threads yield as they like */
static long yields;

int sched_yield(void) {
    if (counting) yields++;
    return (int)syscall(SYS_sched_yield);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, n = argc > 1 ? atoi(argv[1]) : 20000;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const bool *idle = dlsym(RTLD_DEFAULT, "opal_progress_yield_when_idle");
    int yield_when_idle = idle ? *idle : -1;
    char b = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    counting = 1;
    for (int i = 0; i < n; i++) {
        if (rank == 0) {
            MPI_Send(&b, 1, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(&b, 1, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(&b, 1, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&b, 1, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
    }
    counting = 0;
    MPI_Finalize();
    printf("r%d: yield_when_idle %d, yields %ld in %d round trips\n", rank, yield_when_idle, yields, n);
    return 0;
}
