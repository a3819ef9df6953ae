/* Dynamic processes: the job spawns two children of itself (not cloned: they
 * run natively), broadcasts to them, gathers their answers, merges, and
 * disconnects.  Children print nothing: what they computed reaches the parents. */
#include "battery.h"
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL) { /* a child */
        int me, base;
        MPI_Comm_rank(MPI_COMM_WORLD, &me);
        MPI_Bcast(&base, 1, MPI_INT, 0, parent);
        int answer = base * 10 + me;
        MPI_Gather(&answer, 1, MPI_INT, NULL, 0, MPI_INT, 0, parent);
        MPI_Comm merged;
        MPI_Intercomm_merge(parent, 1, &merged);
        int sum, one = 1;
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, merged);
        MPI_Comm_free(&merged);
        MPI_Comm_disconnect(&parent);
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm children;
    int errcodes[2];
    MPI_Comm_spawn(argv[0], MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &children, errcodes);
    int flag, r, s, rs;
    MPI_Comm_test_inter(children, &flag);
    MPI_Comm_rank(children, &r);
    MPI_Comm_size(children, &s);
    MPI_Comm_remote_size(children, &rs);
    SAY("spawned: inter %d rank %d size %d remote size %d errcodes %d %d", flag, r, s, rs, errcodes[0], errcodes[1]);
    int base = 7, answers[2] = {-1, -1};
    MPI_Bcast(&base, 1, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, children);
    MPI_Gather(NULL, 0, MPI_INT, answers, 1, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, children);
    if (rank == 0) SAY("children answered %d %d", answers[0], answers[1]);
    MPI_Comm merged;
    MPI_Intercomm_merge(children, 0, &merged);
    int sum, one = 1;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, merged);
    MPI_Comm_rank(merged, &r);
    SAY("merged rank %d, %d processes", r, sum);
    MPI_Comm_free(&merged);
    MPI_Comm_disconnect(&children);
    SAY("done");
    MPI_Finalize();
    return 0;
}
