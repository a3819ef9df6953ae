/* Whose code a call comes from: the application's (the program and its libraries), or MPI's, its runtime's, echo's,
 * an interpreter's own.  The clocks (echo_clock.c), the process ids (echo_pid.c) and the heaps (echo_heap.c) share
 * the application's readings and allocations with its copies, never the others'; they ask here, by the caller's
 * address. */
#define _GNU_SOURCE
#include "echo_internal.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* libudev (and libsystemd, the same device code): hwloc asks it about each I/O device when a program loads the
 * topology (GROMACS's hardware detection), and it checks with fstatfs that /sys is sysfs, on the representative
 * only (a copy's did not: GROMACS's copies parted at that reading); a file system's type, never a program's free
 * space */
static const char *const not_application[] = {
    "libmpi", "libopen-", "libpmix", "libprrte", "libhwloc", "libevent", "libucp", "libucs", "libuct", "libucm",
    "libfabric", "libpsm", "libmpich", "libmpl", "libpapi", "libpfm", "libibverbs", "librdmacm", "libnuma",
    "vgpreload", "libecho", "ld-linux", "linux-vdso", "libc.so", "libpthread", "libcuda", "libze", "libmunge", "libslurm",
    "libudev", "libsystemd",
    /* an MPI's own plugins: Open MPI 4.1's components (mca_btl_vader.so reads a peer's memory with process_vm_readv by
     * its pid, mca_shmem_mmap.so names segments by getpid: echo_pid.c must leave them real), libfabric's providers
     * (libshm-fi.so, Intel MPI's) */
    "mca_", "-fi.so",
};

/* of those, the C library and the dynamic loader, which allocate for whoever called them (echo_heap.c) */
static const char *const runtime[] = {"ld-linux", "linux-vdso", "libc.so", "libpthread"};

#define CALLERS 512
/* a caller's address with what it is in the bits above any user-space address (below 2^57), in one word that
 * threads read and write whole: a thread never sees one caller's address with another's answer (a copy's MPI reading
 * its representative's memory must never be taken for the program: echo_pid.c) */
#define CALLER_APP ((uintptr_t)1 << 62)    /* code of the program's (not in the list above) */
#define CALLER_INTERP ((uintptr_t)1 << 61) /* the interpreter's own (below) */
#define CALLER_RUNTIME ((uintptr_t)1 << 60) /* the C library's or the loader's (runtime[] above) */
#define CALLER_BITS (CALLER_APP | CALLER_INTERP | CALLER_RUNTIME)
static uintptr_t callers[CALLERS];

static char interpreter[512]; /* the object file of an interpreter whose own reads are not the program's */

void echo_clock_not_application(const char *object_file) {
    snprintf(interpreter, sizeof interpreter, "%s", object_file);
    memset(callers, 0, sizeof callers); /* classified before: classify again */
}

static uintptr_t classified(const void *at) {
    unsigned h = (unsigned)(((uintptr_t)at >> 3) * 2654435761u) % CALLERS;
    uintptr_t known = __atomic_load_n(&callers[h], __ATOMIC_RELAXED);
    if ((known & ~CALLER_BITS) != (uintptr_t)at) {
        Dl_info info;
        int app = 1, interp = 0, rt = 0;
        if (dladdr(at, &info) && info.dli_fname) {
            const char *base = strrchr(info.dli_fname, '/');
            base = base ? base + 1 : info.dli_fname;
            for (size_t i = 0; i < sizeof not_application / sizeof *not_application; i++)
                if (strstr(base, not_application[i])) app = 0;
            for (size_t i = 0; i < sizeof runtime / sizeof *runtime; i++)
                if (strstr(base, runtime[i])) rt = 1;
            interp = interpreter[0] && strcmp(info.dli_fname, interpreter) == 0;
        }
        known = (uintptr_t)at | (app ? CALLER_APP : 0) | (interp ? CALLER_INTERP : 0) | (rt ? CALLER_RUNTIME : 0);
        __atomic_store_n(&callers[h], known, __ATOMIC_RELAXED);
    }
    return known;
}

static int classify(const void *at, int interpreter_too) {
    uintptr_t known = classified(at);
    return (known & CALLER_APP) && (interpreter_too || !(known & CALLER_INTERP));
}

int echo_code_owner(const void *at) {
    uintptr_t known = classified(at);
    return known & CALLER_APP ? ECHO_CODE_PROGRAM : known & CALLER_RUNTIME ? ECHO_CODE_RUNTIME : ECHO_CODE_MPI;
}

/* Whose a clock reading is (echo_clock.c): the program's code, its interpreter's own reads apart */
int echo_application_caller(const void *at) { return classify(at, 0); }

/* Whose a call is, for readings that are not clocks (echo_pid.c): the program's code, the interpreter's included
 * (Python's os.getpid and os.kill are the interpreter's calls of libc: its own reads of its pid are as rare as they
 * are harmless, unlike its clock reads) */
int echo_application_code(const void *at) { return classify(at, 1); }
