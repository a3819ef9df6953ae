/* The time-stamp counter under copies: a copy's `rdtsc` reads its representative's counter.
 *
 * Codes read cycle counts with the instruction itself (an MD code's load balancing gathers them), so no call can
 * be interposed.  Linux can make the instruction fault instead (prctl PR_SET_TSC, PR_TSC_SIGSEGV: a flag of the
 * thread, which threads it starts inherit); echo sets it on the thread that initialized MPI, in every process of a
 * rank with copies when the plan says `tsc share` (under --sdc unless --tsc own; Linux keeps it across fork and
 * exec, which echo_tsc_children.c lifts for the processes the program starts), and emulates the faulting `rdtsc`
 * (0F 31) and `rdtscp` (0F 01 F9) in a SIGSEGV handler: the real counter (read with the flag lifted for that
 * instruction), which echo_clock.c shares as a clock reading when the instruction is the application's (decided
 * by its address, as a libc clock's caller decides: MPI's, its runtime's, the vDSO's and echo's own reads keep
 * their real counter and consume no reading).  Any other fault goes to the handler that was there before (the
 * MPI's, the Fortran runtime's, echo's own), or kills the process with SIGSEGV as it would have; a SIGSEGV handler
 * installed later (sigaction, signal: a crash reporter set up after MPI_Init) becomes the one echo's chains to,
 * for echo's must stay first to see the counter's faults.  Between MPI_Init and MPI_Finalize only; threads started
 * before MPI_Init (a pool the program made earlier) are trapped from their first MPI call on: docs/sdc.md.
 *
 * The flag stays set inside an application's MPI call: setting it and lifting it are two system calls, which
 * doubled a cheap call's cost when every call paid them (bench/results/tsc_trap.md).  Most calls read no clock:
 * echo times them with the kernel's clock through a system call (echo_records.h), which the trap does not stop.
 * A call in which the MPI (its progress engine, MPI_Wtime, the vDSO's clocks) or echo reads the counter faults
 * once: the handler lifts the flag for the rest of that call and the instruction runs again, natively; the
 * wrapper sets it again when the call returns (those flags of each thread: echo_tsc_trap.c, which the clock's
 * exchange of readings holds too).  Outside MPI calls a trapped read is a signal and two system calls,
 * and the vDSO's clocks would fault too, so the libc clocks the application calls go to the kernel by a system
 * call (echo_clock.c).
 *
 * The handler runs on a stack apart (sigaltstack, a thread's own): on the program's stack the kernel's signal
 * frame and the handler's frames lay below the program's stack pointer and stayed there, holding the process's own
 * counter (a copy's, before it took its representative's), the channel's pointers and the registers of the moment;
 * a local the program wrote in part and then broadcast whole (a code's fixed-size record, right after it read the
 * counter) held them, and SDC flagged the clean run.  A thread that already has an alternate stack (the program's,
 * its runtime's) keeps it, and the handler runs there. */
#define _GNU_SOURCE
#include "echo_internal.h"
#include "echo_records.h"
#include "echo_tsc_trap.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <ucontext.h>

static struct sigaction before; /* the handler the program, its runtime or echo had */
/* the libc's: echo's own changes of SIGSEGV's action are real */
static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static sighandler_t (*real_signal)(int, sighandler_t);

static void resolve(void) {
    if (real_sigaction) return;
    real_signal = (sighandler_t (*)(int, sighandler_t))dlsym(RTLD_NEXT, "signal");
    real_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(RTLD_NEXT, "sigaction");
}

#define INTERPOSED __attribute__((visibility("default")))

INTERPOSED int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
    resolve();
    if (sig != SIGSEGV || !echo_tsc_trapping) return real_sigaction(sig, act, old);
    struct sigaction was = before;
    if (act) before = *act;
    if (old) *old = was;
    return 0;
}

