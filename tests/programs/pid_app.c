/* A code that knows its own process id, as GROMACS does: its log starts with the process that wrote it, its
 * checkpoint holds a checksum of the log (written to a temporary file, renamed over the last one), rank 0 tells
 * rank 1 its process id in a message (written into rank 1's log), each rank names itself through
 * /proc/<pid>/comm, checks /proc/<pid>/status is its own, and signals itself with kill(getpid(), SIGUSR1), counted
 * by its handler.  It prints only what does not depend on the ids.  Usage: pid_app DIR */
#define _GNU_SOURCE
#include <mpi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SIGNALS 3

static volatile sig_atomic_t signalled;
static void on_usr1(int sig) {
    (void)sig;
    signalled++;
}

static uint32_t checksum(const char *path) { /* FNV-1a of the file's bytes */
    FILE *f = fopen(path, "rb");
    uint32_t h = 2166136261u;
    for (int c; f && (c = fgetc(f)) != EOF;) h = (h ^ (uint32_t)c) * 16777619u;
    if (f) fclose(f);
    return h;
}

static long status_pid(pid_t pid) { /* the Pid: line of /proc/<pid>/status */
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long found = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "Pid:", 4) == 0) found = atol(line + 4);
    if (f) fclose(f);
    return found;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *dir = argc > 1 ? argv[1] : ".";
    pid_t pid = getpid();

    char log_path[512], tmp_path[512], cpt_path[512];
    snprintf(log_path, sizeof log_path, "%s/md.%d.log", dir, rank);
    snprintf(tmp_path, sizeof tmp_path, "%s/state.%d.tmp", dir, rank);
    snprintf(cpt_path, sizeof cpt_path, "%s/state.%d.cpt", dir, rank);
    FILE *log = fopen(log_path, "w");
    if (!log) {
        perror(log_path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    fprintf(log, "Log file opened: process ID %d, parent %d\n", (int)pid, (int)getppid());

    int peer_pid = 0;
    if (size > 1 && rank == 0) MPI_Send(&pid, 1, MPI_INT, 1, 3, MPI_COMM_WORLD);
    if (size > 1 && rank == 1) {
        MPI_Recv(&peer_pid, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        fprintf(log, "rank 0 runs as process %d\n", peer_pid);
    }

    /* the same process, however it is asked */
    int same = (long)syscall(SYS_getpid) == (long)pid && status_pid(pid) == (long)pid;
    int main_thread = (long)syscall(SYS_gettid) == (long)pid;
    int leader = getpgrp() == pid;
    char comm_path[64], want[16], got[17] = "";
    snprintf(comm_path, sizeof comm_path, "/proc/%d/comm", (int)pid);
    snprintf(want, sizeof want, "pidapp-r%d", rank);
    FILE *comm = fopen(comm_path, "w");
    int named = comm && fputs(want, comm) >= 0;
    if (comm && fclose(comm) != 0) named = 0;
    prctl(PR_GET_NAME, got);
    named = named && strcmp(got, want) == 0;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_usr1;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    for (int i = 0; i < SIGNALS; i++) {
        kill(getpid(), SIGUSR1);
        /* delivered to one of the process's threads (MPI has some): wait for it, a while at most */
        for (int waited = 0; signalled <= i && waited < 2000; waited++) nanosleep(&(struct timespec){0, 1000000}, NULL);
    }

    double local = 1.25 * (rank + 1), total = 0;
    MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    fprintf(log, "step 0: energy %.6f\n", total);
    fprintf(log, "signals handled: %d\n", (int)signalled);
    fclose(log);

    FILE *cpt = fopen(tmp_path, "w");
    if (!cpt) {
        perror(tmp_path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    fprintf(cpt, "checkpoint of rank %d, process %d: log checksum %08x\n", rank, (int)getpid(), checksum(log_path));
    fclose(cpt);
    if (rename(tmp_path, cpt_path) != 0) {
        perror(cpt_path);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    printf("r%d: energy %.6f\n", rank, total);
    printf("r%d: one process id: %s; main thread: %s; process group leader: %s; named itself: %s\n", rank,
           same ? "yes" : "no", main_thread ? "yes" : "no", leader ? "yes" : "no", named ? "yes" : "no");
    printf("r%d: signals sent to itself: %d, handled: %d\n", rank, SIGNALS, (int)signalled);
    if (rank == 1) printf("r1: rank 0's process id received: %s\n", peer_pid > 0 ? "yes" : "no");
    MPI_Finalize();
    return 0;
}
