/* Attributes and keyvals (copy and delete callbacks through Comm_dup, idup and
 * dup_with_info of MPI_COMM_WORLD and of derived communicators), create_group,
 * names, and a user error handler that must run on every copy. */
#include "battery.h"
#include <stdlib.h>
#include <string.h>

static int copies_made, deletes_run;

static int copy_fn(MPI_Comm oldcomm, int keyval, void *extra, void *in, void *out, int *flag) {
    (void)oldcomm; (void)keyval;
    copies_made++;
    *(void **)out = (void *)((long)in + (long)extra); /* the copy is the value plus extra_state */
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm comm, int keyval, void *value, void *extra) {
    (void)comm; (void)keyval; (void)value; (void)extra;
    deletes_run++;
    return MPI_SUCCESS;
}

static void show(const char *what, MPI_Comm c, int kv) {
    long *v;
    int flag;
    MPI_Comm_get_attr(c, kv, &v, &flag);
    SAY("%s: attribute %s %ld", what, flag ? "set" : "unset", flag ? (long)v : 0L);
}

static void on_error(MPI_Comm *comm, int *code, ...) {
    int cls, r;
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Error_class(*code, &cls);
    MPI_Comm_rank(*comm, &r);
    MPI_Comm_get_name(*comm, name, &len);
    SAY("error handler: class %d on %s rank %d", cls, name, r);
}

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    /* create_group: the even ranks only (before any attribute: Open MPI's create_group copies them) */
    MPI_Group wg, even;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int n = (size + 1) / 2, *ranks = malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++) ranks[i] = 2 * i;
    MPI_Group_incl(wg, n, ranks, &even);
    if (rank % 2 == 0) {
        MPI_Comm ec;
        MPI_Comm_create_group(MPI_COMM_WORLD, even, 11, &ec);
        int r, s, sum = 0;
        MPI_Comm_rank(ec, &r);
        MPI_Comm_size(ec, &s);
        MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, ec);
        SAY("even group rank %d size %d sum %d", r, s, sum);
        MPI_Comm_free(&ec);
    }

    int kv, kv_nocopy;
    MPI_Comm_create_keyval(copy_fn, delete_fn, &kv, (void *)10L);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &kv_nocopy, NULL);
    MPI_Comm_set_attr(MPI_COMM_WORLD, kv, (void *)(long)(rank + 1));
    MPI_Comm_set_attr(MPI_COMM_WORLD, kv_nocopy, (void *)5L);

    MPI_Comm d1, d2, d3, d4;
    MPI_Comm_dup(MPI_COMM_WORLD, &d1);
    show("dup of world", d1, kv);
    show("dup of world, null copy", d1, kv_nocopy);
    MPI_Comm_dup(d1, &d2);
    show("dup of dup", d2, kv);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
    MPI_Comm_dup_with_info(d2, info, &d3);
    MPI_Info_free(&info);
    show("dup_with_info", d3, kv);
    MPI_Request req;
    MPI_Comm_idup(MPI_COMM_WORLD, &d4, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    show("idup of world", d4, kv);
    int r, s, sum = 0;
    MPI_Comm_rank(d4, &r);
    MPI_Comm_size(d4, &s);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, d4);
    SAY("idup rank %d size %d sum %d", r, s, sum);
    MPI_Comm_delete_attr(d2, kv);
    show("after delete", d2, kv);
    MPI_Comm split;
    MPI_Comm_split(d1, 0, -rank, &split);
    show("split (no copy)", split, kv);
    SAY("copy callbacks %d delete callbacks %d", copies_made, deletes_run);

    /* names, and a user error handler inherited by a dup */
    MPI_Comm_set_name(d1, "d1");
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Comm_get_name(d1, name, &len);
    SAY("name %s", name);
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(on_error, &eh);
    MPI_Comm_set_errhandler(d1, eh);
    MPI_Comm e;
    MPI_Comm_dup(d1, &e);
    MPI_Comm_set_name(e, "dup of d1");
    int x = 0;
    int rc = MPI_Recv(&x, 1, MPI_INT, size + 5, 0, e, MPI_STATUS_IGNORE); /* an invalid rank */
    int cls;
    MPI_Error_class(rc, &cls);
    SAY("receive from a bad rank returned class %d", cls);
    MPI_Errhandler_free(&eh);

    MPI_Comm_free(&e);
    MPI_Comm_free(&split);
    MPI_Comm_free(&d4);
    MPI_Comm_free(&d3);
    MPI_Comm_free(&d2);
    MPI_Comm_free(&d1);
    SAY("after frees: copy callbacks %d delete callbacks %d", copies_made, deletes_run);
    MPI_Comm_free_keyval(&kv);
    MPI_Comm_free_keyval(&kv_nocopy);
    MPI_Group_free(&even);
    MPI_Group_free(&wg);
    free(ranks);
    SAY("done");
    MPI_Finalize();
    return 0;
}