INTERPOSED sighandler_t signal(int sig, sighandler_t handler) {
    resolve();
    if (sig != SIGSEGV || !echo_tsc_trapping) return real_signal(sig, handler);
    sighandler_t was = before.sa_flags & SA_SIGINFO ? (sighandler_t)(void (*)(int))before.sa_sigaction : before.sa_handler;
    memset(&before, 0, sizeof before);
    before.sa_handler = handler;
    before.sa_flags = SA_RESTART; /* glibc's signal(): BSD semantics */
    sigemptyset(&before.sa_mask);
    return was;
}

#if defined(__x86_64__) && defined(PR_SET_TSC)
#define APART_STACK ((size_t)256 << 10) /* the handler, echo's sharing of the reading and a chained handler's work */
static ECHO_TLS int stack_known;        /* this thread's handler runs on an alternate stack (echo's or its own) */
static pthread_key_t apart_key;         /* a thread's stack of echo's, unmapped when the thread ends */

static void apart_stack_free(void *stack) {
    stack_t off = {.ss_flags = SS_DISABLE};
    stack_t now;
    if (sigaltstack(NULL, &now) == 0 && now.ss_sp == stack) sigaltstack(&off, NULL);
    munmap(stack, APART_STACK);
}

/* this thread's faults go to a stack apart from now on; only system calls (it may run in the handler: a thread
 * started after MPI_Init gets one at its first fault, which the program's stack still takes).  Threads do not
 * inherit an alternate stack. */
static void stack_apart(int in_handler) {
    if (stack_known) return;
    stack_known = 1;
    if (!in_handler) echo_stack_known(); /* the program's stack, to zero below a reader (echo_stack.c) */
    stack_t now;
    if (sigaltstack(NULL, &now) != 0 || !(now.ss_flags & SS_DISABLE)) return; /* the thread has one: the program's */
    void *p = mmap(NULL, APART_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK,
                   -1, 0);
    if (p == MAP_FAILED) return;
    stack_t apart = {.ss_sp = p, .ss_size = APART_STACK, .ss_flags = 0};
    if (sigaltstack(&apart, NULL) != 0) {
        munmap(p, APART_STACK);
        return;
    }
    pthread_setspecific(apart_key, p);
}

/* with the flag lifted (the caller's) */
static uint64_t real_counter(int with_aux, uint64_t *aux) {
    uint32_t lo, hi, c = 0;
    if (with_aux)
        __asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(c));
    else
        __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    *aux = c;
    return (uint64_t)hi << 32 | lo;
}

static void chain(int sig, siginfo_t *si, void *ctx) {
    if (before.sa_flags & SA_SIGINFO) {
        before.sa_sigaction(sig, si, ctx);
    } else if (before.sa_handler == SIG_IGN && si->si_code <= 0) {
        /* sent by kill or raise, and ignored: as without echo */
    } else if (before.sa_handler == SIG_DFL || before.sa_handler == SIG_IGN) {
        /* a fault: returning re-runs the instruction, which now kills the process with SIGSEGV (an ignored
         * SIGSEGV at a faulting instruction does too: the kernel forces it); sent by kill or raise (echo's own
         * crash handler re-raises it): nothing re-runs, so it is raised again */
        real_signal(sig, SIG_DFL);
        if (si->si_code <= 0) raise(sig);
    } else {
        before.sa_handler(sig);
    }
}

