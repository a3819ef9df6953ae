/* SDR mode: communicators.
 *
 * The application holds, for a communicator other than MPI_COMM_WORLD, a
 * stand-in (a dup of MPI_COMM_SELF carrying its names, attributes and error
 * handler); echo holds two real communicators of every live replica of every
 * member (application messages, collectives).  A new communicator is made in
 * two steps: the members agree on its membership through an allgather on the
 * fault-tolerant layer, then its real communicators are split from the
 * parent's, by ULFM's recipe: try, agree on the outcome, and on a failure
 * shrink the parent away from the dead and try again.  Groups the application
 * gets hold this replica's processes (replica k of each member), so group
 * calls answer as natively. */
#include "echo_sdr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int next_id = 1;
static int *host_color; /* per real rank: the first real rank on the same host */
static MPI_Comm kin;    /* this rank's replicas: they agree (ULFM) before they speak for it (group_create) */

static sdr_comm_t *comm_new(int size, int rank) {
    sdr_comm_t *c = calloc(1, sizeof *c);
    c->size = size, c->rank = rank;
    c->members = malloc(sizeof(int) * (size_t)size);
    c->index_of = malloc(sizeof(int) * (size_t)sdr.n);
    for (int a = 0; a < sdr.n; a++) c->index_of[a] = -1;
    c->real = malloc(sizeof(int) * (size_t)(size * sdr.R));
    for (int x = 0; x < size * sdr.R; x++) c->real[x] = -1;
    c->who = malloc(sizeof(int) * (size_t)(size * sdr.R));
    c->sender = malloc(sizeof(int) * (size_t)size);
    return c;
}

/* who is in chan[] (table[x] = member*R + replica of its rank x), and whom to receive each member's messages
 * from: as on every communicator (our own world's replica, or the substitute of a dead or excluded one) */
static void comm_fill(sdr_comm_t *c, const int *table, int nreal) {
    for (int x = 0; x < nreal; x++) {
        c->real[table[x]] = x;
        c->who[x] = table[x];
    }
    for (int i = 0; i < c->size; i++) {
        c->index_of[c->members[i]] = i;
        int j = sdr.from[c->members[i]];
        if (c->real[i * sdr.R + j] < 0 || sdr.dead[sdr_real_rank(c->members[i], j)])
            for (j = 0; j < sdr.R; j++)
                if (c->real[i * sdr.R + j] >= 0 && !sdr.dead[sdr_real_rank(c->members[i], j)]) break;
        c->sender[i] = j;
    }
}

static void errors_return(MPI_Comm comm) { PMPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN); }

sdr_comm_t *sdr_comm_world(void) {
    sdr_comm_t *c = comm_new(sdr.n, echo.app_rank);
    c->app = MPI_COMM_WORLD;
    c->id = 0;
    for (int i = 0; i < sdr.n; i++) c->members[i] = i;
    echo_ft_split(sdr.world, 0, echo.app_rank * sdr.R + sdr.k, &c->chan[SDR_DATA]);
    echo_ft_dup(c->chan[SDR_DATA], &c->chan[SDR_COLL]);
    echo_ft_dup(c->chan[SDR_DATA], &c->build);
    errors_return(c->chan[SDR_DATA]);
    errors_return(c->chan[SDR_COLL]);
    errors_return(c->build);
    echo_ft_split(sdr.world, echo.app_rank, sdr.k, &kin);
    errors_return(kin);
    int *table = malloc(sizeof(int) * (size_t)(sdr.n * sdr.R));
    for (int x = 0; x < sdr.n * sdr.R; x++) table[x] = x;
    comm_fill(c, table, sdr.n * sdr.R);
    free(table);
    /* for MPI_Comm_split_type: which processes share a host */
    char name[MPI_MAX_PROCESSOR_NAME] = {0};
    int len;
    PMPI_Get_processor_name(name, &len);
    char *names = malloc((size_t)(sdr.n * sdr.R) * MPI_MAX_PROCESSOR_NAME);
    PMPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, sdr.world);
    host_color = malloc(sizeof(int) * (size_t)(sdr.n * sdr.R));
    for (int w = 0; w < sdr.n * sdr.R; w++) {
        host_color[w] = w;
        for (int v = 0; v < w; v++)
            if (!strcmp(names + (size_t)v * MPI_MAX_PROCESSOR_NAME, names + (size_t)w * MPI_MAX_PROCESSOR_NAME)) {
                host_color[w] = host_color[v];
                break;
            }
    }
    free(names);
    return c;
}

