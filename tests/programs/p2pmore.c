/* The remaining point-to-point forms: MPI-4 Isendrecv(_replace), partitioned
 * communication restarted twice (Pready, Pready_range, Pready_list, Parrived,
 * partitions read before completion), generalized requests alone and mixed
 * with replicated and MPI_COMM_SELF requests in every Wait/Test form, sends
 * and receives across an intercommunicator, and local calls (Pcontrol, info
 * objects, the tools interface).  Lines marked "order:" depend on completion
 * order, which MPI leaves open. */
#include "battery.h"
#include <stdlib.h>
#include <string.h>

static int right, left;

static void say_status(const char *what, const MPI_Status *st) {
    int n;
    MPI_Get_count(st, MPI_INT, &n);
    SAY("%s source %d tag %d count %d", what, st->MPI_SOURCE, st->MPI_TAG, n);
}

static void sendrecv(void) {
    int out[3] = {rank, rank * 10, rank * 100}, in[3] = {-1, -1, -1};
    MPI_Request r;
    MPI_Status st;
    MPI_Isendrecv(out, 3, MPI_INT, right, 21, in, 3, MPI_INT, left, 21, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, &st);
    SAY("isendrecv got %d %d %d null %d", in[0], in[1], in[2], r == MPI_REQUEST_NULL);
    say_status("isendrecv", &st);

    int buf[2] = {rank + 1, -(rank + 1)}, flag = 0;
    MPI_Isendrecv_replace(buf, 2, MPI_INT, right, 22, MPI_ANY_SOURCE, 22, MPI_COMM_WORLD, &r);
    while (!flag) MPI_Test(&r, &flag, &st);
    SAY("isendrecv_replace got %d %d", buf[0], buf[1]);
    say_status("isendrecv_replace", &st);

    /* larger than what travels to copies in one message, completed with others */
    enum { BIG = 5000 };
    double *a = malloc(BIG * sizeof *a), *b = malloc(BIG * sizeof *b), *c = malloc(BIG * sizeof *c);
    for (int i = 0; i < BIG; i++) a[i] = rank + i * 0.25;
    MPI_Request two[2];
    MPI_Status sts[2];
    MPI_Isendrecv(a, BIG, MPI_DOUBLE, right, 23, b, BIG, MPI_DOUBLE, left, 23, MPI_COMM_WORLD, &two[0]);
    memcpy(c, a, BIG * sizeof *c);
    MPI_Isendrecv_replace(c, BIG, MPI_DOUBLE, left, 24, right, 24, MPI_COMM_WORLD, &two[1]);
    MPI_Waitall(2, two, sts);
    double sb = 0, sc = 0;
    for (int i = 0; i < BIG; i++) sb += b[i], sc += c[i];
    SAY("big isendrecv sums %.2f %.2f", sb, sc);
    say_status("big isendrecv", &sts[1]);
    free(a), free(b), free(c);
}

/* Partitioned ring: each rank sends P partitions to the right and receives from
 * the left; a persistent pair, started twice, partitions marked ready in
 * different ways, and every partition read as soon as it has arrived. */
static void partitioned(int count) {
    enum { P = 4 };
    int *out = malloc(sizeof(int) * P * (size_t)count), *in = malloc(sizeof(int) * P * (size_t)count);
    MPI_Request req[2];
    MPI_Precv_init(in, P, count, MPI_INT, left, 31, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]);
    MPI_Psend_init(out, P, count, MPI_INT, right, 31, MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]);
    for (int it = 0; it < 2; it++) {
        for (int i = 0; i < P * count; i++) in[i] = -1;
        if (it == 0) MPI_Startall(2, req);
        else MPI_Start(&req[0]), MPI_Start(&req[1]);
        for (int p = P - 1; p >= 0; p--) {
            for (int k = 0; k < count; k++) out[p * count + k] = rank * 1000 + it * 100 + p * 10 + k % 10;
            if (it == 0) MPI_Pready(p, req[1]);
        }
        if (it == 1) {
            int list[P / 2];
            for (int i = 0; i < P / 2; i++) list[i] = P - 1 - i;
            MPI_Pready_range(0, P / 2 - 1, req[1]);
            MPI_Pready_list(P / 2, list, req[1]);
        }
        long early = 0;
        for (int p = 0; p < P; p++) {
            int arrived = 0;
            while (!arrived) MPI_Parrived(req[0], p, &arrived);
            for (int k = 0; k < count; k++) early += in[p * count + k];
        }
        MPI_Status sts[2];
        MPI_Waitall(2, req, sts);
        long total = 0;
        for (int i = 0; i < P * count; i++) total += in[i];
        SAY("partitioned %d round %d: read on arrival %ld, at completion %ld, first %d last %d", count, it, early,
            total, in[0], in[P * count - 1]);
        say_status("partitioned", &sts[0]);
        int flag = 0;
        MPI_Parrived(req[0], 0, &flag); /* inactive again: true */
        SAY("parrived inactive %d", flag);
    }
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);
    free(out), free(in);
}

/* ---- generalized requests: completed by the program itself ---- */

