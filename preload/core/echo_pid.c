/* Process ids under clones: a copy's program reads its representative's (docs/sdc.md, "Process ids").
 *
 * Production codes write their process id where SDC compares what copies wrote: GROMACS puts it in md.log's
 * header, and the MD5 of md.log in its checkpoints; codes name their runs and scratch files by it, seed from it,
 * send it.  A copy reading its own made each of those a divergence (exit 20) on a clean run.  So from MPI_Init on
 * (the representative's pid is learnt from it then, on the rank's clone communicator) the ids the program reads of
 * itself are its representative's:
 * - getpid(), and syscall(SYS_getpid): the representative's pid (gfortran's GETPID and Python's os.getpid call
 *   getpid too);
 * - gettid() on the main thread: its tid is its pid, natively and so under copies (a code tells its main thread by
 *   gettid() == getpid()); other threads' ids are their own (the representative's other threads, MPI's among them,
 *   are not the copy's: natively they differ from run to run too);
 * - getppid(): the representative's parent (the MPI launcher's daemon: the same process for copies on the
 *   representative's host, another on another host);
 * - getpgrp(), getpgid(), getsid(): MPI's launchers make each rank the leader of its own process group, whose id
 *   is then the rank's pid: the representative's in a copy, so that getpgrp() == getpid() holds as natively.
 * Where the program hands such an id back to the kernel it means itself, so a copy's call acts on the copy, never
 * on its representative (which may be a process of the same host): kill, killpg, sigqueue, tgkill, tkill (and the
 * same system calls made with syscall()), pidfd_open, sched_{set,get}{affinity,scheduler,param},
 * sched_rr_get_interval, {set,get}priority, prlimit, setpgid, getpgid, getsid, process_vm_{readv,writev}, and the
 * paths /proc/<pid>/... (echo_pid_proc_path, which echo_fileview.c asks: /proc/<pid>/status is /proc/self/status).
 * waitpid and friends take children's ids, which are real on every side.
 *
 * Only the program's calls (decided by the caller's address, as a clock reading's: echo_application_code): MPI,
 * its runtime and echo keep the real ids (PMIx names the process by it; a copy's MPI reads its representative's
 * memory with process_vm_readv for a large message on one host).  A process the copy forks is no copy of anything:
 * its own ids are real, and its parent's (the copy) is the representative's.  Before MPI_Init a copy reads its own
 * pid (the representative's is not known yet), and so do raw system calls made without libc: docs/sdc.md. */
#define _GNU_SOURCE
#include "echo_internal.h"

#include <dlfcn.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define INTERPOSED __attribute__((visibility("default")))

/* the copy's own pid and parent, and its representative's: set once, at MPI_Init; own == rep on a representative */
static pid_t own_pid, own_ppid, rep_pid, rep_ppid;
static int on; /* a copy that knows its representative's ids */

static long (*real_syscall)(long, ...);
/* the system call itself (echo's own calls of syscall() would go through the interposed one below) */
static long sys(long number, long a0) {
    if (!real_syscall) real_syscall = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
    return real_syscall(number, a0, 0L, 0L, 0L, 0L, 0L);
}
#define REAL(name) static __typeof__(name) *real_##name
#define RESOLVE(name) ((__typeof__(real_##name))resolved((void **)&real_##name, #name))
static void *resolved(void **slot, const char *name) { /* at first use: a call may come before MPI_Init */
    if (!*slot) *slot = dlsym(RTLD_NEXT, name);
    return *slot;
}

void echo_pid_setup(void) {
    long mine[2] = {sys(SYS_getpid, 0), sys(SYS_getppid, 0)}, reps[2] = {mine[0], mine[1]};
    PMPI_Bcast(reps, 2, MPI_LONG, 0, echo.clone_comm); /* every process of the rank: echo_clock_setup */
    own_pid = (pid_t)mine[0];
    own_ppid = (pid_t)mine[1];
    rep_pid = (pid_t)reps[0];
    rep_ppid = (pid_t)reps[1];
    on = !echo_is_rep() && rep_pid != own_pid;
}

/* an id the kernel gave the program's call at `at`, as the program sees it */
static pid_t seen(pid_t id, const void *at) {
    if (!on || id <= 0 || (id != own_pid && id != own_ppid) || !echo_application_code(at)) return id;
    return id == own_pid ? rep_pid : rep_ppid;
}

/* an id the program's call at `at` hands to the kernel (negative: a process group), as the kernel knows it */
static pid_t meant(pid_t id, const void *at) {
    pid_t a = id < 0 ? -id : id;
    if (!on || a <= 0 || (a != rep_pid && a != rep_ppid) || !echo_application_code(at)) return id;
    a = a == rep_pid ? own_pid : own_ppid;
    return id < 0 ? -a : a;
}