static void on_segv(int sig, siginfo_t *si, void *ctx) {
    stack_apart(1); /* for this thread's next faults, if this one is on the program's stack */
    ucontext_t *uc = ctx;
    const unsigned char *ip = (const unsigned char *)uc->uc_mcontext.gregs[REG_RIP];
    int len = 0;
    /* the instruction's general-protection fault is SI_KERNEL; a bad address (SEGV_MAPERR, SEGV_ACCERR, where
     * the instruction itself may be unreadable) never is */
    if (si->si_code == SI_KERNEL && ip) {
        if (ip[0] == 0x0f && ip[1] == 0x31) len = 2;
        else if (ip[0] == 0x0f && ip[1] == 0x01 && ip[2] == 0xf9) len = 3;
    }
    if (!len) {
        chain(sig, si, ctx);
        return;
    }
    /* the MPI's, echo's (or a callback's it runs): the rest of the call reads the counter freely */
    if (echo_tsc_in_call) {
        prctl(PR_SET_TSC, PR_TSC_ENABLE, 0, 0, 0);
        echo_tsc_lifted = 1;
        return; /* the instruction runs again, without the flag */
    }
    /* lifted while echo reads the counter and shares it: the channel's own clock reads must not fault */
    prctl(PR_SET_TSC, PR_TSC_ENABLE, 0, 0, 0);
    uint64_t aux, tsc = real_counter(len == 3, &aux);
    tsc = echo_clock_tsc(tsc, ip);
    prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0);
    uc->uc_mcontext.gregs[REG_RAX] = (greg_t)(tsc & 0xffffffffu);
    uc->uc_mcontext.gregs[REG_RDX] = (greg_t)(tsc >> 32);
    if (len == 3) uc->uc_mcontext.gregs[REG_RCX] = (greg_t)aux;
    uc->uc_mcontext.gregs[REG_RIP] += len;
    /* the program's calls left below the reader what they left: zeroed, as below a libc clock reading (share) */
    echo_stack_scrub_below((uintptr_t)uc->uc_mcontext.gregs[REG_RSP]);
}

static void forked_child(void);

void echo_tsc_setup(void) {
    const char *share = echo_plan_value("tsc"); /* echorun --tsc share, or --sdc (echo/plan.py tsc_lines) */
    if (echo_tsc_trapping || !share || strcmp(share, "share") != 0) return;
    /* Valgrind executes rdtsc itself: the flag's fault is not the hardware's there (a memcheck copy under --sdc
     * died of SIGSEGV), so a copy under it reads its own counter, as with --tsc own */
    if (echo_under_valgrind()) return;
    resolve();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (pthread_key_create(&apart_key, apart_stack_free) != 0) return;
    stack_apart(0);
    echo_records_rate(); /* while the counter reads freely: a trapped call's ticks (echo_records.h) */
    if (real_sigaction(SIGSEGV, &sa, &before) != 0) return;
    if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) { /* a kernel without it: the counter is the copy's own */
        real_sigaction(SIGSEGV, &before, NULL);
        return;
    }
    echo_tsc_trapping = echo_tsc_trapped = echo_tsc_armed = 1;
    pthread_atfork(NULL, NULL, forked_child);
}

/* A process the program starts must read its own counter: Linux keeps the flag across fork and exec, so a command
 * a rank ran (system("date"), a Python subprocess) died of SIGSEGV at its first clock read, and a forked child
 * that stays the program would share its readings with the copies, which never read them.  fork's child reads
 * its own counter (here); exec, posix_spawn, system and popen lift the flag on the calling thread for the child
 * (echo_tsc_children.c).  Only system calls: a vfork child (posix_spawn's, Python's subprocess) runs this in the
 * parent's memory. */
static void forked_child(void) {
    echo_tsc_trapped = echo_tsc_in_call = echo_tsc_lifted = echo_ticks_by_kernel = 0;
    prctl(PR_SET_TSC, PR_TSC_ENABLE, 0, 0, 0);
}

/* around an application's MPI call, on its thread (which may be one started before MPI_Init: it is trapped from
 * its first call on).  No system call but a thread's first: the flag stays set, and is lifted only if something
 * in the call reads the counter (on_segv). */
int echo_tsc_enter(void) {
    if (!echo_tsc_armed) {
        if (echo_tsc_trapping) {
            stack_apart(0);
            echo_stack_known(); /* a thread whose first trapped read came first: its stack was not found then */
        }
        int state = 0;
        if (prctl(PR_GET_TSC, &state, 0, 0, 0) == 0 && state != PR_TSC_SIGSEGV)
            prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0);
        echo_tsc_armed = 1;
    }
    echo_tsc_in_call = echo_ticks_by_kernel = 1;
    return 1;
}

#else
void echo_tsc_setup(void) {}
int echo_tsc_enter(void) { return 0; }
#endif
