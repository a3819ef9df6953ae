/* The MPI 5 standard ABI (mpi_abi.h: MPICH 5's mpicc_abi and libmpi_abi; any ABI-compliant MPI runs the same
 * build): handles are pointers to incomplete structs; C has no Fortran types, while echo's conversions of its
 * own request handles to Fortran integers are written with MPI_Fint (compiled, never wrapped: no _c2f here). */
#define ECHO_POINTER_HANDLES 1
typedef int MPI_Fint;