/* the real communicators of the new one (its two channels and its build communicator), split from the parent's
 * build communicator: every live replica of every member of the parent takes part; ranks are member*R+replica.
 * *table: that number for each rank of the result.  Never from a channel: a failure that ends Open MPI's
 * collectives of a communicator creation midway (its context id is chosen by nonblocking allreduces over the
 * parent) seems to leave that communicator's point-to-point messages between two survivors out of order for good
 * (seen: after "NBC_Progress: an error 75" in a split over the data channel, a survivor's halo messages never
 * matched the other's posted receives, and both waited forever); a communicator that carries nothing else loses
 * nothing, and after a failed try it is replaced by a shrunk one. */
static int split_real(sdr_comm_t *p, int color, int key, MPI_Comm out[3], int **table, int *nreal) {
    MPI_Comm base = p->build;
    /* no split over a parent with a dead member (echo_ft_knows_dead says why): the live processes first agree
     * whether any of them knows one (an agreement also finds a death nobody has noticed yet, and its flag and its
     * error are the same everywhere), and if so they split a shrunk communicator from the first try.  (Seen when
     * a host's replicas died just before a split: MPI_ERR_COMM, or a SIGSEGV after NBC_Progress error 75.) */
    int none_dead = !echo_ft_knows_dead(base);
    int first = sdr_meet(base, &none_dead) == MPI_SUCCESS && none_dead ? 0 : 1;
    for (int attempt = first;; attempt++) {
        MPI_Comm shrunk = MPI_COMM_NULL;
        if (attempt > 0) { /* a process failed during the last try: leave the dead out */
            if (echo_ft_shrink(p->build, &shrunk) != MPI_SUCCESS) continue;
            base = shrunk;
            errors_return(base);
        }
        out[0] = out[1] = out[2] = MPI_COMM_NULL;
        *table = NULL;
        /* a failed split or dup leaves its output undefined (Open MPI sets a NULL handle, which MPI_Comm_free
         * reports as MPI_ERR_COMM on MPI_COMM_WORLD, fatal by default): only a success gives a communicator */
        int ok = echo_ft_split(base, color, key, &out[0]) == MPI_SUCCESS;
        if (!ok) out[0] = MPI_COMM_NULL;
        if (ok && out[0] != MPI_COMM_NULL) {
            errors_return(out[0]);
            PMPI_Comm_size(out[0], nreal);
            *table = malloc(sizeof(int) * (size_t)*nreal);
            ok = PMPI_Allgather(&key, 1, MPI_INT, *table, 1, MPI_INT, out[0]) == MPI_SUCCESS;
            for (int i = 1; i < 3 && ok; i++)
                if (echo_ft_dup(out[0], &out[i]) != MPI_SUCCESS) ok = 0, out[i] = MPI_COMM_NULL;
        }
        int rc = PMPIX_Comm_agree(base, &ok);
        if (rc == MPI_SUCCESS && ok) {
            for (int i = 1; i < 3; i++)
                if (out[i] != MPI_COMM_NULL) errors_return(out[i]);
            if (shrunk != MPI_COMM_NULL) { /* the old one may be out of order now (above): the shrunk one serves */
                PMPI_Comm_free(&p->build);
                p->build = shrunk;
            }
            return MPI_SUCCESS;
        }
        if (shrunk != MPI_COMM_NULL) PMPI_Comm_free(&shrunk);
        for (int i = 0; i < 3; i++)
            if (out[i] != MPI_COMM_NULL) PMPI_Comm_free(&out[i]);
        free(*table);
        sdr_learn_failures();
        if (attempt > 100) echo_fatal("SDR: could not create a communicator after 100 process failures");
    }
}