typedef struct { int id, queried, freed; } greq_state;

static int query(void *extra, MPI_Status *st) {
    greq_state *g = extra;
    g->queried++;
    MPI_Status_set_elements(st, MPI_INT, g->id);
    MPI_Status_set_cancelled(st, 0);
    st->MPI_SOURCE = 50 + g->id;
    st->MPI_TAG = 60 + g->id;
    return MPI_SUCCESS;
}
static int gfree(void *extra) {
    ((greq_state *)extra)->freed++;
    return MPI_SUCCESS;
}
static int gcancel(void *extra, int complete) {
    (void)extra, (void)complete;
    return MPI_SUCCESS;
}

static void generalized(void) {
    greq_state g = {3, 0, 0};
    MPI_Request r;
    MPI_Status st;
    int flag = -1;
    MPI_Grequest_start(query, gfree, gcancel, &g, &r);
    MPI_Test(&r, &flag, &st);
    SAY("grequest before completion flag %d", flag);
    MPI_Grequest_complete(r);
    MPI_Wait(&r, &st);
    say_status("grequest", &st);
    SAY("grequest queried %d freed %d null %d", g.queried, g.freed, r == MPI_REQUEST_NULL);
}

/* one of everything: a generalized request, a replicated receive and send, a
 * receive and send on MPI_COMM_SELF */
typedef struct {
    greq_state g;
    int in, out, self_in, self_out;
    MPI_Request r[5];
} mix_t;

static void mix_start(mix_t *m, int tag, int complete_greq) {
    m->g = (greq_state){4, 0, 0};
    m->in = m->self_in = -1;
    m->out = rank * 3 + tag;
    m->self_out = rank * 5 + tag;
    MPI_Grequest_start(query, gfree, gcancel, &m->g, &m->r[0]);
    if (complete_greq) MPI_Grequest_complete(m->r[0]);
    MPI_Irecv(&m->in, 1, MPI_INT, left, tag, MPI_COMM_WORLD, &m->r[1]);
    MPI_Isend(&m->out, 1, MPI_INT, right, tag, MPI_COMM_WORLD, &m->r[2]);
    MPI_Irecv(&m->self_in, 1, MPI_INT, 0, tag, MPI_COMM_SELF, &m->r[3]);
    MPI_Isend(&m->self_out, 1, MPI_INT, 0, tag, MPI_COMM_SELF, &m->r[4]);
}

static void mix_report(const char *what, mix_t *m, MPI_Status *sts) {
    SAY("%s in %d self %d queried %d freed %d", what, m->in, m->self_in, m->g.queried, m->g.freed);
    say_status(what, &sts[0]);
    say_status(what, &sts[1]);
    say_status(what, &sts[3]);
    for (int i = 0; i < 5; i++)
        if (m->r[i] != MPI_REQUEST_NULL) SAY("%s request %d left", what, i);
}

static void mixes(void) {
    mix_t m;
    MPI_Status sts[5];

    mix_start(&m, 41, 1);
    SAY("waitall mix rc %d", MPI_Waitall(5, m.r, sts));
    mix_report("waitall mix", &m, sts);

    /* the program completes its generalized request only after some polls: the
     * others may complete first, and Testall must wait for all */
    mix_start(&m, 42, 0);
    int flag = 0, polls = 0, completed_at = -1;
    while (!flag) {
        MPI_Testall(5, m.r, &flag, sts);
        if (flag) break;
        if (++polls == 3) MPI_Grequest_complete(m.r[0]), completed_at = polls;
    }
    SAY("testall mix done after completing the grequest %d", completed_at == 3 && polls >= 3);
    mix_report("testall mix", &m, sts);

    mix_start(&m, 43, 1);
    printf("r%d: order: waitany mix", rank);
    for (int k = 0; k < 5; k++) {
        int idx;
        MPI_Waitany(5, m.r, &idx, &sts[0]);
        printf(" %d", idx);
        if (idx == 0 && sts[0].MPI_SOURCE != 54) printf(" BAD");
    }
    printf("\n");
    SAY("waitany mix in %d self %d queried %d freed %d", m.in, m.self_in, m.g.queried, m.g.freed);

    mix_start(&m, 44, 0);
    int left_ = 5, got[5] = {0}, idx[5];
    polls = 0;
    printf("r%d: order: testsome mix", rank);
    while (left_ > 0) {
        int outc;
        MPI_Testsome(5, m.r, &outc, idx, sts);
        for (int k = 0; k < outc; k++) printf(" %d", idx[k]), got[idx[k]]++;
        left_ -= outc;
        if (++polls == 2) MPI_Grequest_complete(m.r[0]);
    }
    printf("\n");
    SAY("testsome mix each once %d in %d self %d queried %d", got[0] + got[1] + got[2] + got[3] + got[4] == 5,
        m.in, m.self_in, m.g.queried);

    mix_start(&m, 45, 1);
    left_ = 5;
    printf("r%d: order: waitsome mix", rank);
    while (left_ > 0) {
        int outc;
        MPI_Waitsome(5, m.r, &outc, idx, MPI_STATUSES_IGNORE);
        for (int k = 0; k < outc; k++) printf(" %d", idx[k]);
        left_ -= outc;
    }
    printf("\n");
    SAY("waitsome mix in %d self %d", m.in, m.self_in);

    mix_start(&m, 46, 0);
    polls = 0;
    int done = 0;
    printf("r%d: order: testany mix", rank);
    while (done < 5) {
        int i;
        MPI_Testany(5, m.r, &i, &flag, &sts[0]);
        if (flag && i != MPI_UNDEFINED) printf(" %d", i), done++;
        if (++polls == 4) MPI_Grequest_complete(m.r[0]);
    }
    printf("\n");
    SAY("testany mix in %d self %d queried %d", m.in, m.self_in, m.g.queried);

    /* persistent replicated and MPI_COMM_SELF requests started together */
    int pin = -1, pout = rank, sin = -1, sout = rank + 7;
    MPI_Request p[4];
    MPI_Recv_init(&pin, 1, MPI_INT, left, 47, MPI_COMM_WORLD, &p[0]);
    MPI_Send_init(&pout, 1, MPI_INT, right, 47, MPI_COMM_WORLD, &p[1]);
    MPI_Recv_init(&sin, 1, MPI_INT, 0, 47, MPI_COMM_SELF, &p[2]);
    MPI_Send_init(&sout, 1, MPI_INT, 0, 47, MPI_COMM_SELF, &p[3]);
    long acc = 0;
    for (int it = 0; it < 2; it++) {
        pout = rank + it;
        sout = rank + 7 + it;
        MPI_Startall(4, p);
        MPI_Waitall(4, p, MPI_STATUSES_IGNORE);
        acc += pin * 10 + sin;
    }
    for (int i = 0; i < 4; i++) MPI_Request_free(&p[i]);
    SAY("persistent mix %ld", acc);
}

