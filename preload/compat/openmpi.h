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
/* Its Fortran bindings (mpif.h, `use mpi`, `use mpi_f08`) call PMPI_* themselves: echo gives Fortran programs
 * entry points of its own (preload/gen/gen_fortran.py), which convert the Fortran arguments and call the wrappers. */
#define ECHO_FORTRAN_ENTRY_POINTS 1