/* the new communicator's real ones are made: who is where, and the application's stand-in handle (with the error
 * handler of `comm`, the one it was made from) */
void sdr_comm_fill_real(sdr_comm_t *c, MPI_Comm chans[3], int *table, int nreal) {
    sdr_learn_failures(); /* a replica dead before the split is missing: receive from its substitute */
    c->chan[0] = chans[0], c->chan[1] = chans[1], c->build = chans[2];
    comm_fill(c, table, nreal);
    free(table);
}

static void stand_in(sdr_comm_t *c, MPI_Comm comm) {
    PMPI_Comm_dup(MPI_COMM_SELF, &c->app);
    MPI_Errhandler eh;
    PMPI_Comm_get_errhandler(comm, &eh);
    PMPI_Comm_set_errhandler(c->app, eh);
    PMPI_Errhandler_free(&eh);
}

sdr_comm_t *sdr_comm_copy_of(const sdr_comm_t *p, MPI_Comm comm) {
    sdr_comm_t *c = comm_new(p->size, p->rank);
    memcpy(c->members, p->members, sizeof(int) * (size_t)p->size);
    stand_in(c, comm);
    return c;
}

static void finish(sdr_comm_t *c, MPI_Comm chans[3], int *table, int nreal, MPI_Comm comm) {
    sdr_comm_fill_real(c, chans, table, nreal);
    stand_in(c, comm);
}

sdr_comm_t *sdr_comm_from_real(MPI_Comm *parent, int size, const int *members, int rank, int id, MPI_Comm comm) {
    sdr_comm_t p = {.build = *parent}, *c = comm_new(size, rank);
    memcpy(c->members, members, sizeof(int) * (size_t)size);
    c->id = id;
    MPI_Comm chans[3];
    int *table, nreal = 0;
    split_real(&p, 0, rank * sdr.R + sdr.k, chans, &table, &nreal);
    *parent = p.build; /* shrunk after a failure */
    finish(c, chans, table, nreal, comm);
    sdr_comm_add(c);
    return c;
}

int sdr_comm_next_id(void) { return next_id; }

void sdr_comm_ids_used(int last) {
    if (next_id <= last) next_id = last + 1;
}

/* Communicators are made from intracommunicators only: an intercommunicator's dup, split or create would need
 * both groups' agreement on each side's membership (not done; docs/sdr.md) */
static sdr_comm_t *intra(MPI_Comm comm, const char *call) {
    sdr_comm_t *c = sdr_comm_of(comm);
    if (c->inter) {
        char what[96];
        snprintf(what, sizeof what, "%s of an intercommunicator", call);
        echo_unsupported(what);
    }
    return c;
}