/* Nonblocking point-to-point across an intercommunicator whose groups differ
 * in size (the last rank alone against the others): peers are ranks of the
 * remote group */
static void intercomm(void) {
    if (size < 2) return;
    int alone = rank == size - 1;
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, alone, rank, &local);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, alone ? 0 : size - 1, 51, &inter);
    int remote, lrank, v = rank * 11;
    MPI_Comm_remote_size(inter, &remote);
    MPI_Comm_rank(inter, &lrank);
    long sum = 0;
    if (alone) {
        int *got = malloc(sizeof(int) * (size_t)remote);
        MPI_Request *r = malloc(sizeof *r * 2 * (size_t)remote);
        for (int i = 0; i < remote; i++) {
            MPI_Isend(&v, 1, MPI_INT, i, 52, inter, &r[i]);
            MPI_Irecv(&got[i], 1, MPI_INT, i, 53, inter, &r[remote + i]);
        }
        MPI_Waitall(2 * remote, r, MPI_STATUSES_IGNORE);
        for (int i = 0; i < remote; i++) sum += got[i];
        free(r), free(got);
    } else {
        int got = -1;
        MPI_Request r[2];
        MPI_Irecv(&got, 1, MPI_INT, 0, 52, inter, &r[0]);
        MPI_Isend(&v, 1, MPI_INT, 0, 53, inter, &r[1]);
        MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        sum = got;
    }
    SAY("intercomm remote size %d rank %d got %ld", remote, lrank, sum);
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
}

/* calls that involve no other process pass through on every copy */
static void local_calls(void) {
    MPI_Pcontrol(1);
    MPI_Pcontrol(0);
    MPI_Info info, dup;
    char value[64];
    int flag = 0, nkeys = 0;
    MPI_Info_create(&info);
    MPI_Info_set(info, "echo_color", "blue");
    MPI_Info_dup(info, &dup);
    MPI_Info_get_nkeys(dup, &nkeys);
    int len = sizeof value;
    MPI_Info_get_string(dup, "echo_color", &len, value, &flag);
    SAY("info keys %d flag %d value %s", nkeys, flag, value);
    MPI_Comm_set_info(MPI_COMM_WORLD, info);
    MPI_Info got;
    SAY("comm info rc %d", MPI_Comm_get_info(MPI_COMM_WORLD, &got));
    MPI_Info_free(&got);
    MPI_Info_free(&dup);
    MPI_Info_free(&info);
    int provided, ncvar = 0, npvar = 0;
    SAY("mpi_t init rc %d", MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    MPI_T_cvar_get_num(&ncvar);
    MPI_T_pvar_get_num(&npvar);
    SAY("mpi_t has cvars %d pvars %d", ncvar > 0, npvar >= 0);
    SAY("mpi_t finalize rc %d", MPI_T_finalize());
}

int main(int argc, char **argv) {
    battery_init(&argc, &argv);
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    sendrecv();
    partitioned(3);
    partitioned(1000); /* partitions of 4000 bytes: completion forwards more than one message holds */
    generalized();
    mixes();
    intercomm();
    local_calls();
    MPI_Barrier(MPI_COMM_WORLD);
    SAY("done");
    MPI_Finalize();
    return 0;
}
