/* Attribute keyvals freed while in use, as MPICH's attr/fkeyval and
 * fkeyvalcomm do: a freed keyval's copy and delete callbacks still run for
 * the attributes that use it; once they are gone, so is the keyval, and later
 * duplications must not trip over it.  The callbacks ask their rank in
 * MPI_COMM_WORLD and in the communicator, as attr/attrt and attric do. */
#include "battery.h"

static int copy_saw = -1, delete_saw = -1, delete_rank_in = -1;

static int copy_fn(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag) {
    (void)comm, (void)keyval, (void)extra;
    MPI_Comm_rank(MPI_COMM_WORLD, &copy_saw);
    *(void **)out = in;
    *(int *)in += 1; /* counts the attribute's holders */
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm comm, int keyval, void *value, void *extra) {
    (void)keyval, (void)extra;
    MPI_Comm_rank(MPI_COMM_WORLD, &delete_saw);
    MPI_Comm_rank(comm, &delete_rank_in);
    *(int *)value -= 1;
    return MPI_SUCCESS;
}

/* one round on `comm`: its attribute's keyval freed at once, 32 other keyvals made meanwhile */
static void round_on(MPI_Comm comm, const char *name, int own) {
    int holders = 1, keyval, saved, others[32];
    MPI_Comm_create_keyval(copy_fn, delete_fn, &keyval, NULL);
    saved = keyval;
    MPI_Comm_set_attr(comm, keyval, &holders);
    MPI_Comm_free_keyval(&keyval);
    for (int i = 0; i < 32; i++) MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &others[i], NULL);
    MPI_Comm dup;
    MPI_Comm_dup(comm, &dup);
    int after_dup = holders, dup_size;
    MPI_Comm_size(dup, &dup_size);
    MPI_Comm_free(&dup);
    int after_free = holders;
    if (own) MPI_Comm_free(&comm);
    else MPI_Comm_delete_attr(comm, saved);
    SAY("%s: holders after dup %d, after its free %d, at the end %d (dup of size %d); the callbacks saw world rank "
        "%d %d, rank %d in the communicator", name, after_dup, after_free, holders, dup_size, copy_saw, delete_saw,
        delete_rank_in);
    for (int i = 0; i < 32; i++) MPI_Comm_free_keyval(&others[i]);
}

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    round_on(MPI_COMM_WORLD, "world", 0);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    round_on(comm, "a dup of world", 1);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &comm);
    round_on(comm, "a split", 1);
    round_on(MPI_COMM_WORLD, "world again", 0);
    SAY("done");
    MPI_Finalize();
    return 0;
}