int sdr_comm_create(sdr_comm_t *p, int color, int key, MPI_Comm *newcomm, int dup) {
    sdr_idup_settle(p); /* p's duplicates still being made come first: its build communicator is theirs till then */
    int mine[3] = {color, key, next_id}, *all = malloc(sizeof(int) * 3 * (size_t)p->size);
    int rc = echo_sdr_MPI_Allgather(mine, 3, MPI_INT, all, 3, MPI_INT, p->app);
    if (rc != MPI_SUCCESS) {
        free(all);
        return rc;
    }
    int id = 0, size = 0, rank = -1;
    for (int i = 0; i < p->size; i++) {
        if (all[3 * i + 2] > id) id = all[3 * i + 2];
        if (color != MPI_UNDEFINED && all[3 * i] == color) size++;
    }
    next_id = id + 1;
    sdr_comm_t *c = NULL;
    if (color != MPI_UNDEFINED) {
        c = comm_new(size, 0);
        int n = 0;
        for (int i = 0; i < p->size; i++) /* members by (key, rank in p): insertion keeps ties in rank order */
            if (all[3 * i] == color) {
                int at = n++;
                while (at > 0 && all[3 * p->index_of[c->members[at - 1]] + 1] > all[3 * i + 1]) {
                    c->members[at] = c->members[at - 1];
                    at--;
                }
                c->members[at] = p->members[i];
            }
        for (int i = 0; i < size; i++)
            if (c->members[i] == echo.app_rank) rank = i;
        c->rank = rank;
        c->id = id;
    }
    free(all);
    MPI_Comm chans[3];
    int *table, nreal = 0;
    split_real(p, color, c ? rank * sdr.R + sdr.k : 0, chans, &table, &nreal);
    if (!c) {
        *newcomm = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    finish(c, chans, table, nreal, p->app);
    int copied = dup ? echo_comm_copy_attributes(p->app, c->app) : MPI_SUCCESS;
    if (dup) c->cart = sdr_cart_copy(p->cart);
    sdr_comm_add(c);
    *newcomm = c->app;
    /* an attribute's copy callback failed: so does the dup, with its code (MPICH's attr/attrerr) */
    if (copied != MPI_SUCCESS) echo_sdr_MPI_Comm_free(newcomm);
    return copied;
}

int echo_sdr_MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm) {
    sdr_comm_t *p = intra(comm, "MPI_Comm_dup");
    return sdr_comm_create(p, 0, p->rank, newcomm, 1);
}

int echo_sdr_MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm) {
    int rc = echo_sdr_MPI_Comm_dup(comm, newcomm);
    if (rc == MPI_SUCCESS && info != MPI_INFO_NULL) PMPI_Comm_set_info(*newcomm, info);
    return rc;
}

int echo_sdr_MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm) {
    if (color < 0 && color != MPI_UNDEFINED) return MPI_ERR_ARG;
    return sdr_comm_create(intra(comm, "MPI_Comm_split"), color, key, newcomm, 0);
}

/* Whether a hardware split stops at the host.  The one level echo knows for replicas is the host (a rank's
 * replicas may sit on different cores or hosts, so a finer level would differ between replicas):
 * MPI_COMM_TYPE_HW_GUIDED splits by host for "mpi_shared_memory", the one value every MPI must recognize, and
 * gives MPI_COMM_NULL without that key or for a level it does not support, as MPI-4 says of an unrecognized
 * value (MPICH's comm/cmsplit_type passes MPI_INFO_NULL and expects MPI_COMM_NULL: SDR split it by host);
 * MPI_COMM_TYPE_HW_UNGUIDED must give a proper subcommunicator, which the host is not when the job is on one,
 * so it gives MPI_COMM_NULL, as MPI does when no finer level is found. */
static int host_level(int split_type, MPI_Info info) {
/* MPI 4: a macro in MPICH; an enumerator in Open MPI 5, which says MPI 3.1 */
#if MPI_VERSION >= 4 || (defined(OMPI_MAJOR_VERSION) && OMPI_MAJOR_VERSION >= 5)
    if (split_type == MPI_COMM_TYPE_HW_UNGUIDED) return 0;
    if (split_type == MPI_COMM_TYPE_HW_GUIDED) {
        char value[MPI_MAX_INFO_VAL + 1] = "";
        int len = MPI_MAX_INFO_VAL, flag = 0;
        if (info != MPI_INFO_NULL) PMPI_Info_get_string(info, "mpi_hw_resource_type", &len, value, &flag);
        return flag && !strcmp(value, "mpi_shared_memory");
    }
#else
    (void)info;
#endif
    return split_type != MPI_UNDEFINED;
}

/* processes that share memory: by the host of replica 0 of each rank, so every replica splits alike */
int echo_sdr_MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm) {
    int color = host_level(split_type, info) ? host_color[sdr_real_rank(echo.app_rank, 0)] : MPI_UNDEFINED;
    return sdr_comm_create(intra(comm, "MPI_Comm_split_type"), color, key, newcomm, 0);
}

