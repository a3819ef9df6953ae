/* Open MPI: handles are pointers to the library's objects; ULFM (the
 * MPIX_Comm_revoke/shrink/agree... that SDR and Reinit need) comes with
 * Open MPI >= 5 in mpi-ext.h. */
#define ECHO_POINTER_HANDLES 1
#if defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif
#if defined(OMPI_HAVE_MPI_EXT_FTMPI) && OMPI_HAVE_MPI_EXT_FTMPI
#define ECHO_HAS_ULFM 1
#endif
/* Its Fortran bindings call PMPI_* themselves: echo is to give Fortran programs entry points of its own
 * (preload/gen_fortran.py).  NOT FINISHED, so off: with them, Open MPI 4.1's `use mpi` programs reach echo,
 * but the sentinels (MPI_IN_PLACE, MPI_STATUSES_IGNORE) are not recognized yet, and a program goes wrong
 * even without clones (docs/mpis.md). */
#define ECHO_FORTRAN_ENTRY_POINTS 0