/* ---- the ids the program reads ---- */
INTERPOSED pid_t getpid(void) { return seen((pid_t)sys(SYS_getpid, 0), __builtin_return_address(0)); }
INTERPOSED pid_t getppid(void) { return seen((pid_t)sys(SYS_getppid, 0), __builtin_return_address(0)); }
/* the main thread's: its tid is the process's pid (other threads' are not the copy's own: above) */
INTERPOSED pid_t gettid(void) {
    pid_t tid = (pid_t)sys(SYS_gettid, 0);
    return tid == own_pid ? seen(tid, __builtin_return_address(0)) : tid;
}
INTERPOSED pid_t getpgrp(void) { return seen((pid_t)sys(SYS_getpgid, 0), __builtin_return_address(0)); }
INTERPOSED pid_t getpgid(pid_t pid) {
    const void *at = __builtin_return_address(0);
    pid_t id = (pid_t)sys(SYS_getpgid, meant(pid, at));
    return id < 0 ? id : seen(id, at);
}
INTERPOSED pid_t getsid(pid_t pid) {
    const void *at = __builtin_return_address(0);
    pid_t id = (pid_t)sys(SYS_getsid, meant(pid, at));
    return id < 0 ? id : seen(id, at);
}

/* ---- the ids the program hands back: itself, never its representative ---- */
REAL(kill);
REAL(killpg);
REAL(sigqueue);
REAL(sched_setaffinity);
REAL(sched_getaffinity);
REAL(sched_setscheduler);
REAL(sched_getscheduler);
REAL(sched_setparam);
REAL(sched_getparam);
REAL(sched_rr_get_interval);
REAL(setpriority);
REAL(getpriority);
REAL(prlimit);
REAL(prlimit64);
REAL(setpgid);
REAL(process_vm_readv);
REAL(process_vm_writev);

#define AT __builtin_return_address(0)
INTERPOSED int kill(pid_t pid, int sig) { return RESOLVE(kill)(meant(pid, AT), sig); }
INTERPOSED int killpg(pid_t pgrp, int sig) { return RESOLVE(killpg)(meant(pgrp, AT), sig); }
INTERPOSED int sigqueue(pid_t pid, int sig, const union sigval value) {
    return RESOLVE(sigqueue)(meant(pid, AT), sig, value);
}
/* tgkill, tkill and pidfd_open: glibc has wrappers of the first and the last since 2.30 and 2.36 only, and none of
 * tkill; the system call does what the wrapper does */
INTERPOSED int tgkill(pid_t tgid, pid_t tid, int sig) {
    const void *at = AT;
    return (int)syscall(SYS_tgkill, meant(tgid, at), meant(tid, at), sig);
}
INTERPOSED int tkill(pid_t tid, int sig) { return (int)syscall(SYS_tkill, meant(tid, AT), sig); }
#ifdef SYS_pidfd_open
INTERPOSED int pidfd_open(pid_t pid, unsigned int flags) { return (int)syscall(SYS_pidfd_open, meant(pid, AT), flags); }
#endif
INTERPOSED int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set) {
    return RESOLVE(sched_setaffinity)(meant(pid, AT), size, set);
}
INTERPOSED int sched_getaffinity(pid_t pid, size_t size, cpu_set_t *set) {
    return RESOLVE(sched_getaffinity)(meant(pid, AT), size, set);
}
INTERPOSED int sched_setscheduler(pid_t pid, int policy, const struct sched_param *param) {
    return RESOLVE(sched_setscheduler)(meant(pid, AT), policy, param);
}
INTERPOSED int sched_getscheduler(pid_t pid) { return RESOLVE(sched_getscheduler)(meant(pid, AT)); }
INTERPOSED int sched_setparam(pid_t pid, const struct sched_param *param) {
    return RESOLVE(sched_setparam)(meant(pid, AT), param);
}
INTERPOSED int sched_getparam(pid_t pid, struct sched_param *param) {
    return RESOLVE(sched_getparam)(meant(pid, AT), param);
}
INTERPOSED int sched_rr_get_interval(pid_t pid, struct timespec *interval) {
    return RESOLVE(sched_rr_get_interval)(meant(pid, AT), interval);
}
INTERPOSED int setpriority(__priority_which_t which, id_t who, int prio) {
    return RESOLVE(setpriority)(which, which == PRIO_PROCESS ? (id_t)meant((pid_t)who, AT) : who, prio);
}
INTERPOSED int getpriority(__priority_which_t which, id_t who) {
    return RESOLVE(getpriority)(which, which == PRIO_PROCESS ? (id_t)meant((pid_t)who, AT) : who);
}
INTERPOSED int prlimit(pid_t pid, __rlimit_resource_t resource, const struct rlimit *limit, struct rlimit *old) {
    return RESOLVE(prlimit)(meant(pid, AT), resource, limit, old);
}
INTERPOSED int prlimit64(pid_t pid, __rlimit_resource_t resource, const struct rlimit64 *limit, struct rlimit64 *old) {
    return RESOLVE(prlimit64)(meant(pid, AT), resource, limit, old);
}
INTERPOSED int setpgid(pid_t pid, pid_t pgid) {
    const void *at = AT;
    return RESOLVE(setpgid)(meant(pid, at), meant(pgid, at));
}
INTERPOSED ssize_t process_vm_readv(pid_t pid, const struct iovec *local, unsigned long nlocal,
                                    const struct iovec *remote, unsigned long nremote, unsigned long flags) {
    return RESOLVE(process_vm_readv)(meant(pid, AT), local, nlocal, remote, nremote, flags);
}
INTERPOSED ssize_t process_vm_writev(pid_t pid, const struct iovec *local, unsigned long nlocal,
                                     const struct iovec *remote, unsigned long nremote, unsigned long flags) {
    return RESOLVE(process_vm_writev)(meant(pid, AT), local, nlocal, remote, nremote, flags);
}