/* Each process may pass a different group, as long as the groups are disjoint (MPI-2.2): a 1 x P grid's column
 * communicators are P groups of one.  A group is named by its first member, so processes that passed the same
 * group split together and the others apart; its ranks keep the group's order. */
int echo_sdr_MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm) {
    int rank, first = 0, real;
    int rc = PMPI_Group_rank(group, &rank);
    if (rc != MPI_SUCCESS) return rc;
    if (rank != MPI_UNDEFINED) { /* the group holds our world's processes (echo_sdr_MPI_Comm_group) */
        MPI_Group world;
        PMPI_Comm_group(MPI_COMM_WORLD, &world);
        rc = PMPI_Group_translate_ranks(group, 1, &first, world, &real);
        PMPI_Group_free(&world);
        if (rc != MPI_SUCCESS) return rc;
    }
    return sdr_comm_create(intra(comm, "MPI_Comm_create"), rank == MPI_UNDEFINED ? MPI_UNDEFINED : real % sdr.n, rank, newcomm, 0);
}

/* ---- a communicator of part of a communicator, made by its members only (MPI_Comm_create_group,
 * MPI_Comm_create_from_group) ----
 * No communicator of exactly the group's live replicas exists to agree over, so the decisions go through the group's
 * leader (its first member) on the replicated layer, which survives a death: each rank's replicas first agree among
 * themselves (ULFM, over `kin`) on what their rank says, so every replica of a rank sends the same, and every replica
 * of every member gets the same answer.  Per try: the leader's replicas agree on which of the group's processes are
 * alive (a process is left out if any of them knows it dead) and send that list with the communicator's id; every
 * live replica of every member makes the real communicator of the list with MPI_Comm_create_from_group (no parent:
 * echo_sdr_inter.c says why); each rank agrees on its outcome, the leader gathers them and sends the verdict; on a
 * failure all try again with what they learned.  Then the channels are split from it as for any communicator. */
enum { GROUP_TAG = 0x40000000, MASK_BITS = 30 }; /* above the collectives' tags (echo_sdr_sched.c) */

static void spin_send(sdr_comm_t *p, const int *buf, int n, int member, int tag) {
    sdr_send_t *s = sdr_send_start(p, SDR_COLL, buf, n, MPI_INT, p->index_of[member], tag, 0, 1);
    int spins = 0;
    while (!sdr_send_done(s)) sdr_spin(&spins);
    sdr_send_free(s);
}

static void spin_recv(sdr_comm_t *p, int *buf, int n, int member, int tag) {
    sdr_recv_t *r = sdr_recv_start(p, SDR_COLL, buf, n, MPI_INT, p->index_of[member], tag);
    int spins = 0;
    while (!sdr_recv_done(r, MPI_STATUS_IGNORE)) sdr_spin(&spins);
    if (sdr_recv_error(r) != MPI_SUCCESS) echo_fatal("SDR: a group creation's message was lost");
    sdr_recv_free(r);
}

/* this rank's live replicas agree on *flag's bits (AND): the same everywhere after it.  ULFM's agreement fails, at
 * all of them alike, while a member of kin is dead (acknowledged or not): kin is shrunk then and they agree again. */
static void kin_agree(int *flag) {
    for (int attempt = 0; attempt < 100; attempt++) {
        int f = *flag;
        if (sdr_meet(kin, &f) == MPI_SUCCESS) {
            *flag = f;
            return;
        }
        MPI_Comm shrunk;
        if (echo_ft_shrink(kin, &shrunk) == MPI_SUCCESS) {
            PMPI_Comm_free(&kin);
            kin = shrunk;
            errors_return(kin);
        }
    }
    echo_fatal("SDR: this rank's replicas could not agree after 100 process failures");
}

