/* Checkpoints for Reinit (echo_reinit.h): named buffers per version, kept
 *  - in memory (default): this rank's two latest versions, and a copy of its left
 *    neighbour's on this rank (its "buddy"), so a failed rank gets its data back
 *    from its buddy when it restarts: survives any failure that does not take
 *    a rank and its right neighbour together;
 *  - or in files (echorun --checkpoint files:DIR): DIR/v<version>/<rank>/<name>
 *    and a marker DIR/v<version>/<rank>.done written last: survives the loss of
 *    a node if DIR is on a shared file system.
 * The version to restart from is the latest one every rank has: agreed with a
 * reduction (MIN) over the world.  commit and latest are collective. */
#define _GNU_SOURCE
#define ECHO_LIBRARY
#include "echo_reinit_internal.h"
#include "echo_reinit.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct { char name[64]; char *data; size_t len; } buf_t;
typedef struct { int version; int n; buf_t *bufs; } ckpt_t;

static ckpt_t pending = {-1, 0, NULL};
static ckpt_t mine[2] = {{-1, 0, NULL}, {-1, 0, NULL}};  /* newest first */
static ckpt_t buddy[2] = {{-1, 0, NULL}, {-1, 0, NULL}}; /* the left neighbour's, newest first */
static int agreed = -1;                                  /* what load() reads */
static MPI_Comm comm = MPI_COMM_NULL, comm_of = MPI_COMM_NULL;

static const char *files_dir(void) {
    const char *v = echo_plan_value("checkpoint");
    return v && strncmp(v, "files:", 6) == 0 ? v + 6 : NULL;
}

/* a failure seen here is a failure like any other: repair and restart */
static int ok(int rc) { return rc == MPI_SUCCESS ? rc : echo_reinit_on_error(rc); }

/* a communicator of its own (no tag can clash with the application's), made
 * again after every repair of the world.  Its MPI_Comm_dup is a collective that a
 * failure can interrupt (then there is no communicator, and the failure is
 * repaired like any other: C never returns here, Python gets echo's error code) */
static int ckpt_comm(MPI_Comm *out) {
    if (comm_of != echo.reps_world) {
        /* no dup over a world with a dead member (echo_ft_knows_dead says why): all of them repair or none */
        int none_dead;
        int rc = echo_ft_agree_none_dead(echo.reps_world, &none_dead);
        if (rc == MPI_SUCCESS && !none_dead) rc = MPIX_ERR_PROC_FAILED;
        if (rc != MPI_SUCCESS) return ok(rc);
        MPI_Comm dup;
        rc = echo_ft_dup(echo.reps_world, &dup);
        if (rc != MPI_SUCCESS) return ok(rc);
        PMPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
        comm = dup;
        comm_of = echo.reps_world;
        echo_reinit_internal_comm(comm);
    }
    *out = comm;
    return MPI_SUCCESS;
}

static void clear(ckpt_t *c) {
    for (int i = 0; i < c->n; i++) free(c->bufs[i].data);
    free(c->bufs);
    *c = (ckpt_t){-1, 0, NULL};
}

int echo_ckpt_store(const char *name, const void *buf, size_t len) {
    for (int i = 0; i < pending.n; i++)
        if (strncmp(pending.bufs[i].name, name, sizeof pending.bufs[i].name - 1) == 0) {
            free(pending.bufs[i].data);
            pending.bufs[i].data = malloc(len ? len : 1);
            memcpy(pending.bufs[i].data, buf, len);
            pending.bufs[i].len = len;
            return 0;
        }
    pending.bufs = realloc(pending.bufs, sizeof *pending.bufs * (size_t)(pending.n + 1));
    buf_t *b = &pending.bufs[pending.n++];
    snprintf(b->name, sizeof b->name, "%s", name);
    b->data = malloc(len ? len : 1);
    memcpy(b->data, buf, len);
    b->len = len;
    return 0;
}