/* syscall(): codes read their ids with syscall(SYS_getpid) and syscall(SYS_gettid) (glibc had no gettid before
 * 2.30), and signal themselves with syscall(SYS_tgkill, ...).  Every other number passes through untouched (echo's
 * and MPI's futexes come this way). */
INTERPOSED long syscall(long number, ...) {
    va_list ap;
    va_start(ap, number);
    long a[6];
    for (int i = 0; i < 6; i++) a[i] = va_arg(ap, long);
    va_end(ap);
    if (!real_syscall) real_syscall = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
    if (!on) return real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
    const void *at = AT;
    switch (number) {
    case SYS_getpid:
    case SYS_getppid:
#ifdef SYS_getpgrp
    case SYS_getpgrp:
#endif
    {
        long id = real_syscall(number);
        return id < 0 ? id : seen((pid_t)id, at);
    }
    case SYS_gettid: {
        long tid = real_syscall(number);
        return tid == own_pid ? seen((pid_t)tid, at) : tid;
    }
    case SYS_getpgid:
    case SYS_getsid: {
        long id = real_syscall(number, (long)meant((pid_t)a[0], at));
        return id < 0 ? id : seen((pid_t)id, at);
    }
    case SYS_tgkill: /* both ids are the copy's: its pid and its main thread's tid */
    case SYS_rt_tgsigqueueinfo:
    case SYS_setpgid:
        a[1] = meant((pid_t)a[1], at);
        a[0] = meant((pid_t)a[0], at);
        break;
    case SYS_setpriority:
    case SYS_getpriority:
        if (a[0] == PRIO_PROCESS) a[1] = meant((pid_t)a[1], at);
        break;
    case SYS_kill:
    case SYS_tkill:
    case SYS_rt_sigqueueinfo:
#ifdef SYS_pidfd_open
    case SYS_pidfd_open:
#endif
    case SYS_sched_setaffinity:
    case SYS_sched_getaffinity:
    case SYS_sched_setscheduler:
    case SYS_sched_getscheduler:
    case SYS_sched_setparam:
    case SYS_sched_getparam:
    case SYS_sched_rr_get_interval:
    case SYS_prlimit64:
    case SYS_process_vm_readv:
    case SYS_process_vm_writev:
        a[0] = meant((pid_t)a[0], at);
        break;
    default:
        break;
    }
    return real_syscall(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* /proc/<pid>/... as the program means it: a copy's /proc/<representative's pid> (its own pid as it reads it) is
 * its own; and on every side, its own /proc/<pid> is /proc/self, so that the files echo_fileview.c reads as the
 * representative read them (/proc/self/status) are those whichever name the program gives them.  The main thread's
 * /proc/<pid>/task/<pid> is the process's own main thread too. */
const char *echo_pid_proc_path(const char *path, char *buf, const void *at) {
    if (!own_pid || !path || strncmp(path, "/proc/", 6) != 0 || path[6] < '1' || path[6] > '9') return path;
    char *end;
    long id = strtol(path + 6, &end, 10);
    if ((*end != '/' && *end) || (id != rep_pid && id != own_pid) || !echo_application_code(at)) return path;
    if (id == rep_pid && !on && rep_pid != own_pid) return path; /* a representative naming its copy: never */
    if (sys(SYS_getpid, 0) != own_pid) return path;              /* a child the copy forked: /proc/self is not it */
    const char *rest = end;
    char task[48];
    snprintf(task, sizeof task, "/task/%ld", id);
    size_t tl = strlen(task);
    if (strncmp(rest, task, tl) == 0 && (rest[tl] == '/' || !rest[tl])) {
        snprintf(buf, PATH_MAX, "/proc/self/task/%d%s", (int)own_pid, rest + tl);
    } else {
        snprintf(buf, PATH_MAX, "/proc/self%s", rest);
    }
    return buf;
}