/* the leader's (or a member's) value reaches every member: gathered with AND (or MAX) by the leader, sent back */
static int group_reduce(sdr_comm_t *p, const int *members, int m, int g, int value, int max, int tag) {
    if (g == 0) {
        for (int i = 1; i < m; i++) {
            int v;
            spin_recv(p, &v, 1, members[i], tag);
            value = max ? (v > value ? v : value) : value && v;
        }
        for (int i = 1; i < m; i++) spin_send(p, &value, 1, members[i], tag);
    } else {
        spin_send(p, &value, 1, members[0], tag);
        spin_recv(p, &value, 1, members[0], tag);
    }
    return value;
}

static sdr_comm_t *group_create(sdr_comm_t *p, const int *members, int m, int g, int tag) {
    tag = GROUP_TAG | (tag & (GROUP_TAG - 1));
    int id = group_reduce(p, members, m, g, next_id, 1, tag), nproc = m * sdr.R, words = (nproc + MASK_BITS - 1) / MASK_BITS;
    int *alive = malloc(sizeof(int) * (size_t)words), *ranks = malloc(sizeof(int) * (size_t)nproc);
    MPI_Comm real = MPI_COMM_NULL;
    for (int attempt = 0;; attempt++) {
        if (attempt > 100) echo_fatal("SDR: could not create a group's communicator after 100 process failures");
        if (g == 0) { /* which of the group's processes are alive: the leader's replicas agree, and tell the others */
            sdr_learn_failures();
            for (int w = 0; w < words; w++) {
                alive[w] = 0;
                for (int b = 0; b < MASK_BITS && w * MASK_BITS + b < nproc; b++) {
                    int x = w * MASK_BITS + b;
                    if (!sdr.dead[sdr_real_rank(members[x / sdr.R], x % sdr.R)]) alive[w] |= 1 << b;
                }
                kin_agree(&alive[w]);
            }
            for (int i = 1; i < m; i++) spin_send(p, alive, words, members[i], tag);
        } else
            spin_recv(p, alive, words, members[0], tag);
        int n = 0, ok = 1;
        sdr_learn_failures();
        for (int x = 0; x < nproc; x++)
            if (alive[x / MASK_BITS] >> (x % MASK_BITS) & 1) {
                ranks[n] = sdr_real_rank(members[x / sdr.R], x % sdr.R);
                if (sdr.dead[ranks[n++]]) ok = 0; /* known dead by now: not made (docs/sdr.md), tried again */
            }
        if (!(alive[(g * sdr.R + sdr.k) / MASK_BITS] >> ((g * sdr.R + sdr.k) % MASK_BITS) & 1)) ok = 0;
        real = MPI_COMM_NULL;
        if (ok) {
            MPI_Group world, group;
            PMPI_Comm_group(sdr.world, &world);
            PMPI_Group_incl(world, n, ranks, &group);
            char name[80];
            snprintf(name, sizeof name, "echo-sdr-group-%d-%d-%d", id, members[0], attempt);
            sdr_control_flush(); /* the last message's acks leave first: this call makes no progress while it waits */
            ok = PMPI_Comm_create_from_group(group, name, MPI_INFO_NULL, MPI_ERRORS_RETURN, &real) == MPI_SUCCESS;
            if (!ok) real = MPI_COMM_NULL;
            PMPI_Group_free(&group);
            PMPI_Group_free(&world);
        }
        kin_agree(&ok);
        ok = group_reduce(p, members, m, g, ok, 0, tag);
        if (getenv("ECHO_SDR_DEBUG"))
            fprintf(stderr, "[sdr %d] group communicator try %d: %d processes: %s\n", echo.real_rank, attempt, n,
                    ok ? "made" : "failed");
        if (ok) break;
        if (real != MPI_COMM_NULL) PMPI_Comm_free(&real);
    }
    free(alive);
    free(ranks);
    if (next_id <= id) next_id = id + 1;
    sdr_comm_t *c = sdr_comm_from_real(&real, m, members, g, id, p->app);
    PMPI_Comm_free(&real);
    return c;
}

