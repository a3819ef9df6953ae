/* One-sided halo exchange the way a solver writes it: each rank exposes its array with MPI_Win_create (an info
 * key saying it takes no locks), puts its edge values into its neighbours' halos between fences, and checks the
 * window's attributes (base and flavor) against its array; then a dynamic window with an attached buffer that a
 * neighbour reads after learning its address.  Every line starts "r<rank>: ". */
#include <mpi.h>
#include <stdio.h>

enum { N = 8 };

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    double u[N + 2];
    for (int i = 0; i < N + 2; i++) u[i] = i == 0 || i == N + 1 ? -1.0 : rank * 100.0 + i;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "no_locks", "true");
    MPI_Win win;
    MPI_Win_create(u, sizeof u, sizeof(double), info, MPI_COMM_WORLD, &win);
    MPI_Info_free(&info);
    void *base;
    int *flavor, flag;
    MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    printf("r%d: window on my array %s, flavor create %s\n", rank, base == (void *)u ? "yes" : "no",
           *flavor == MPI_WIN_FLAVOR_CREATE ? "yes" : "no");
    for (int step = 0; step < 3; step++) {
        MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
        MPI_Put(&u[N], 1, MPI_DOUBLE, right, 0, 1, MPI_DOUBLE, win);
        MPI_Put(&u[1], 1, MPI_DOUBLE, left, N + 1, 1, MPI_DOUBLE, win);
        MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
        for (int i = 1; i <= N; i++) u[i] += 0.5 * (u[i - 1] + u[i + 1]) * 0.01;
        printf("r%d: step %d halos %.3f %.3f\n", rank, step, u[0], u[N + 1]);
    }
    MPI_Win_free(&win);

    MPI_Win dyn;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dyn);
    int shared[4] = {rank, rank * 2, rank * 3, rank * 4}, got[4] = {0};
    MPI_Win_attach(dyn, shared, sizeof shared);
    MPI_Aint mine, theirs;
    MPI_Get_address(shared, &mine);
    MPI_Sendrecv(&mine, 1, MPI_AINT, left, 0, &theirs, 1, MPI_AINT, right, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Win_lock(MPI_LOCK_SHARED, right, 0, dyn);
    MPI_Get(got, 4, MPI_INT, right, theirs, 4, MPI_INT, dyn);
    MPI_Win_unlock(right, dyn);
    MPI_Win_get_attr(dyn, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    printf("r%d: dynamic %s, right's values %d %d %d %d\n", rank, *flavor == MPI_WIN_FLAVOR_DYNAMIC ? "yes" : "no",
           got[0], got[1], got[2], got[3]);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_detach(dyn, shared);
    MPI_Win_free(&dyn);
    printf("r%d: done\n", rank);
    MPI_Finalize();
    return 0;
}
