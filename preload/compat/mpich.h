/* MPICH and its derivatives (Intel MPI, MVAPICH, Cray MPICH): handles are
 * integers (echo's own requests live in a table: compat/echo_handles.c);
 * mpi.h defines the *_c2f/*_f2c conversions as macros (the wrapper generator
 * undefines them to wrap the functions).  MPICH's ULFM is partial (no
 * MPIX_Comm_ack_failed, MPIX_Comm_iagree): echo's FT modes are not built. */
#define ECHO_POINTER_HANDLES 0
/* MPICH's mpif.h and `use mpi` call the C MPI_* symbols, echo's wrappers; its mpi_f08 calls PMPI_* (mpi_x_f08_,
 * and mpi_x_f08ts_ with choice buffers as gfortran descriptors): echo gives those entry points of its own
 * (preload/gen/gen_fortran.py).  Measured with MPICH 4.0 and gfortran; Intel MPI's mpi_f08 was not tried. */
#if !defined(I_MPI_VERSION)
#define ECHO_FORTRAN_F08_ENTRY_POINTS 1
#endif