/* the members of p in `group` (of this replica's processes: echo_sdr_MPI_Comm_group), in its order, and this
 * process's place among them; 0 if a process of it is no member of p */
static int group_members(const sdr_comm_t *p, MPI_Group group, int **members, int *m, int *g) {
    PMPI_Group_size(group, m);
    PMPI_Group_rank(group, g);
    MPI_Group world;
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    int *ranks = malloc(sizeof(int) * (size_t)*m), ok = 1;
    *members = malloc(sizeof(int) * (size_t)*m);
    for (int i = 0; i < *m; i++) ranks[i] = i;
    if (PMPI_Group_translate_ranks(group, *m, ranks, world, *members) != MPI_SUCCESS) ok = 0;
    for (int i = 0; i < *m && ok; i++) {
        ok = (*members)[i] != MPI_UNDEFINED && (*members)[i] / sdr.n == sdr.k && p->index_of[(*members)[i] % sdr.n] >= 0;
        if (ok) (*members)[i] %= sdr.n;
    }
    free(ranks);
    PMPI_Group_free(&world);
    return ok;
}

/* whether a group is this process alone: a communicator of it reaches no other process (as MPI_COMM_SELF), so
 * every replica makes its own, natively */
static int only_me(MPI_Group group) {
    int n = 0, me = MPI_UNDEFINED;
    PMPI_Group_size(group, &n);
    PMPI_Group_rank(group, &me);
    return n == 1 && me == 0;
}

/* Only the group's members call it: made by them (group_create), whatever part of comm the group is */
int echo_sdr_MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm) {
    sdr_comm_t *p = intra(comm, "MPI_Comm_create_group");
    if (only_me(group)) return PMPI_Comm_create_group(MPI_COMM_SELF, group, tag, newcomm);
    int *members, m, g;
    if (!group_members(p, group, &members, &m, &g) || g == MPI_UNDEFINED) {
        free(members);
        return MPI_ERR_GROUP;
    }
    sdr_comm_t *c = group_create(p, members, m, g, tag);
    free(members);
    *newcomm = c->app;
    return MPI_SUCCESS;
}

#if ECHO_DECLARES(MPI_Comm_create_from_group)
/* Only the group's members call it, with no parent: made as create_group's over MPI_COMM_WORLD, its tag a hash of
 * the string tag; it takes the error handler given.  This process alone: made natively (only_me). */
int echo_sdr_MPI_Comm_create_from_group(MPI_Group group, const char *stringtag, MPI_Info info,
                                        MPI_Errhandler errhandler, MPI_Comm *newcomm) {
    if (only_me(group)) return PMPI_Comm_create_from_group(group, stringtag, info, errhandler, newcomm);
    sdr_comm_t *p = sdr_comm_of(MPI_COMM_WORLD);
    int *members, m, g;
    if (!group_members(p, group, &members, &m, &g) || g == MPI_UNDEFINED) {
        free(members);
        return MPI_ERR_GROUP;
    }
    unsigned hash = 5381;
    for (const char *ch = stringtag ? stringtag : ""; *ch; ch++) hash = hash * 33 + (unsigned char)*ch;
    sdr_comm_t *c = group_create(p, members, m, g, (int)(hash & 0x3fffffff));
    free(members);
    *newcomm = c->app;
    if (info != MPI_INFO_NULL) PMPI_Comm_set_info(*newcomm, info);
    PMPI_Comm_set_errhandler(*newcomm, errhandler);
    return MPI_SUCCESS;
}
#endif

