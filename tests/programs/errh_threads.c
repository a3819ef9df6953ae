/* The application's error handlers with MPI_THREAD_MULTIPLE (mpi4py's default): MPICH holds a lock while it runs a
 * handler, which echo must not call MPI to find (a deadlock MPICH aborts on).  40 handlers are created and freed
 * (more than fit at once in echo's set of trampolines, less than MPICH's limit), then one per kind of handle is
 * raised by MPI_Comm_call_errhandler and by a failing call. */
#include "battery.h"

static int calls;

static void handler(MPI_Comm *comm, int *code, ...) {
    int cls;
    MPI_Error_class(*code, &cls);
    calls++;
    SAY("handler %d: class %d, on the dup %d", calls, cls, *comm != MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int round = 0; round < 3; round++) {
        MPI_Errhandler ehs[40];
        for (int i = 0; i < 40; i++) MPI_Comm_create_errhandler(handler, &ehs[i]);
        for (int i = 0; i < 40; i++) MPI_Errhandler_free(&ehs[i]);
    }
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(handler, &eh);
    MPI_Comm_set_errhandler(dup, eh);
    MPI_Errhandler_free(&eh);
    MPI_Comm_call_errhandler(dup, MPI_ERR_OTHER);
    /* what the call returns is left out: MPICH 5 returns MPI_SUCCESS once the handler returned, and a copy, which
     * sends nothing, returns its own check's error (docs/mpis.md) */
    int x = 0;
    MPI_Send(&x, 1, MPI_INT, size + 5, 0, dup);
    SAY("send to a rank out of range: calls %d", calls);
    MPI_Comm_free(&dup);
    SAY("done");
    MPI_Finalize();
    return 0;
}
