/* A task farm whose manager collects results as they come, polling between pieces of its own work, as codes that
 * overlap communication with computation do (CP2K's DBCSR polls with MPI_Testany).  Rank 1 works the tasks,
 * largest first, and starts the next one once the manager has taken the last result.  Which process manages is
 * agreed by a random token (a UUID drawn from the kernel), as codes that tell their processes apart so do: rank 0
 * sends its token, rank 1 names the process it registered.  Natively that is always rank 0.  A copy of rank 0 draws
 * a token of its own and receives its representative's, so it takes the spare process's path: it posts one
 * receive for a task of its own and polls for it, while its representative polls four results (its path parted
 * before the poll).
 *
 * Usage: task_farm_poll testany|waitany|testsome|waitsome */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTASKS 4
#define TAG_GO_ON 100
#define TAG_SPARE 200

static double own_work(int piece) {
    double x = 0;
    for (int i = 1; i <= 20000; i++) x += 1.0 / (i + piece);
    return x;
}

/* one poll with the call named `how`: the index of a completed request, -1 if none yet, MPI_UNDEFINED if none is
 * left active */
static int poll(const char *how, int n, MPI_Request *reqs) {
    int index = -1, flag = 0, outcount = 0, indices[NTASKS];
    if (strcmp(how, "testany") == 0) {
        MPI_Testany(n, reqs, &index, &flag, MPI_STATUS_IGNORE);
        return flag ? index : -1;
    }
    if (strcmp(how, "waitany") == 0) {
        MPI_Waitany(n, reqs, &index, MPI_STATUS_IGNORE);
        return index;
    }
    if (strcmp(how, "testsome") == 0) MPI_Testsome(n, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
    else MPI_Waitsome(n, reqs, &outcount, indices, MPI_STATUSES_IGNORE);
    if (outcount == MPI_UNDEFINED) return MPI_UNDEFINED;
    return outcount > 0 ? indices[0] : -1; /* one result is in flight at a time */
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    const char *how = argc > 1 ? argv[1] : "testany";
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) MPI_Abort(MPI_COMM_WORLD, 2);
    uint64_t token = 0, manager = 0;
    FILE *random = fopen("/dev/urandom", "rb");
    if (!random || fread(&token, sizeof token, 1, random) != 1) MPI_Abort(MPI_COMM_WORLD, 1);
    fclose(random);
    double total = 0, mine = 0;
    if (rank == 0) {
        MPI_Send(&token, 1, MPI_UINT64_T, 1, 7, MPI_COMM_WORLD);
        MPI_Recv(&manager, 1, MPI_UINT64_T, 1, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int manages = manager == token;
        int nposted = manages ? NTASKS : 1;
        MPI_Request *reqs = malloc(sizeof *reqs * (size_t)nposted);
        double results[NTASKS] = {0};
        int spare_task = -1;
        if (manages)
            for (int t = 0; t < NTASKS; t++) MPI_Irecv(&results[t], 1, MPI_DOUBLE, 1, t, MPI_COMM_WORLD, &reqs[t]);
        else
            MPI_Irecv(&spare_task, 1, MPI_INT, 1, TAG_SPARE, MPI_COMM_WORLD, &reqs[0]);
        int piece = 0;
        for (int done = 0; done < nposted;) {
            int i = poll(how, nposted, reqs);
            if (i == MPI_UNDEFINED) break;
            if (i < 0) {
                mine += own_work(piece++);
                continue;
            }
            done++;
            if (manages) {
                total += results[i];
                if (done < NTASKS) MPI_Send(&done, 1, MPI_INT, 1, TAG_GO_ON, MPI_COMM_WORLD);
            }
        }
        free(reqs);
    } else {
        MPI_Recv(&manager, 1, MPI_UINT64_T, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&manager, 1, MPI_UINT64_T, 0, 8, MPI_COMM_WORLD);
        for (int t = NTASKS - 1; t >= 0; t--) {
            double result = own_work(100 * (t + 1));
            MPI_Send(&result, 1, MPI_DOUBLE, 0, t, MPI_COMM_WORLD);
            total += result;
            int go_on;
            if (t > 0) MPI_Recv(&go_on, 1, MPI_INT, 0, TAG_GO_ON, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    double both = 0;
    MPI_Allreduce(&total, &both, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("r%d: total %.12f\n", rank, both);
    (void)mine; /* the manager's own work between polls: how many pieces depends on timing */
    MPI_Finalize();
    return 0;
}