int echo_sdr_MPI_Comm_free(MPI_Comm *comm) {
    sdr_comm_t *c = sdr_comm_of(*comm);
    if (!c || *comm == MPI_COMM_WORLD) return PMPI_Comm_free(comm); /* a local one; or MPI reports the misuse */
    sdr_idup_settle(c); /* its duplicates still being made need its real communicators */
    int rc = PMPI_Comm_free(comm); /* the application's attribute delete callbacks run in it, and may use it */
    sdr_comm_t *hidden[2] = {c->local, c->all};
    sdr_comm_release(c);
    for (int i = 0; i < 2; i++)
        if (hidden[i]) {
            MPI_Comm h = hidden[i]->app;
            echo_sdr_MPI_Comm_free(&h);
        }
    return rc;
}

int echo_sdr_MPI_Comm_rank(MPI_Comm comm, int *rank) {
    sdr_comm_t *c = sdr_comm_of(comm);
    *rank = c->inter ? c->lrank : c->rank;
    return MPI_SUCCESS;
}

int echo_sdr_MPI_Comm_size(MPI_Comm comm, int *size) {
    sdr_comm_t *c = sdr_comm_of(comm);
    *size = c->inter ? c->lsize : c->size;
    return MPI_SUCCESS;
}

/* this replica's processes of members first..first+n-1: groups answer as natively */
static int group_of(const sdr_comm_t *c, int first, int n, MPI_Group *group) {
    MPI_Group world;
    PMPI_Comm_group(MPI_COMM_WORLD, &world);
    int *ranks = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) ranks[i] = sdr_real_rank(c->members[first + i], sdr.k);
    int rc = PMPI_Group_incl(world, n, ranks, group);
    free(ranks);
    PMPI_Group_free(&world);
    return rc;
}

int echo_sdr_MPI_Comm_group(MPI_Comm comm, MPI_Group *group) {
    sdr_comm_t *c = sdr_comm_of(comm);
    return c->inter ? group_of(c, c->rank - c->lrank, c->lsize, group) : group_of(c, 0, c->size, group);
}

int echo_sdr_MPI_Comm_test_inter(MPI_Comm comm, int *flag) {
    *flag = sdr_comm_of(comm)->inter;
    return MPI_SUCCESS;
}

int echo_sdr_MPI_Comm_remote_size(MPI_Comm comm, int *size) {
    sdr_comm_t *c = sdr_comm_of(comm);
    if (!c->inter) return MPI_ERR_COMM;
    *size = c->rsize;
    return MPI_SUCCESS;
}

int echo_sdr_MPI_Comm_remote_group(MPI_Comm comm, MPI_Group *group) {
    sdr_comm_t *c = sdr_comm_of(comm);
    if (!c->inter) return MPI_ERR_COMM;
    return group_of(c, c->remote0, c->rsize, group);
}

int echo_sdr_MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result) {
    sdr_comm_t *a = sdr_comm_of(comm1), *b = sdr_comm_of(comm2);
    if (!a || !b) return PMPI_Comm_compare(comm1, comm2, result); /* MPI_COMM_SELF and the like */
    if (a == b) {
        *result = MPI_IDENT;
        return MPI_SUCCESS;
    }
    *result = MPI_UNEQUAL;
    if (a->size != b->size) return MPI_SUCCESS;
    int same_order = 1, same_set = 1;
    for (int i = 0; i < a->size; i++) {
        same_order &= a->members[i] == b->members[i];
        same_set &= b->index_of[a->members[i]] >= 0;
    }
    *result = same_order ? MPI_CONGRUENT : same_set ? MPI_SIMILAR : MPI_UNEQUAL;
    return MPI_SUCCESS;
}

#if ECHO_DECLARES(MPI_Session_init)
/* Sessions are outside SDR (docs/sdr.md): the communicators a session makes are real ones of every replica, in
 * which each replica would be a rank of its own (MPICH's init/session: replica 1 of rank 0 was not rank 0 and
 * printed nothing).  Refused at the start, naming the call. */
int echo_sdr_MPI_Session_init(MPI_Info info, MPI_Errhandler errhandler, MPI_Session *session) {
    (void)info, (void)errhandler, (void)session;
    echo_unsupported("MPI_Session_init");
    return MPI_ERR_OTHER;
}
#endif
