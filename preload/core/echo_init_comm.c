/* Hand-written special cases of every mode: MPI_Init/Finalize/Abort (what a
 * mode does there: its echo_mode_t), and the sessions' start and end, which
 * start and end the world of a program that never calls MPI_Init.  The clone
 * layer's answers about communicators (rank, size, groups):
 * clone/echo_comm_answers.c; its meaning of process sets: clone/echo_session.c.
 *
 * Naming (read by gen_wrappers.py): echo_always_MPI_X runs in every mode;
 * echo_MPI_X runs only when the job is cloned, else the wrapper passes through. */
#include "echo_internal.h"

#include <stdio.h>
#include <string.h>

static int echo_owns_world; /* echo called MPI_Init itself, for a sessions-only program */
static int open_sessions;

#if ECHO_DECLARES(MPI_Session_init) /* an MPI without sessions (MPI-3: Open MPI 4.1) has none of this */
/* the level the session asks for (its info's "thread_level"), which the world echo starts under it then has:
 * MPI may report the session's level from the world's (MPICH 5) */
static int session_thread_level(MPI_Info info) {
    static const struct { const char *name; int level; } levels[] = {
        {"MPI_THREAD_SINGLE", MPI_THREAD_SINGLE}, {"MPI_THREAD_FUNNELED", MPI_THREAD_FUNNELED},
        {"MPI_THREAD_SERIALIZED", MPI_THREAD_SERIALIZED}, {"MPI_THREAD_MULTIPLE", MPI_THREAD_MULTIPLE}};
    char value[64];
    int len = (int)sizeof value, flag = 0;
    if (info != MPI_INFO_NULL && PMPI_Info_get_string(info, "thread_level", &len, value, &flag) == MPI_SUCCESS && flag)
        for (size_t i = 0; i < sizeof levels / sizeof *levels; i++)
            if (strcmp(value, levels[i].name) == 0) return levels[i].level;
    return MPI_THREAD_FUNNELED;
}

int echo_always_MPI_Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session *session) {
    int initialized = 0;
    PMPI_Initialized(&initialized);
    /* with copies or not: echo's records (and its worlds) start at MPI_Init, which a sessions-only program never
     * calls, so echo makes it, once */
    if (!initialized && echo.app_rank >= 0) {
        int provided;
        PMPI_Init_thread(NULL, NULL, session_thread_level(info), &provided);
        echo_setup_after_init();
        echo_owns_world = 1;
    }
    int rc = PMPI_Session_init(info, errhandler, session);
    if (rc == MPI_SUCCESS) open_sessions++;
    return rc;
}

int echo_always_MPI_Session_finalize(MPI_Session *session) {
    int rc = PMPI_Session_finalize(session);
    if (rc == MPI_SUCCESS && --open_sessions == 0 && echo_owns_world) {
        echo_owns_world = 0;
        echo_teardown_before_finalize();
        PMPI_Finalize();
        echo_mark_finalized();
    }
    return rc;
}

#endif

/* MPI_Init after a session made echo initialize the world model: the program takes it over (1, once) */
static int world_owned_by_echo(void) {
    if (!echo_owns_world) return 0;
    echo_owns_world = 0;
    return 1;
}

int echo_always_MPI_Initialized(int *flag) {
    int rc = PMPI_Initialized(flag);
    if (echo_owns_world) *flag = 0;
    return rc;
}

int echo_always_MPI_Init(int *argc, char ***argv) {
    if (world_owned_by_echo()) return MPI_SUCCESS; /* a session initialized it (above) */
    int rc = PMPI_Init(argc, argv);
    echo_setup_after_init();
    return rc;
}

/* The level the MPI gives, in every mode.  Copies follow their representative call by call, which calls made by
 * one thread at a time keep in step whichever thread makes them (SERIALIZED); a program at MULTIPLE (mpi4py's
 * default) gets it too, and the wrappers stop the job, naming the threads and calls, at the first moment two
 * threads really are inside MPI at once (echo_serial.c): a lower level than asked would make a correct program
 * abort at its start. */
int echo_always_MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    if (world_owned_by_echo()) return PMPI_Query_thread(provided);
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    echo_setup_after_init();
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
    if (echo_mode->aborts) echo_mode->aborts(errorcode);
    return PMPI_Abort(MPI_COMM_WORLD, errorcode);
}
