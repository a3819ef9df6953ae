/* Hardware detection after MPI_Init, as GROMACS does it (gmx::HardwareTopology::detect): hwloc loads the
 * machine's topology with its I/O devices (hwloc asks libudev about each device, and libudev checks with fstatfs
 * that /sys is sysfs), and the ranks reduce what they found: the fewest cores and processing units any rank saw.
 * Prints "rR: ..." lines.  Linked with -lhwloc (tests/conftest.py). */
#include <hwloc.h>
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    hwloc_topology_t topo;
    hwloc_topology_init(&topo);
    hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    if (hwloc_topology_load(topo) != 0) {
        printf("r%d: hwloc could not load the topology\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int found[2] = {hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE), hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU)};
    int fewest[2];
    MPI_Allreduce(found, fewest, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    printf("r%d: %d cores, %d processing units on every rank\n", rank, fewest[0], fewest[1]);
    hwloc_topology_destroy(topo);
    MPI_Finalize();
    return 0;
}
