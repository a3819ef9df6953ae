/* The MPI as echo sees it: mpi.h, plus what differs between MPI families, in
 * one place (the shape of mpi4py's src/lib-mpi/config/ + fallback.h).
 *
 * Every preload source includes this instead of <mpi.h>.  A family header
 * says what its MPI has (ULFM, the kind of its handles); fallback.h gives
 * what it lacks.  Calls an MPI may not declare (MPI-4's, in Open MPI 4.1) are
 * guarded by ECHO_DECLARES(MPI_X), from echo_declared.h which the wrapper
 * generator writes next to wrappers.c from the mpi.h being compiled against. */
#ifndef ECHO_COMPAT_MPI_H
#define ECHO_COMPAT_MPI_H

#include <mpi.h>

#if defined(OPEN_MPI)
#include "compat/openmpi.h"
#elif defined(MPICH_VERSION) || defined(MPICH) || defined(I_MPI_VERSION)
#include "compat/mpich.h"
#elif defined(MPI_ABI_VERSION)
#include "compat/abi.h"
#endif
/* what the library gives the application: the wrappers (echo builds with -fvisibility=hidden, and only some
 * MPIs' mpi.h mark their functions visible, Open MPI's does, MPICH's does not) */
#define ECHO_PUBLIC __attribute__((visibility("default")))

/* 1 when this mpi.h declares MPI_X (an undefined name is 0 in #if) */
#define ECHO_DECLARES(fn) ECHO_DECLARES_##fn
int echo_lacks(const char *fn); /* the stand-in of a call this MPI lacks: stops the job naming it */
#if defined(__has_include)
#if __has_include("echo_declared.h")
#include "echo_declared.h"
#endif
#endif
#include "compat/fallback.h"

#endif
