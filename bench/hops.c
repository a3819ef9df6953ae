/* 1-byte ping-pong between ranks 0 and 1 with a known number of hops, for
 * counting what each hop costs (bench/run_latency_parts.py).
 *
 *     hops [iterations [acks]]      (default 20000; 2 hops per iteration)
 *
 * `acks`, with 4 processes: SDR's messages without its layer, natively
 * (preload/sdr/echo_sdr.h): processes 0-1 and 2-3 are two worlds (replica k
 * of rank a is process 2k + a) each running the ping-pong, and the receiver
 * of each message acks it (16 bytes) to the sender's replica in the other
 * world, which waits for that ack before it goes on, as an SDR send completes
 * only when it is acked.
 *
 * The measured loop is bracketed by renaming the calling thread ("hops-run",
 * then "hops-done"), so that a kernel trace of the whole job (perf record
 * with tracepoints) can count exactly the system calls and context switches
 * of each process's loop, whatever runs before or after it.  Each process
 * (under echo: each copy and replica too, since the rename is not an MPI call)
 * prints its own CPU time, the time it was runnable but waited for a core, and
 * the wall time over the loop:
 *     hops <rank> <iterations> <one-way us> <cpu ns> <ns runnable but waiting for a core> */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* CPU time of the calling thread in ns, read by a raw system call: under echo a copy's libc clock readings are its
 * representative's (preload/core/echo_clock.c), this one is its own */
static long long cpu_ns(void) {
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ns the calling thread spent runnable but waiting for a core (the scheduler's run delay) */
static long long waited_ns(void) {
    long long run = 0, delay = -1;
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (f) {
        if (fscanf(f, "%lld %lld", &run, &delay) != 2) delay = -1;
        fclose(f);
    }
    return delay;
}

static int acks; /* SDR's acks (see the top) */

/* one hop of the acks variant: the sender waits for the ack of the other world's receiver, the receiver acks
 * to the other world's sender */
static void send_acked(char *buf, int to) {
    int ack[4] = {0};
    MPI_Send(buf, 1, MPI_BYTE, to, 0, MPI_COMM_WORLD);
    MPI_Recv(ack, 4, MPI_INT, (to + 2) % 4, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static void recv_acking(char *buf, int from) {
    int ack[4] = {0};
    MPI_Recv(buf, 1, MPI_BYTE, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(ack, 4, MPI_INT, (from + 2) % 4, 1, MPI_COMM_WORLD);
}

static void pingpong(int rank, char *buf, int iters) {
    for (int i = 0; acks && i < iters; i++) {
        int peer = rank ^ 1;
        if (rank % 2 == 0) {
            send_acked(buf, peer);
            recv_acking(buf, peer);
        } else {
            recv_acking(buf, peer);
            send_acked(buf, peer);
        }
    }
    for (int i = 0; !acks && i < iters; i++) {
        if (rank == 0) {
            MPI_Send(buf, 1, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, 1, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, 1, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, 1, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size, iters = argc > 1 ? atoi(argv[1]) : 20000;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    acks = argc > 2 && strcmp(argv[2], "acks") == 0;
    if (acks && size != 4) {
        if (rank == 0) fprintf(stderr, "hops: acks needs 4 processes\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char buf[1] = {0};
    pingpong(rank, buf, iters / 10 + 1); /* warm-up: connections and buffers set up */
    MPI_Barrier(MPI_COMM_WORLD);
    long long w0 = waited_ns(), c0 = cpu_ns();
    prctl(PR_SET_NAME, "hops-run", 0, 0, 0);
    double t = MPI_Wtime();
    pingpong(rank, buf, iters);
    t = MPI_Wtime() - t;
    prctl(PR_SET_NAME, "hops-done", 0, 0, 0);
    long long c1 = cpu_ns(), w1 = waited_ns();
    printf("hops %d %d %.4f %lld %lld\n", rank, iters, t / iters / 2 * 1e6, c1 - c0, w1 - w0);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
