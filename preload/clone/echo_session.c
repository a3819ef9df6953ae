/* The sessions model (MPI-4) under cloning.
 *
 * Each process's session is its own (init, finalize, info, errhandlers and the
 * list of process sets pass through), but the process set "mpi://WORLD" means
 * the application's N ranks, not the job's P processes: its group is the
 * application's world group (a copy stands in its representative's place) and
 * its "mpi_size" is N.  Communicators made from such groups are created by the
 * representatives (MPI_Comm_create_from_group, echo_comm_new.c).
 *
 * A program that never calls MPI_Init still needs echo's worlds: core/echo_init_comm.c makes them at its first
 * MPI_Session_init, in every mode. */
#include "echo_clone.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The application's world group.  A representative's is its real world's members taken from the session's own
 * mpi://WORLD, so that what MPI makes of it belongs to the session as natively: a communicator created from it
 * buffers its MPI_Bsend in the session's buffer (MPI-4.1's MPI_Session_attach_buffer), which MPI gives no
 * communicator of the world model.  A copy's is its stand-in's (it sends nothing); so is a restarted Reinit
 * world's, whose processes are not all in the session's. */
static int world_group(MPI_Session session, MPI_Group *newgroup) {
    echo_comm_t *w = echo_comm_get(MPI_COMM_WORLD, "MPI_Group_from_session_pset");
    if (!echo_is_rep() || echo.reinit) return echo_comm_group(w, newgroup);
    MPI_Group all, real;
    int rc = PMPI_Group_from_session_pset(session, "mpi://WORLD", &all);
    if (rc != MPI_SUCCESS) return rc;
    PMPI_Comm_group(w->real, &real);
    int n = 0;
    PMPI_Group_size(real, &n);
    int *idx = malloc(sizeof(int) * (size_t)n), *in_all = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) idx[i] = i;
    rc = PMPI_Group_translate_ranks(real, n, idx, all, in_all);
    if (rc == MPI_SUCCESS) rc = PMPI_Group_incl(all, n, in_all, newgroup);
    PMPI_Group_free(&real);
    PMPI_Group_free(&all);
    free(idx);
    free(in_all);
    return rc;
}

int echo_MPI_Group_from_session_pset(MPI_Session session, const char *pset_name, MPI_Group *newgroup) {
    if (is_world(pset_name)) return world_group(session, newgroup);
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
