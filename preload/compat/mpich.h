/* MPICH and its derivatives (Intel MPI, MVAPICH, Cray MPICH): handles are
 * integers (echo's own requests live in a table: compat/echo_handles.c);
 * mpi.h defines the *_c2f/*_f2c conversions as macros (the wrapper generator
 * undefines them to wrap the functions).  MPICH's ULFM is partial (no
 * MPIX_Comm_ack_failed, MPIX_Comm_iagree): echo's FT modes are not built. */
#define ECHO_POINTER_HANDLES 0
