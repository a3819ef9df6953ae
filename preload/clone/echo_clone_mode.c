/* The clone mode (echorun --clones/--copies): each application rank runs as copies; representatives form the
 * world and forward to their copies (docs/replication.md). */
#include "echo_clone.h"

static void clone_setup(void) {
    echo_rank_model_setup();
    /* lock-step: the representatives form the world; independent: copy k of every rank forms world k */
    PMPI_Comm_split(MPI_COMM_WORLD, echo.independent ? echo.copy : echo.copy == 0 ? 0 : MPI_UNDEFINED,
                    echo.app_rank, &echo.reps_world);
    PMPI_Comm_split(MPI_COMM_WORLD, echo.app_rank, echo.copy, &echo.clone_comm);
    echo_comm_add(MPI_COMM_WORLD, echo.reps_world, echo.app_rank, echo.app_size, echo.rep_real_rank);
    echo_channel_setup();
    echo_sdc_init();
    if (echo_clock_setup()) { /* copies read their representative's clocks: and, through them, these */
        echo_clock_python_setup(); /* a Python program's clocks are its time module's */
        echo_tsc_setup();
        echo_pid_setup();
    }
    echo_roles_setup();
}

void echo_clone_teardown(void) {
    /* copies wait here for their representative: nothing of the rank is lost
     * if a copy finished early */
    if (echo.reps_world != MPI_COMM_NULL) PMPI_Comm_free(&echo.reps_world);
    echo_channel_teardown();
    PMPI_Comm_free(&echo.clone_comm);
}

/* a copy is no member of the real communicator its representative would revoke or shrink: only a communicator
 * echo does not replicate (MPI_COMM_SELF and what derives from it) is each process's own */
static int owns_comm(MPI_Comm app) { return echo_comm_find(app) != NULL; }

/* a copy's own MPI_Abort or exit(non-zero) does not end the application (echo_copy_aborts, echo_copy_exits); in independent worlds copy k of every
 * rank talks to copy k of the others, who would wait for it: there it ends the job as any process does */
static void clone_aborts(int errorcode) {
    if (echo.copy > 0 && !echo.independent) echo_copy_aborts(errorcode);
}

static void clone_exits(int status) {
    if (echo.copy > 0 && !echo.independent) echo_copy_exits(status);
}

extern const struct echo_calls echo_calls_clone; /* generated: preload/gen/gen_wrappers.py's MODES */

const echo_mode_t echo_mode_clone = {
    .name = "clones",
    .calls = &echo_calls_clone,
    .setup = clone_setup,
    .teardown = echo_clone_teardown,
    .owns_comm = owns_comm,
    .aborts = clone_aborts,
    .exits = clone_exits,
};
