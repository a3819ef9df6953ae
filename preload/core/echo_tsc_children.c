/* Processes the program starts read their own time-stamp counter.
 *
 * echo_tsc.c traps the application's rdtsc under `--tsc share`, a flag of the thread that Linux keeps across fork
 * and exec: a command a rank ran (system("date"), popen, posix_spawn, fork and exec, Fortran's
 * execute_command_line, Python's subprocess) died of SIGSEGV at its first clock read, in the representative and
 * in its copies.  Every way libc offers to run a program goes through one of the functions below (glibc's own
 * system and popen call its internal posix_spawn, which no library can interpose, hence those two here too): each
 * lifts the flag on the calling thread, so that the child starts without it, and sets it again when the call
 * returns (exec only returns when it failed).  A vfork child (posix_spawn's, Python's subprocess) calls exec in
 * its parent's memory, so nothing here writes memory: the flag is the thread's, read and set by prctl.  The child
 * loads echo's library when its environment says so (LD_PRELOAD, unchanged), as before; echo_process.c tells it
 * apart from the rank.  fork's child is echo_tsc.c's (pthread_atfork). */
#define _GNU_SOURCE
#include "echo_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define INTERPOSED __attribute__((visibility("default")))

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execv_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);
typedef int (*execveat_fn)(int, const char *, char *const[], char *const[], int);
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
                        char *const[], char *const[]);
typedef int (*system_fn)(const char *);
typedef FILE *(*popen_fn)(const char *, const char *);

static execve_fn real_execve, real_execvpe;
static execv_fn real_execv, real_execvp;
static fexecve_fn real_fexecve;
static execveat_fn real_execveat;
static spawn_fn real_posix_spawn, real_posix_spawnp;
static system_fn real_system;
static popen_fn real_popen;

/* at load, never in a child: dlsym takes the loader's lock, which a vfork child must not */
__attribute__((constructor)) static void resolve(void) {
    real_execve = (execve_fn)dlsym(RTLD_NEXT, "execve");
    real_execvpe = (execve_fn)dlsym(RTLD_NEXT, "execvpe");
    real_execv = (execv_fn)dlsym(RTLD_NEXT, "execv");
    real_execvp = (execv_fn)dlsym(RTLD_NEXT, "execvp");
    real_fexecve = (fexecve_fn)dlsym(RTLD_NEXT, "fexecve");
    real_execveat = (execveat_fn)dlsym(RTLD_NEXT, "execveat");
    real_posix_spawn = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawn");
    real_posix_spawnp = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawnp");
    real_system = (system_fn)dlsym(RTLD_NEXT, "system");
    real_popen = (popen_fn)dlsym(RTLD_NEXT, "popen");
}

/* the call's errno is the caller's, whatever setting the flag again does to it */
static void trap_again(int lifted) {
    int saved = errno;
    echo_tsc_trap_again(lifted);
    errno = saved;
}

#define AROUND(call)                         \
    do {                                     \
        int lifted = echo_tsc_lift_for_child(); \
        __typeof__(call) rc_ = (call);       \
        trap_again(lifted);                  \
        return rc_;                          \
    } while (0)

INTERPOSED int execve(const char *path, char *const argv[], char *const envp[]) {
    AROUND(real_execve(path, argv, envp));
}

INTERPOSED int execvpe(const char *file, char *const argv[], char *const envp[]) {
    AROUND(real_execvpe(file, argv, envp));
}

INTERPOSED int execv(const char *path, char *const argv[]) { AROUND(real_execv(path, argv)); }

INTERPOSED int execvp(const char *file, char *const argv[]) { AROUND(real_execvp(file, argv)); }

INTERPOSED int fexecve(int fd, char *const argv[], char *const envp[]) { AROUND(real_fexecve(fd, argv, envp)); }

INTERPOSED int execveat(int dirfd, const char *path, char *const argv[], char *const envp[], int flags) {
    if (!real_execveat) { /* a libc older than 2.34 */
        errno = ENOSYS;
        return -1;
    }
    AROUND(real_execveat(dirfd, path, argv, envp, flags));
}

/* execl, execlp, execle: their list as an array on the stack (no malloc: a vfork child may call them), then the
 * array form, which lifts the flag */
#define ARGS_TO_ARRAY(first, argv, ap, then)                                   \
    size_t n_ = 1;                                                             \
    va_start(ap, first);                                                       \
    while (va_arg(ap, char *)) n_++;                                           \
    va_end(ap);                                                                \
    char *argv[n_ + 1];                                                        \
    argv[0] = (char *)(first);                                                 \
    va_start(ap, first);                                                       \
    for (size_t i_ = 1; i_ <= n_; i_++) argv[i_] = va_arg(ap, char *); /* the last: the list's NULL */ \
    then;                                                                      \
    va_end(ap)

INTERPOSED int execl(const char *path, const char *arg, ...) {
    va_list ap;
    ARGS_TO_ARRAY(arg, argv, ap, (void)0);
    return execv(path, argv);
}

INTERPOSED int execlp(const char *file, const char *arg, ...) {
    va_list ap;
    ARGS_TO_ARRAY(arg, argv, ap, (void)0);
    return execvp(file, argv);
}

INTERPOSED int execle(const char *path, const char *arg, ...) {
    va_list ap;
    char *const *envp;
    ARGS_TO_ARRAY(arg, argv, ap, envp = va_arg(ap, char *const *)); /* after the list's NULL */
    return execve(path, argv, envp);
}

INTERPOSED int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                           const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    AROUND(real_posix_spawn(pid, path, actions, attr, argv, envp));
}

INTERPOSED int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *actions,
                            const posix_spawnattr_t *attr, char *const argv[], char *const envp[]) {
    AROUND(real_posix_spawnp(pid, file, actions, attr, argv, envp));
}

/* the flag stays lifted on this thread while system waits for the command: the thread runs no application code
 * meanwhile but a signal handler's */
INTERPOSED int system(const char *command) { AROUND(real_system(command)); }

INTERPOSED FILE *popen(const char *command, const char *mode) { AROUND(real_popen(command, mode)); }
