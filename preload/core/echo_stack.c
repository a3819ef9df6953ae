/* The stack an MPI call leaves below its caller, zeroed when the call returns (under --sdc).
 *
 * A program sends bytes it never wrote: a struct on the stack filled in part, a Fortran CHARACTER(512) local
 * that is only written when a read failed (a DFT code's check_namelist_read).  Those bytes are whatever earlier
 * calls left on the stack there, and the deepest of those are MPI's own frames: a representative goes deep into
 * its MPI to communicate, its copies take what it forwards through echo's channel instead, so the leftovers
 * differ and SDC flagged clean runs.  When each intercepted call returns, the ECHO_STACK_SCRUB bytes below the
 * caller's stack pointer are zeroed in every process, so what MPI and echo left there is the same (zeros) in a
 * representative and its copies, and a program's unwritten local is alike in all of them.  What the program's
 * own calls leave (libc's, its runtime's) it leaves alike in every copy, as natively; addresses among them differ
 * with each process's layout (docs/sdc.md).
 *
 * How deep: the deepest bytes MPI and echo left below a program's frame were 24 KiB down (Debian's Open MPI 4.1,
 * its MPI_Init included; measured once, tests/programs/stack_struct.c), so ECHO_STACK_SCRUB_DEPTH is 32 KiB.  The
 * cost, every intercepted call under --sdc: zeroing 32 KiB took 0.6 us on this project's 2-core test machine
 * (16 KiB 0.3 us; 64 KiB, past the first-level cache, 6 to 17 us); a local larger than the depth, or a program
 * deeper than its caller, can still hold older leftovers.
 *
 * The wrappers return through echo_stack_scrubbed by a tail call, so that their own frames are below the
 * caller's stack pointer when it zeroes: on x86-64 it is written in assembly (a C function would leave its own
 * frame); elsewhere a C function zeroes below itself and leaves its own frame. */
#define _GNU_SOURCE
#include "echo_internal.h"

#include <pthread.h>
#include <string.h>

size_t echo_stack_scrub;

/* This thread's stack: the lowest address it may grow to, two pages above its guard (0: not known yet), and its top */
static ECHO_TLS uintptr_t stack_floor, stack_top;

static void find_stack(void) {
    pthread_attr_t attr;
    void *low = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        pthread_attr_getstack(&attr, &low, &size);
        pthread_attr_destroy(&attr);
    }
    stack_floor = (uintptr_t)low + 2 * 4096;
    stack_top = (uintptr_t)low + size;
}

int echo_stack_holds(const void *p) {
    if (!stack_floor) find_stack();
    return (uintptr_t)p >= stack_floor && (uintptr_t)p < stack_top;
}

int echo_stack_zero(int rc, size_t depth);

#if defined(__x86_64__)
/* int echo_stack_zero(int rc, size_t depth): entered by a jump (the wrapper's and echo_stack_scrubbed's tail
 * calls), so the stack pointer is the caller's, less its return address: zero the `depth` bytes below that and
 * return rc.  Only caller-saved registers are used. */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl echo_stack_zero\n"
        ".hidden echo_stack_zero\n"
        ".type echo_stack_zero, @function\n"
        "echo_stack_zero:\n"
        "    mov %edi, %r8d\n"
        "    mov %rsi, %rcx\n"
        "    mov %rsp, %rdi\n"
        "    sub %rsi, %rdi\n"
        "    xor %eax, %eax\n"
        "    cld\n"
        "    rep stosb\n"
        "    mov %r8d, %eax\n"
        "    ret\n"
        ".size echo_stack_zero, .-echo_stack_zero\n");
#else
__attribute__((noinline)) int echo_stack_zero(int rc, size_t depth) {
    unsigned char *below = __builtin_alloca(depth);
    memset(below, 0, depth);
    __asm__ volatile("" : : "r"(below) : "memory"); /* the stores are not dead */
    return rc;
}
#endif

int echo_stack_scrubbed(int rc) {
    if (!stack_floor) find_stack();
    uintptr_t here = (uintptr_t)__builtin_frame_address(0);
    /* not on this stack (an alternate signal stack): left alone */
    size_t room = here > stack_floor && here <= stack_top ? here - stack_floor : 0;
    return echo_stack_zero(rc, room < echo_stack_scrub ? room : echo_stack_scrub);
}

/* A signal handler on an alternate stack (the time-stamp counter's trap, echo_tsc.c), below the program's stack
 * pointer `sp` at the fault: what the program's calls left there is zeroed as after a clock call (echo_clock.c's
 * share), so that a reading by instruction and one by a libc call leave the same below the reader.  The red zone
 * (the 128 bytes below `sp`, which a leaf function may use without moving it) is the program's own and stays.  No
 * allocation (a signal handler): nothing is done on a thread whose stack is not known yet (echo_stack_known). */
void echo_stack_scrub_below(uintptr_t sp) {
    if (!echo_stack_scrub || !stack_floor || sp > stack_top || sp < stack_floor + 128) return;
    uintptr_t top = sp - 128, low = top - stack_floor > echo_stack_scrub ? top - echo_stack_scrub : stack_floor;
    memset((void *)low, 0, top - low);
}

void echo_stack_known(void) {
    if (!stack_floor) find_stack();
}

