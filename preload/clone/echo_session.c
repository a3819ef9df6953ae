/* The sessions model (MPI-4) under cloning.
 *
 * Each process's session is its own (init, finalize, info, errhandlers and the
 * list of process sets pass through), but the process set "mpi://WORLD" means
 * the application's N ranks, not the job's P processes: its group is the
 * application's world group (a copy stands in its representative's place) and
 * its "mpi_size" is N.  Communicators made from such groups are created by the
 * representatives (MPI_Comm_create_from_group, echo_comm_new.c).
 *
 * A program that never calls MPI_Init still needs echo's worlds: the first
 * MPI_Session_init initializes the world model underneath (invisible to the
 * program: MPI_Initialized answers as before) and the last
 * MPI_Session_finalize finalizes it. */
#include "echo_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int echo_owns_world; /* echo called MPI_Init itself, for a sessions-only program */
static int open_sessions;

#if ECHO_DECLARES(MPI_Session_init) /* an MPI without sessions (MPI-3: Open MPI 4.1) has none of this */
int echo_always_MPI_Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session *session) {
    int initialized = 0;
    PMPI_Initialized(&initialized);
    /* with copies or not: echo's records (and its worlds) start at MPI_Init, which a sessions-only program never
     * calls, so echo makes it, once */
    if (!initialized && echo.app_rank >= 0) {
        int provided;
        PMPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
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

/* MPI_Init after a session made echo initialize the world model: the program
 * takes it over */
#endif

int echo_world_owned_by_echo(void) {
    if (!echo_owns_world) return 0;
    echo_owns_world = 0;
    return 1;
}

int echo_always_MPI_Initialized(int *flag) {
    int rc = PMPI_Initialized(flag);
    if (echo_owns_world) *flag = 0;
    return rc;
}

#if ECHO_DECLARES(MPI_Session_init)
static int is_world(const char *pset_name) { return strcmp(pset_name, "mpi://WORLD") == 0; }

/* Any other process set (Open MPI's mpix://SHARED...) as the application sees
 * it: the representative takes the application ranks of the representatives in
 * its real set, and every copy gets the same list. */
static int application_pset(MPI_Session session, const char *pset_name, MPI_Group *newgroup) {
    int rc = MPI_SUCCESS, n = 0, *ranks = malloc(sizeof(int) * (size_t)echo.app_size);
    if (echo_is_rep()) {
        MPI_Group real, wg;
        rc = PMPI_Group_from_session_pset(session, pset_name, &real);
        if (rc == MPI_SUCCESS) {
            int size;
            PMPI_Group_size(real, &size);
            int *idx = malloc(sizeof(int) * (size_t)size), *in_world = malloc(sizeof(int) * (size_t)size);
            for (int i = 0; i < size; i++) idx[i] = i;
            PMPI_Comm_group(MPI_COMM_WORLD, &wg);
            PMPI_Group_translate_ranks(real, size, idx, wg, in_world);
            for (int app = 0; app < echo.app_size; app++) /* in application order */
                for (int i = 0; i < size; i++)
                    if (in_world[i] == echo.rep_real_rank[app]) ranks[n++] = app;
            PMPI_Group_free(&wg);
            PMPI_Group_free(&real);
            free(idx);
            free(in_world);
        }
    }
    rc = echo_forward(&n, 1, MPI_INT, rc);
    if (rc == MPI_SUCCESS) {
        echo_forward(ranks, n, MPI_INT, rc);
        MPI_Group app_world;
        echo_comm_group(echo_comm_get(MPI_COMM_WORLD, "MPI_Group_from_session_pset"), &app_world);
        rc = PMPI_Group_incl(app_world, n, ranks, newgroup);
        PMPI_Group_free(&app_world);
    }
    free(ranks);
    return rc;
}

int echo_MPI_Group_from_session_pset(MPI_Session session, const char *pset_name, MPI_Group *newgroup) {
    if (is_world(pset_name)) return echo_comm_group(echo_comm_get(MPI_COMM_WORLD, "MPI_Group_from_session_pset"),
                                                    newgroup);
    if (strcmp(pset_name, "mpi://SELF") == 0) return PMPI_Group_from_session_pset(session, pset_name, newgroup);
    return application_pset(session, pset_name, newgroup);
}

int echo_MPI_Session_get_pset_info(MPI_Session session, const char *pset_name, MPI_Info *info) {
    int rc = PMPI_Session_get_pset_info(session, pset_name, info);
    if (rc == MPI_SUCCESS && is_world(pset_name)) {
        char n[16];
        snprintf(n, sizeof n, "%d", echo.app_size);
        PMPI_Info_set(*info, "mpi_size", n);
    }
    return rc;
}
#endif
