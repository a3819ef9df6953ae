/* The sessions model (MPI-4) without MPI_Init: process sets, the group of
 * mpi://WORLD, a communicator made from it, collectives on it, finalize. */
#include "battery.h"
#include <string.h>

int main(void) {
    MPI_Session session;
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session);
    int init;
    MPI_Initialized(&init);
    int npsets, has_world = 0, has_self = 0;
    MPI_Session_get_num_psets(session, MPI_INFO_NULL, &npsets);
    for (int i = 0; i < npsets; i++) {
        char name[256];
        int len = sizeof name;
        MPI_Session_get_nth_pset(session, MPI_INFO_NULL, i, &len, name);
        has_world |= strcmp(name, "mpi://WORLD") == 0;
        has_self |= strcmp(name, "mpi://SELF") == 0;
    }
    MPI_Info info;
    MPI_Session_get_pset_info(session, "mpi://WORLD", &info);
    char value[64];
    int flag;
    MPI_Info_get_string(info, "mpi_size", &(int){sizeof value}, value, &flag);
    MPI_Info_free(&info);
    MPI_Group world;
    MPI_Group_from_session_pset(session, "mpi://WORLD", &world);
    MPI_Group_rank(world, &rank);
    MPI_Group_size(world, &size);
    SAY("initialized %d world pset %d self pset %d mpi_size %s", init, has_world, has_self, value);
    MPI_Comm comm;
    MPI_Comm_create_from_group(world, "echo.test.session", MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm);
    int r, s, sum = 0;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &s);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm);
    int token = rank;
    if (s > 1) MPI_Sendrecv_replace(&token, 1, MPI_INT, (r + 1) % s, 0, (r + s - 1) % s, 0, comm, MPI_STATUS_IGNORE);
    SAY("comm rank %d size %d sum %d token %d", r, s, sum, token);
    MPI_Group self;
    MPI_Group_from_session_pset(session, "mpi://SELF", &self);
    int ss;
    MPI_Group_size(self, &ss);
    SAY("self size %d", ss);
    MPI_Group_free(&self);
    MPI_Comm_free(&comm);
    MPI_Group_free(&world);
    MPI_Session_finalize(&session);
    SAY("done");
    return 0;
}
