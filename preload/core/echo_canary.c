/* One stack-protector canary for a rank's processes, under --sdc (docs/sdc.md, "Bytes the program never wrote").
 *
 * Code built with -fstack-protector (Debian builds its libraries so: libgfortran's namelist reader among them)
 * stores the thread's canary in each protected frame, and the frames a call leaves on the stack stay there: a DFT
 * code's unfilled CHARACTER(512) local, broadcast whole, carried the canary gfortran's reader left.  The kernel
 * gives every process its own random canary, so a representative and its copies sent different bytes and SDC
 * flagged a clean run.  Here every process of a rank takes one canary, made of a random seed echorun draws for the
 * run (the plan's sdc_seed) and the rank: as unpredictable from outside the run as the kernel's, the same in the
 * processes that must agree.  It is set in the library's constructor, before main and before any protected frame
 * that would return through the old value: only when the library is preloaded (a late dlopen has protected frames
 * below it).  x86-64 only (the canary's place in the thread block is the ABI's there); elsewhere nothing changes. */
#define _GNU_SOURCE
#include "echo_internal.h"

#include <stdint.h>

/* splitmix64's finalizer: a seed and a rank spread over all 64 bits */
static uint64_t mixed(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

void echo_canary_share(unsigned long long seed) {
#if defined(__x86_64__)
    /* glibc's canary has a zero low byte, which stops an overflow by a string function at it: so does this one */
    uint64_t canary = mixed(seed ^ mixed((uint64_t)echo.app_rank)) & ~(uint64_t)0xff;
    __asm__ volatile("mov %0, %%fs:0x28" : : "r"(canary) : "memory");
#else
    (void)seed;
#endif
}
