/* A code that runs programs of its own between its steps, the ways C codes do it: system() for a command it
 * does not read (a post-processing script, here `date`), popen() for one it reads, posix_spawn() with a pipe,
 * fork() + execl(), and a fork() whose child stays this program and reads the time-stamp counter itself (a
 * helper process).  Every one of those children reads a clock.  Each rank times the step with rdtsc and the
 * ranks reduce the cycles, as MD codes time their load balance.  Prints "rR: ..." lines. */
#define _GNU_SOURCE
#include <mpi.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <x86intrin.h>

extern char **environ;

/* a number printed by `date +%s` (the child ran and read the clock) */
static int is_seconds(const char *text) {
    int digits = 0;
    for (; *text && *text != '\n'; text++, digits++)
        if (*text < '0' || *text > '9') return 0;
    return digits >= 9;
}

static int read_all(int fd, char *buf, size_t size) {
    size_t n = 0;
    ssize_t got;
    while (n + 1 < size && (got = read(fd, buf + n, size - 1 - n)) > 0) n += (size_t)got;
    buf[n] = 0;
    return (int)n;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char out[256];
    unsigned long long c0 = __rdtsc();

    int st = system("date +%s > /dev/null");
    printf("r%d: system exited %d\n", rank, WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));

    FILE *p = popen("date +%s", "r");
    if (!p || !fgets(out, sizeof out, p)) out[0] = 0;
    st = p ? pclose(p) : -1;
    printf("r%d: popen read %s, exited %d\n", rank, is_seconds(out) ? "seconds" : "nothing",
           WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));

    int fds[2];
    if (pipe(fds) != 0) MPI_Abort(MPI_COMM_WORLD, 1);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    char *date_argv[] = {"date", "+%s", NULL};
    pid_t pid;
    if (posix_spawnp(&pid, "date", &actions, NULL, date_argv, environ) != 0) MPI_Abort(MPI_COMM_WORLD, 1);
    close(fds[1]);
    read_all(fds[0], out, sizeof out);
    close(fds[0]);
    waitpid(pid, &st, 0);
    posix_spawn_file_actions_destroy(&actions);
    printf("r%d: posix_spawn read %s, exited %d\n", rank, is_seconds(out) ? "seconds" : "nothing",
           WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));

    pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", "date +%s > /dev/null", (char *)NULL);
        _exit(127);
    }
    waitpid(pid, &st, 0);
    printf("r%d: fork and exec exited %d\n", rank, WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));

    pid = fork();
    if (pid == 0) { /* a helper: this program, timing a little work of its own */
        unsigned long long t = __rdtsc();
        volatile double x = 0;
        for (int i = 0; i < 1000; i++) x += i;
        _exit(__rdtsc() > t ? 0 : 1);
    }
    waitpid(pid, &st, 0);
    printf("r%d: forked helper exited %d\n", rank, WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));

    unsigned long long cycles = __rdtsc() - c0, most;
    MPI_Allreduce(&cycles, &most, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) printf("r0: slowest rank took %llu cycles\n", most);
    printf("r%d: done\n", rank);
    MPI_Finalize();
    return 0;
}
