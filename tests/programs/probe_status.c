/* Probes and receives that complete one operation leave a status's MPI_ERROR field as the application set it
 * (MPI 4.1, 3.2.5): a code may keep its own mark there.  Rank 0 sends to rank 1, which finds the messages with
 * Iprobe, Improbe and Mprobe, receives them with Mrecv and Recv, and probes MPI_PROC_NULL, printing the field
 * after each call. */
#include "battery.h"

static void say_field(const char *call, const MPI_Status *st) {
    SAY("%s: source %d tag %d error field %s", call, st->MPI_SOURCE, st->MPI_TAG,
        st->MPI_ERROR == MPI_ERR_DIMS ? "kept" : "overwritten");
}

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    int data[2] = {7, 8};
    if (rank == 0) {
        for (int tag = 1; tag <= 3; tag++) MPI_Send(data, 2, MPI_INT, 1, tag, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Status st;
        MPI_Message msg;
        int flag = 0;
        st.MPI_ERROR = MPI_ERR_DIMS;
        do MPI_Iprobe(0, 1, MPI_COMM_WORLD, &flag, &st); while (!flag);
        say_field("Iprobe", &st);
        st.MPI_ERROR = MPI_ERR_DIMS;
        MPI_Recv(data, 2, MPI_INT, 0, 1, MPI_COMM_WORLD, &st);
        say_field("Recv", &st);
        st.MPI_ERROR = MPI_ERR_DIMS;
        flag = 0;
        do MPI_Improbe(0, 2, MPI_COMM_WORLD, &flag, &msg, &st); while (!flag);
        say_field("Improbe", &st);
        st.MPI_ERROR = MPI_ERR_DIMS;
        MPI_Mrecv(data, 2, MPI_INT, &msg, &st);
        say_field("Mrecv", &st);
        st.MPI_ERROR = MPI_ERR_DIMS;
        MPI_Mprobe(0, 3, MPI_COMM_WORLD, &msg, &st);
        say_field("Mprobe", &st);
        MPI_Mrecv(data, 2, MPI_INT, &msg, MPI_STATUS_IGNORE);
        st.MPI_ERROR = MPI_ERR_DIMS;
        MPI_Improbe(MPI_PROC_NULL, 4, MPI_COMM_WORLD, &flag, &msg, &st);
        say_field("Improbe of MPI_PROC_NULL", &st);
        st.MPI_ERROR = MPI_ERR_DIMS;
        MPI_Iprobe(MPI_PROC_NULL, 4, MPI_COMM_WORLD, &flag, &st);
        say_field("Iprobe of MPI_PROC_NULL", &st);
    }
    MPI_Finalize();
    return 0;
}
