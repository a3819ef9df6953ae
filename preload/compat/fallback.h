/* What an MPI lacks, given a stand-in so that every source compiles the same.
 *
 * Without ULFM the fault-tolerance calls fail with MPI_ERR_OTHER: the FT modes
 * (SDR, Reinit) that need them are refused before a job starts (echo/launch.py
 * asks echo.build.MPI.ulfm), and the clone layer's revoke on a fatal error is
 * only a courtesy to the other ranks. */
#ifndef ECHO_HAS_ULFM
#define ECHO_HAS_ULFM 0
#ifndef MPIX_ERR_PROC_FAILED
#define MPIX_ERR_PROC_FAILED (-7001)
#endif
#ifndef MPIX_ERR_PROC_FAILED_PENDING
#define MPIX_ERR_PROC_FAILED_PENDING (-7002)
#endif
#ifndef MPIX_ERR_REVOKED
#define MPIX_ERR_REVOKED (-7003)
#endif
static inline int echo_no_ulfm(void) { return MPI_ERR_OTHER; }
#define PMPIX_Comm_revoke(comm) ((void)(comm), echo_no_ulfm())
#define PMPIX_Comm_shrink(comm, newcomm) ((void)(comm), *(newcomm) = MPI_COMM_NULL, echo_no_ulfm())
#define PMPIX_Comm_agree(comm, flag) ((void)(comm), (void)(flag), echo_no_ulfm())
#define PMPIX_Comm_iagree(comm, flag, req) ((void)(comm), (void)(flag), *(req) = MPI_REQUEST_NULL, echo_no_ulfm())
#define PMPIX_Comm_ack_failed(comm, n, acked) ((void)(comm), (void)(n), *(acked) = 0, echo_no_ulfm())
#define PMPIX_Comm_get_failed(comm, grp) ((void)(comm), *(grp) = MPI_GROUP_EMPTY, echo_no_ulfm())
#define PMPIX_Comm_failure_ack(comm) ((void)(comm), echo_no_ulfm())
#define PMPIX_Comm_failure_get_acked(comm, grp) ((void)(comm), *(grp) = MPI_GROUP_EMPTY, echo_no_ulfm())
#define PMPIX_Comm_is_revoked(comm, flag) ((void)(comm), *(flag) = 0, echo_no_ulfm())
#endif

#ifndef ECHO_POINTER_HANDLES
#define ECHO_POINTER_HANDLES 1 /* the MPI 5 standard ABI's handles are pointers to incomplete structs */
#endif

/* echo's own request handles (echo_handles.c): where the MPI's handles are
 * pointers, the address of echo's state; where they are integers, an index
 * into a table, in a range the MPI never gives out.  `magic` is the first
 * unsigned of every state echo registers: it tells echo's handles apart. */
MPI_Request echo_handle_new(void *state);
void *echo_handle_state(MPI_Request h); /* NULL for a handle that is not echo's */
void echo_handle_free(MPI_Request h);
/* stand-ins for messages a copy never gives to MPI (distinct for distinct slots) */
MPI_Message echo_placeholder_message(int slot);

/* MPI-4 calls echo itself makes, on an MPI that lacks them (Open MPI 4.1) */
#if !ECHO_DECLARES(MPI_Info_get_string)
#undef PMPI_Info_get_string
#define PMPI_Info_get_string echo_info_get_string
int echo_info_get_string(MPI_Info info, const char *key, int *buflen, char *value, int *flag);
#endif

#ifndef ECHO_FORTRAN_ENTRY_POINTS
#define ECHO_FORTRAN_ENTRY_POINTS 0 /* MPICH: its Fortran layer calls the C MPI_* symbols, echo's wrappers */
#endif
#ifndef ECHO_FORTRAN_F08_ENTRY_POINTS
#define ECHO_FORTRAN_F08_ENTRY_POINTS 0 /* entry points for mpi_f08 alone (MPICH's): compat/mpich.h */
#endif
