/* A program that misuses MPI on purpose, with MPI_ERRORS_RETURN on
 * MPI_COMM_WORLD: every call below is wrong, and the program prints the error
 * class MPI returned.  Under echo each copy must print what a native run
 * prints: the same class, no crash inside echo.  The program then goes on with
 * correct communication, which must still work after the errors. */
#include "battery.h"
#include <stdlib.h>

static int handled;
static void on_error(MPI_Comm *comm, int *code, ...) {
    (void)comm, (void)code;
    handled++;
}

static void report(const char *what, int rc) {
    int cls = rc;
    if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
    SAY("%s class %d", what, cls);
}

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int x[4] = {rank, rank + 1, rank + 2, rank + 3}, y[4] = {-1, -1, -1, -1};
    MPI_Request req;
    MPI_Status st;

    /* a negative count */
    report("send count -1", MPI_Send(x, -1, MPI_INT, right, 1, MPI_COMM_WORLD));
    report("recv count -1", MPI_Recv(y, -1, MPI_INT, left, 1, MPI_COMM_WORLD, &st));
    report("isend count -1", MPI_Isend(x, -1, MPI_INT, right, 1, MPI_COMM_WORLD, &req));
    report("irecv count -1", MPI_Irecv(y, -1, MPI_INT, left, 1, MPI_COMM_WORLD, &req));
    report("bcast count -1", MPI_Bcast(x, -1, MPI_INT, 0, MPI_COMM_WORLD));
    report("allreduce count -1", MPI_Allreduce(x, y, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));

    /* a rank that is not in the communicator */
    report("send rank size", MPI_Send(x, 1, MPI_INT, size, 1, MPI_COMM_WORLD));
    report("send rank any", MPI_Send(x, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD));
    report("recv rank size+1", MPI_Recv(y, 1, MPI_INT, size + 1, 1, MPI_COMM_WORLD, &st));
    report("irecv rank -7", MPI_Irecv(y, 1, MPI_INT, -7, 1, MPI_COMM_WORLD, &req));
    report("ssend_init rank size", MPI_Ssend_init(x, 1, MPI_INT, size, 1, MPI_COMM_WORLD, &req));
    report("isendrecv rank size", MPI_Isendrecv(x, 1, MPI_INT, size, 1, y, 1, MPI_INT, left, 1, MPI_COMM_WORLD, &req));

    /* an invalid tag */
    report("send tag -5", MPI_Send(x, 1, MPI_INT, right, -5, MPI_COMM_WORLD));
    report("send tag any", MPI_Send(x, 1, MPI_INT, right, MPI_ANY_TAG, MPI_COMM_WORLD));
    report("recv tag -5", MPI_Recv(y, 1, MPI_INT, left, -5, MPI_COMM_WORLD, &st));
    report("issend tag -5", MPI_Issend(x, 1, MPI_INT, right, -5, MPI_COMM_WORLD, &req));
    report("isendrecv_replace tag -5",
           MPI_Isendrecv_replace(x, 1, MPI_INT, right, 1, left, -5, MPI_COMM_WORLD, &req));

    /* MPI_COMM_NULL, and a communicator freed before use (the variable holds MPI_COMM_NULL) */
    report("send comm null", MPI_Send(x, 1, MPI_INT, right, 1, MPI_COMM_NULL));
    report("barrier comm null", MPI_Barrier(MPI_COMM_NULL));
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_free(&dup);
    report("freed send", MPI_Send(x, 1, MPI_INT, right, 1, dup));
    report("freed irecv", MPI_Irecv(y, 1, MPI_INT, left, 1, dup, &req));
    report("freed allreduce", MPI_Allreduce(x, y, 1, MPI_INT, MPI_SUM, dup));
    report("freed free", MPI_Comm_free(&dup));

    /* an invalid datatype: MPI_DATATYPE_NULL, and a derived type never committed */
    MPI_Datatype raw;
    MPI_Type_contiguous(2, MPI_INT, &raw);
    report("send type null", MPI_Send(x, 1, MPI_DATATYPE_NULL, right, 1, MPI_COMM_WORLD));
    report("send type uncommitted", MPI_Send(x, 1, raw, right, 1, MPI_COMM_WORLD));
    report("recv type null", MPI_Recv(y, 1, MPI_DATATYPE_NULL, left, 1, MPI_COMM_WORLD, &st));
    report("recv type uncommitted", MPI_Recv(y, 1, raw, left, 1, MPI_COMM_WORLD, &st));
    report("irecv type null", MPI_Irecv(y, 1, MPI_DATATYPE_NULL, left, 1, MPI_COMM_WORLD, &req));
    report("bcast type null", MPI_Bcast(x, 1, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD));
    report("allreduce type uncommitted", MPI_Allreduce(x, y, 1, raw, MPI_SUM, MPI_COMM_WORLD));
    report("allreduce op null", MPI_Allreduce(x, y, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD));
    MPI_Type_free(&raw);

    /* an invalid root in a collective */
    report("bcast root size", MPI_Bcast(x, 1, MPI_INT, size, MPI_COMM_WORLD));
    report("reduce root -3", MPI_Reduce(x, y, 1, MPI_INT, MPI_SUM, -3, MPI_COMM_WORLD));
    report("gather root size", MPI_Gather(x, 1, MPI_INT, y, 1, MPI_INT, size, MPI_COMM_WORLD));

    /* a message longer than the receive buffer: the buffer holds its first part */
    int big[4] = {rank * 10, rank * 10 + 1, rank * 10 + 2, rank * 10 + 3}, small[2] = {-1, -1};
    MPI_Request sreq;
    MPI_Isend(big, 4, MPI_INT, right, 9, MPI_COMM_WORLD, &sreq);
    report("recv truncated", MPI_Recv(small, 2, MPI_INT, left, 9, MPI_COMM_WORLD, &st));
    SAY("truncated got %d %d from %d tag %d", small[0], small[1], st.MPI_SOURCE, st.MPI_TAG);
    MPI_Wait(&sreq, MPI_STATUS_IGNORE);
    MPI_Isend(big, 4, MPI_INT, right, 10, MPI_COMM_WORLD, &sreq);
    MPI_Irecv(small, 2, MPI_INT, left, 10, MPI_COMM_WORLD, &req);
    report("wait truncated", MPI_Wait(&req, &st));
    SAY("truncated irecv got %d %d", small[0], small[1]);
    MPI_Wait(&sreq, MPI_STATUS_IGNORE);

    /* completing a null request and an inactive persistent one: an empty status */
    int count = -1, flag = 0;
    req = MPI_REQUEST_NULL;
    report("wait null", MPI_Wait(&req, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    SAY("null status source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, count);
    report("test null", MPI_Test(&req, &flag, &st));
    SAY("test null flag %d", flag);
    MPI_Recv_init(y, 1, MPI_INT, left, 11, MPI_COMM_WORLD, &req);
    report("wait inactive", MPI_Wait(&req, &st));
    MPI_Get_count(&st, MPI_INT, &count);
    SAY("inactive status source %d tag %d count %d null %d", st.MPI_SOURCE, st.MPI_TAG, count,
        req == MPI_REQUEST_NULL);
    MPI_Request two[2] = {MPI_REQUEST_NULL, req};
    MPI_Status sts[2];
    report("waitall null inactive", MPI_Waitall(2, two, sts));
    SAY("waitall statuses %d %d", sts[0].MPI_SOURCE, sts[1].MPI_TAG);
    MPI_Request_free(&req);

    /* a communicator made from MPI_COMM_WORLD has its error handler; an error
     * handler of the program's own runs once per error */
    MPI_Comm inherit, own;
    MPI_Comm_dup(MPI_COMM_WORLD, &inherit);
    report("inherited send count -1", MPI_Send(x, -1, MPI_INT, right, 1, inherit));
    report("inherited recv rank size", MPI_Recv(y, 1, MPI_INT, size, 1, inherit, &st));
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(on_error, &eh);
    MPI_Comm_dup(MPI_COMM_WORLD, &own);
    MPI_Comm_set_errhandler(own, eh);
    report("handled send tag -5", MPI_Send(x, 1, MPI_INT, right, -5, own));
    report("handled isend count -1", MPI_Isend(x, -1, MPI_INT, right, 1, own, &req));
    report("handled recv rank size", MPI_Recv(y, 1, MPI_INT, size, 1, own, &st));
    report("handled bcast root size", MPI_Bcast(x, 1, MPI_INT, size, own));
    SAY("own error handler ran %d times", handled);
    MPI_Errhandler_free(&eh);
    MPI_Comm_free(&own);
    MPI_Comm_free(&inherit);

    /* after all that, correct communication still works */
    int token = -1;
    MPI_Sendrecv(&rank, 1, MPI_INT, right, 12, &token, 1, MPI_INT, left, 12, MPI_COMM_WORLD, &st);
    int sum = 0;
    MPI_Allreduce(&token, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    SAY("after the errors: token %d sum %d", token, sum);
    SAY("done");
    MPI_Finalize();
    return 0;
}
