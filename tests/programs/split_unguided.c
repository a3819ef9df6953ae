/* MPI_COMM_TYPE_HW_UNGUIDED (MPI 4): MPI splits the world at a hardware level of its choice and writes which one
 * into the caller's info object ("mpi_hw_resource_type"); a code reads it to know what it got.  Each rank prints
 * whether the key came back and the size of its part. */
#include "battery.h"

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    MPI_Info info;
    MPI_Comm part;
    MPI_Info_create(&info);
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, 0, info, &part);
    char level[MPI_MAX_INFO_VAL + 1] = "";
    int has = 0, psize = 0;
    MPI_Info_get(info, "mpi_hw_resource_type", MPI_MAX_INFO_VAL, level, &has);
    if (part != MPI_COMM_NULL) {
        MPI_Comm_size(part, &psize);
        MPI_Comm_free(&part);
    }
    SAY("split at a level: %s (%s), part of size %d", has ? "returned" : "not returned", level, psize);
    MPI_Info_free(&info);
    MPI_Finalize();
    return 0;
}