/* ---- serialized form, to hand a version to the buddy: version, n, then (name, len, bytes)... ---- */

static char *pack(const ckpt_t *c, int *size) {
    size_t total = 2 * sizeof(int);
    for (int i = 0; i < c->n; i++) total += sizeof c->bufs[i].name + sizeof(size_t) + c->bufs[i].len;
    char *out = malloc(total), *p = out;
    memcpy(p, &c->version, sizeof(int)); p += sizeof(int);
    memcpy(p, &c->n, sizeof(int)); p += sizeof(int);
    for (int i = 0; i < c->n; i++) {
        memcpy(p, c->bufs[i].name, sizeof c->bufs[i].name); p += sizeof c->bufs[i].name;
        memcpy(p, &c->bufs[i].len, sizeof(size_t)); p += sizeof(size_t);
        memcpy(p, c->bufs[i].data, c->bufs[i].len); p += c->bufs[i].len;
    }
    *size = (int)total;
    return out;
}

static ckpt_t unpack(const char *p) {
    ckpt_t c;
    memcpy(&c.version, p, sizeof(int)); p += sizeof(int);
    memcpy(&c.n, p, sizeof(int)); p += sizeof(int);
    c.bufs = calloc((size_t)c.n + 1, sizeof *c.bufs);
    for (int i = 0; i < c.n; i++) {
        memcpy(c.bufs[i].name, p, sizeof c.bufs[i].name); p += sizeof c.bufs[i].name;
        memcpy(&c.bufs[i].len, p, sizeof(size_t)); p += sizeof(size_t);
        c.bufs[i].data = malloc(c.bufs[i].len ? c.bufs[i].len : 1);
        memcpy(c.bufs[i].data, p, c.bufs[i].len); p += c.bufs[i].len;
    }
    return c;
}

/* send `c` to rank `to` while receiving one from `from` into `*r` */
static int exchange(const ckpt_t *c, int to, int from, ckpt_t *r) {
    MPI_Comm w;
    int rc = ckpt_comm(&w);
    if (rc != MPI_SUCCESS) return rc;
    int size, in = 0;
    char *out = pack(c, &size), *got = NULL;
    rc = ok(PMPI_Sendrecv(&size, 1, MPI_INT, to, 1, &in, 1, MPI_INT, from, 1, w, MPI_STATUS_IGNORE));
    if (rc == MPI_SUCCESS) {
        got = malloc((size_t)in);
        rc = ok(PMPI_Sendrecv(out, size, MPI_BYTE, to, 2, got, in, MPI_BYTE, from, 2, w, MPI_STATUS_IGNORE));
    }
    if (rc == MPI_SUCCESS) *r = unpack(got);
    free(out);
    free(got);
    return rc;
}

/* ---- files ---- */

static void path_of(char *out, size_t n, const char *dir, int version, const char *name) {
    if (name) snprintf(out, n, "%s/v%d/%d/%s", dir, version, echo.app_rank, name);
    else snprintf(out, n, "%s/v%d/%d", dir, version, echo.app_rank);
}

static void write_files(const char *dir, const ckpt_t *c) {
    char path[4096];
    snprintf(path, sizeof path, "%s/v%d", dir, c->version);
    mkdir(dir, 0755);
    mkdir(path, 0755);
    path_of(path, sizeof path, dir, c->version, NULL);
    mkdir(path, 0755);
    for (int i = 0; i < c->n; i++) {
        path_of(path, sizeof path, dir, c->version, c->bufs[i].name);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(c->bufs[i].data, 1, c->bufs[i].len, f) != c->bufs[i].len)
            echo_fatal("checkpoint: cannot write %s (%s)", path, strerror(errno));
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/v%d/%d.done", dir, c->version, echo.app_rank);
    FILE *f = fopen(path, "w"); /* last: the version is complete on this rank */
    if (!f) echo_fatal("checkpoint: cannot write %s (%s)", path, strerror(errno));
    fclose(f);
}

