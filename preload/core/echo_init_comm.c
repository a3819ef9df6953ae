/* Hand-written special cases of every mode: MPI_Init/Finalize/Abort (what a
 * mode does there: its echo_mode_t).  The clone layer's answers about
 * communicators (rank, size, groups): clone/echo_comm_answers.c.
 *
 * Naming (read by gen_wrappers.py): echo_always_MPI_X runs in every mode;
 * echo_MPI_X runs only when the job is cloned, else the wrapper passes through. */
#include "echo_internal.h"

#include <stdio.h>

int echo_always_MPI_Init(int *argc, char ***argv) {
    if (echo_world_owned_by_echo()) return MPI_SUCCESS; /* a session initialized it (echo_session.c) */
    int rc = PMPI_Init(argc, argv);
    echo_setup_after_init();
    return rc;
}

int echo_always_MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    if (echo_world_owned_by_echo()) return PMPI_Query_thread(provided);
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    echo_setup_after_init();
    /* copies follow their representative call by call, so calls from several
     * threads at once could be matched in a different order on each copy */
    if ((echo.cloned || echo.sdr) && *provided > MPI_THREAD_FUNNELED) *provided = MPI_THREAD_FUNNELED;
    return rc;
}

int echo_always_MPI_Finalize(void) {
    if (echo_mode->finalize_begins) echo_mode->finalize_begins(); /* Reinit: returns only if the job never had to be repaired */
    echo_teardown_before_finalize();
    echo_mark_finalizing();
    int rc = echo_mode->skips_finalize && echo_mode->skips_finalize() ? MPI_SUCCESS : PMPI_Finalize();
    echo_mark_finalized();
    return rc;
}

int echo_always_MPI_Abort(MPI_Comm comm, int errorcode) {
    (void)comm;
    if (echo.app_rank >= 0)
        fprintf(stderr, "echo: application rank %d copy %d called MPI_Abort with error code %d\n", echo.app_rank,
                echo.copy, errorcode);
    return PMPI_Abort(MPI_COMM_WORLD, errorcode);
}
