/* MPI_COMM_TYPE_HW_GUIDED (MPI 4): a code asks for the ranks that share a hardware resource, named by the info
 * key "mpi_hw_resource_type".  "mpi_shared_memory" is the one value every MPI knows (the ranks of a node); with no
 * info, or without the key, MPI gives MPI_COMM_NULL, and a code that checks for it takes another path.  Each rank
 * prints what each of the three calls gave it. */
#include "battery.h"
#include <string.h>

static void guided(const char *what, MPI_Info info) {
    MPI_Comm part;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, info, &part);
    if (part == MPI_COMM_NULL) {
        SAY("%s: MPI_COMM_NULL", what);
        return;
    }
    int prank, psize;
    MPI_Comm_rank(part, &prank);
    MPI_Comm_size(part, &psize);
    SAY("%s: rank %d of %d", what, prank, psize);
    MPI_Comm_free(&part);
}

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    guided("no info", MPI_INFO_NULL);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "shmem_topo", "machine"); /* not the key HW_GUIDED reads */
    guided("without the key", info);
    MPI_Info_set(info, "mpi_hw_resource_type", "mpi_shared_memory");
    guided("shared memory", info);
    MPI_Info_free(&info);
    MPI_Finalize();
    return 0;
}