static int latest_file_version(const char *dir) {
    DIR *d = opendir(dir);
    int best = -1;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));) {
        int v;
        char path[4096];
        struct stat st;
        if (sscanf(e->d_name, "v%d", &v) != 1 || v <= best) continue;
        snprintf(path, sizeof path, "%s/v%d/%d.done", dir, v, echo.app_rank);
        if (stat(path, &st) == 0) best = v;
    }
    closedir(d);
    return best;
}

/* ---- the API ---- */

int echo_ckpt_commit(int version) {
    pending.version = version;
    const char *dir = files_dir();
    if (dir) {
        write_files(dir, &pending);
    } else {
        int n = echo.app_size, r = echo.app_rank;
        ckpt_t left;
        int rc = exchange(&pending, (r + 1) % n, (r + n - 1) % n, &left);
        if (rc != MPI_SUCCESS) return rc; /* Python: the world was re-initialized */
        clear(&buddy[1]);
        buddy[1] = buddy[0];
        buddy[0] = left;
    }
    clear(&mine[1]);
    mine[1] = mine[0];
    mine[0] = pending;
    pending = (ckpt_t){-1, 0, NULL};
    return 0;
}

/* in C a failure never returns from ok(); in Python it returns echo's error code, passed on */
#define OK(call) do { int rc_ = ok(call); if (rc_ != MPI_SUCCESS) return rc_; } while (0)

int echo_ckpt_latest(void) {
    MPI_Comm w;
    OK(ckpt_comm(&w));
    int n = echo.app_size, r = echo.app_rank, have;
    const char *dir = files_dir();
    if (dir) {
        have = latest_file_version(dir);
    } else {
        /* a restarted rank gets its versions back from its buddy (right neighbour) */
        int held[2] = {mine[0].version, buddy[0].version}, *all = malloc(sizeof(int) * 2 * (size_t)n);
        OK(PMPI_Allgather(held, 2, MPI_INT, all, 2, MPI_INT, w));
        int left = (r + n - 1) % n, right = (r + 1) % n;
        if (n > 1 && all[2 * left] < 0 && buddy[0].version >= 0)
            for (int k = 0; k < 2; k++) {
                int size;
                char *out = pack(&buddy[k], &size);
                OK(PMPI_Send(&size, 1, MPI_INT, left, 3, w));
                OK(PMPI_Send(out, size, MPI_BYTE, left, 4, w));
                free(out);
            }
        if (n > 1 && mine[0].version < 0 && all[2 * right + 1] >= 0)
            for (int k = 0; k < 2; k++) {
                int size;
                OK(PMPI_Recv(&size, 1, MPI_INT, right, 3, w, MPI_STATUS_IGNORE));
                char *in = malloc((size_t)size);
                OK(PMPI_Recv(in, size, MPI_BYTE, right, 4, w, MPI_STATUS_IGNORE));
                clear(&mine[k]);
                mine[k] = unpack(in);
                free(in);
            }
        free(all);
        have = mine[0].version;
    }
    OK(PMPI_Allreduce(&have, &agreed, 1, MPI_INT, MPI_MIN, w));
    return agreed;
}

int echo_ckpt_load(const char *name, void *buf, size_t len) {
    if (agreed < 0) return -1;
    const char *dir = files_dir();
    if (dir) {
        char path[4096];
        path_of(path, sizeof path, dir, agreed, name);
        FILE *f = fopen(path, "rb");
        if (!f) return -1;
        size_t got = fread(buf, 1, len, f);
        fclose(f);
        (void)got;
        return 0;
    }
    for (int k = 0; k < 2; k++) {
        if (mine[k].version != agreed) continue;
        for (int i = 0; i < mine[k].n; i++)
            if (strcmp(mine[k].bufs[i].name, name) == 0) {
                memcpy(buf, mine[k].bufs[i].data, mine[k].bufs[i].len < len ? mine[k].bufs[i].len : len);
                return 0;
            }
    }
    return -1;
}
