/* MPI-IO under cloning: only representatives touch files; copies get the same
 * data, statuses, answers and return codes (docs/mpi-io.md).
 *
 * A representative opens the file for real, on the real handle of the
 * communicator (the representatives' world or what derives from it).  A copy
 * holds a stand-in: a real MPI_File it opens itself on MPI_COMM_SELF on a private,
 * empty scratch file (deleted on close), so calls that only touch the handle
 * (c2f/f2c, error handlers) work natively on it.  Every call that moves data or
 * answers something about the file is made by the representative alone, which
 * forwards what it got (read data and status, a write's status, the answer, the
 * return code) to its copies, exactly as for messages (echo_forward.c).
 *
 * Files opened on MPI_COMM_SELF are replicated the same way (unlike
 * communication on MPI_COMM_SELF, which every copy does itself): otherwise every
 * copy of a rank would write the same file.
 *
 * In independent worlds (perturbation) every copy is its world's representative;
 * copy k > 0 opens and deletes `<name>.copy<k>`, so the worlds do not write over
 * each other's files. */
#define _GNU_SOURCE
#include "echo_clone.h"
#include "echo_records.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* What echo knows of one open file.  `app` is the handle the application holds:
 * the real file on a representative, the stand-in on a copy. */
typedef struct echo_file {
    MPI_File app;
    int32_t comm_id;     /* of the communicator it was opened on: SDC checks and events name it */
    MPI_Group group;     /* copies: what File_get_group answers (this copy in its representative's place) */
    /* a split collective under way (MPI allows one per file): what its _end delivers */
    void *split_buf;
    int split_count;
    MPI_Datatype split_dt;
    struct echo_file *next;
} echo_file_t;

static echo_file_t *files;

static echo_file_t *find(MPI_File fh) {
    for (echo_file_t *f = files; f; f = f->next)
        if (f->app == fh) return f;
    return NULL;
}

static void forget(echo_file_t *f) {
    for (echo_file_t **p = &files; *p; p = &(*p)->next)
        if (*p == f) {
            *p = f->next;
            break;
        }
    if (f->group != MPI_GROUP_NULL) PMPI_Group_free(&f->group);
    free(f);
}

/* A handle echo did not see opened (MPI_FILE_NULL, a freed or bogus handle):
 * every process makes the call itself, so misuse fails as it does natively. */
#define KNOWN_OR_NATIVE(fn, ...)   \
    echo_file_t *f = find(fh);     \
    if (!f) return P##fn(__VA_ARGS__)
/* the status MPI fills: the caller's, or ours (copies need the representative's) */
#define STATUS(status) MPI_Status status_local, *st = (status) == MPI_STATUS_IGNORE ? &status_local : (status)

/* A copy returns its representative's code; when it is an error, the generated
 * wrapper raises it on the copy's stand-in, whose error handler is the one the
 * application set (or inherited from MPI_FILE_NULL at open), as MPI raised it on
 * the representative's file inside the real call. */
static int forward_rc(int rc) { return echo_forward(NULL, 0, MPI_BYTE, rc); }

static int forward_answer(void *answer, size_t len, int rc) { return echo_forward_bytes(answer, len, rc); }

/* data the copy hands to the file: observers and the SDC check, as for a send */
static void outgoing(echo_file_t *f, const char *fn, int collective, const void *buf, int count, MPI_Datatype dt) {
    echo_outgoing(fn, collective, buf, count, dt, f->comm_id, -1);
}

/* In independent worlds copy k > 0 uses a file of its own: its name (to free),
 * or NULL where the application's name stands. */
static char *renamed(const char *filename) {
    char *name = NULL;
    if (echo.independent && echo.copy > 0 && filename && asprintf(&name, "%s.copy%d", filename, echo.copy) < 0)
        echo_fatal("out of memory");
    return name;
}

/* ---- open, close, delete ---- */

static void open_standin(MPI_File *fh) {
    static unsigned serial;
    char dir[1200], *path;
    snprintf(dir, sizeof dir, "%s/scratch", echo.run_dir);
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) echo_fatal("cannot create %s for MPI-IO stand-ins: %s", dir, strerror(errno));
    if (asprintf(&path, "%s/file.%d.%u", dir, echo.real_rank, serial++) < 0) echo_fatal("out of memory");
    int rc = PMPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                            MPI_INFO_NULL, fh);
    if (rc != MPI_SUCCESS) echo_fatal("cannot open the MPI-IO stand-in %s (MPI error %d)", path, rc);
    free(path);
}

/* always: files on MPI_COMM_SELF are replicated too (the wrapper would pass them through) */
int echo_always_MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info, MPI_File *fh) {
    if (!echo.active || !echo.cloned) return PMPI_File_open(comm, filename, amode, info, fh);
    echo_comm_t *c = echo_comm_is_local(comm) ? NULL : echo_comm_get(comm, "MPI_File_open");
    int rc = MPI_SUCCESS;
    if (echo_is_rep()) {
        char *own = renamed(filename);
        rc = PMPI_File_open(c ? c->real : comm, own ? own : filename, amode, info, fh);
        free(own);
    }
    rc = echo_forward(NULL, 0, MPI_BYTE, rc);
    if (rc != MPI_SUCCESS) {
        /* a copy cannot raise MPI_FILE_NULL's handler (MPI refuses File_call_errhandler
         * on it); a fatal one has already stopped the job at the representative */
        if (!echo_is_rep()) *fh = MPI_FILE_NULL;
        return rc;
    }
    echo_file_t *f = calloc(1, sizeof *f);
    f->comm_id = echo_comm_id(comm);
    f->group = MPI_GROUP_NULL;
    f->split_dt = MPI_BYTE;
    if (!echo_is_rep()) {
        open_standin(fh);
        if (c) echo_comm_group(c, &f->group);
        else PMPI_Comm_group(comm, &f->group); /* MPI_COMM_SELF: the copy is its own group */
    }
    f->app = *fh;
    f->next = files;
    files = f;
    return rc;
}

int echo_MPI_File_close(MPI_File *fh) {
    echo_file_t *f = find(*fh);
    if (!f) return PMPI_File_close(fh);
    int rc = forward_rc(ECHO_REP(PMPI_File_close(fh)));
    if (rc != MPI_SUCCESS) return rc;
    if (!echo_is_rep()) PMPI_File_close(fh); /* the stand-in: its scratch file goes with it */
    *fh = MPI_FILE_NULL;
    forget(f);
    return rc;
}

/* Each representative deletes, as each application rank would natively (so
 * when several ranks delete one file, the same ranks get MPI_ERR_NO_SUCH_FILE
 * as natively); copies delete nothing and return their representative's code. */
int echo_MPI_File_delete(const char *filename, MPI_Info info) {
    int rc = MPI_SUCCESS;
    if (echo_is_rep()) {
        char *own = renamed(filename);
        rc = PMPI_File_delete(own ? own : filename, info);
        free(own);
    }
    return echo_forward(NULL, 0, MPI_BYTE, rc);
}

/* ---- reads: data and status come from the representative ---- */


int echo_MPI_File_read(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status) {
    KNOWN_OR_NATIVE(MPI_File_read, fh, buf, count, datatype, status);
    STATUS(status);
    return echo_forward_status(buf, count, datatype, st, ECHO_REP(PMPI_File_read(fh, buf, count, datatype, st)));
}

int echo_MPI_File_read_all(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status) {
    KNOWN_OR_NATIVE(MPI_File_read_all, fh, buf, count, datatype, status);
    STATUS(status);
    return echo_forward_status(buf, count, datatype, st, ECHO_REP(PMPI_File_read_all(fh, buf, count, datatype, st)));
}

int echo_MPI_File_read_shared(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status) {
    KNOWN_OR_NATIVE(MPI_File_read_shared, fh, buf, count, datatype, status);
    STATUS(status);
    return echo_forward_status(buf, count, datatype, st, ECHO_REP(PMPI_File_read_shared(fh, buf, count, datatype, st)));
}

int echo_MPI_File_read_ordered(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Status *status) {
    KNOWN_OR_NATIVE(MPI_File_read_ordered, fh, buf, count, datatype, status);
    STATUS(status);
    return echo_forward_status(buf, count, datatype, st, ECHO_REP(PMPI_File_read_ordered(fh, buf, count, datatype, st)));
}

int echo_MPI_File_read_at(MPI_File fh, MPI_Offset offset, void *buf, int count, MPI_Datatype datatype,
                          MPI_Status *status) {
    KNOWN_OR_NATIVE(MPI_File_read_at, fh, offset, buf, count, datatype, status);
    STATUS(status);
    return echo_forward_status(buf, count, datatype, st, ECHO_REP(PMPI_File_read_at(fh, offset, buf, count, datatype, st)));
}

int echo_MPI_File_read_at_all(MPI_File fh, MPI_Offset offset, void *buf, int count, MPI_Datatype datatype,
                              MPI_Status *status) {
    KNOWN_OR_NATIVE(MPI_File_read_at_all, fh, offset, buf, count, datatype, status);
    STATUS(status);
    return echo_forward_status(buf, count, datatype, st, ECHO_REP(PMPI_File_read_at_all(fh, offset, buf, count, datatype, st)));
}

/* ---- writes: copies write nothing; they get the status and the return code ---- */

/* a write's status: the count written */
static int write_done(MPI_Status *st, int rc) { return echo_forward_status(NULL, 0, MPI_BYTE, st, rc); }

int echo_MPI_File_write(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status) {
    KNOWN_OR_NATIVE(MPI_File_write, fh, buf, count, datatype, status);
    STATUS(status);
    outgoing(f, "MPI_File_write", 0, buf, count, datatype);
    return write_done(st, ECHO_REP(PMPI_File_write(fh, buf, count, datatype, st)));
}

int echo_MPI_File_write_all(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status) {
    KNOWN_OR_NATIVE(MPI_File_write_all, fh, buf, count, datatype, status);
    STATUS(status);
    outgoing(f, "MPI_File_write_all", 1, buf, count, datatype);
    return write_done(st, ECHO_REP(PMPI_File_write_all(fh, buf, count, datatype, st)));
}

int echo_MPI_File_write_shared(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status) {
    KNOWN_OR_NATIVE(MPI_File_write_shared, fh, buf, count, datatype, status);
    STATUS(status);
    outgoing(f, "MPI_File_write_shared", 0, buf, count, datatype);
    return write_done(st, ECHO_REP(PMPI_File_write_shared(fh, buf, count, datatype, st)));
}

int echo_MPI_File_write_ordered(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Status *status) {
    KNOWN_OR_NATIVE(MPI_File_write_ordered, fh, buf, count, datatype, status);
    STATUS(status);
    outgoing(f, "MPI_File_write_ordered", 1, buf, count, datatype);
    return write_done(st, ECHO_REP(PMPI_File_write_ordered(fh, buf, count, datatype, st)));
}

int echo_MPI_File_write_at(MPI_File fh, MPI_Offset offset, const void *buf, int count, MPI_Datatype datatype,
                           MPI_Status *status) {
    KNOWN_OR_NATIVE(MPI_File_write_at, fh, offset, buf, count, datatype, status);
    STATUS(status);
    outgoing(f, "MPI_File_write_at", 0, buf, count, datatype);
    return write_done(st, ECHO_REP(PMPI_File_write_at(fh, offset, buf, count, datatype, st)));
}

int echo_MPI_File_write_at_all(MPI_File fh, MPI_Offset offset, const void *buf, int count, MPI_Datatype datatype,
                               MPI_Status *status) {
    KNOWN_OR_NATIVE(MPI_File_write_at_all, fh, offset, buf, count, datatype, status);
    STATUS(status);
    outgoing(f, "MPI_File_write_at_all", 1, buf, count, datatype);
    return write_done(st, ECHO_REP(PMPI_File_write_at_all(fh, offset, buf, count, datatype, st)));
}

/* ---- nonblocking: echo requests that deliver data and status at completion ----
 * The representative's return code is forwarded at once: a call MPI refuses
 * (e.g. a read of a write-only file) fails on the copies too, and, as natively,
 * leaves *request untouched. */

static int started(MPI_Request real, MPI_Request *request, void *buf, int count, MPI_Datatype dt, int rc) {
    rc = forward_rc(rc);
    if (rc == MPI_SUCCESS) *request = echo_request_new(real, 0, 1, buf, count, dt);
    return rc;
}

#define IREAD(fn, ...)                                  \
    MPI_Request real = MPI_REQUEST_NULL;                \
    int rc = ECHO_REP(P##fn(__VA_ARGS__, &real));            \
    return started(real, request, buf, count, datatype, rc)
#define IWRITE(fn, collective, ...)                     \
    MPI_Request real = MPI_REQUEST_NULL;                \
    outgoing(f, #fn, collective, buf, count, datatype); \
    int rc = ECHO_REP(P##fn(__VA_ARGS__, &real));            \
    return started(real, request, NULL, 0, datatype, rc)

int echo_MPI_File_iread(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Request *request) {
    KNOWN_OR_NATIVE(MPI_File_iread, fh, buf, count, datatype, request);
    IREAD(MPI_File_iread, fh, buf, count, datatype);
}

int echo_MPI_File_iread_all(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Request *request) {
    KNOWN_OR_NATIVE(MPI_File_iread_all, fh, buf, count, datatype, request);
    IREAD(MPI_File_iread_all, fh, buf, count, datatype);
}

int echo_MPI_File_iread_shared(MPI_File fh, void *buf, int count, MPI_Datatype datatype, MPI_Request *request) {
    KNOWN_OR_NATIVE(MPI_File_iread_shared, fh, buf, count, datatype, request);
    IREAD(MPI_File_iread_shared, fh, buf, count, datatype);
}

int echo_MPI_File_iread_at(MPI_File fh, MPI_Offset offset, void *buf, int count, MPI_Datatype datatype,
                           MPI_Request *request) {
    KNOWN_OR_NATIVE(MPI_File_iread_at, fh, offset, buf, count, datatype, request);
    IREAD(MPI_File_iread_at, fh, offset, buf, count, datatype);
}

int echo_MPI_File_iread_at_all(MPI_File fh, MPI_Offset offset, void *buf, int count, MPI_Datatype datatype,
                               MPI_Request *request) {
    KNOWN_OR_NATIVE(MPI_File_iread_at_all, fh, offset, buf, count, datatype, request);
    IREAD(MPI_File_iread_at_all, fh, offset, buf, count, datatype);
}

int echo_MPI_File_iwrite(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Request *request) {
    KNOWN_OR_NATIVE(MPI_File_iwrite, fh, buf, count, datatype, request);
    IWRITE(MPI_File_iwrite, 0, fh, buf, count, datatype);
}

int echo_MPI_File_iwrite_all(MPI_File fh, const void *buf, int count, MPI_Datatype datatype, MPI_Request *request) {
    KNOWN_OR_NATIVE(MPI_File_iwrite_all, fh, buf, count, datatype, request);
    IWRITE(MPI_File_iwrite_all, 1, fh, buf, count, datatype);
}

int echo_MPI_File_iwrite_shared(MPI_File fh, const void *buf, int count, MPI_Datatype datatype,
                                MPI_Request *request) {
    KNOWN_OR_NATIVE(MPI_File_iwrite_shared, fh, buf, count, datatype, request);
    IWRITE(MPI_File_iwrite_shared, 0, fh, buf, count, datatype);
}

int echo_MPI_File_iwrite_at(MPI_File fh, MPI_Offset offset, const void *buf, int count, MPI_Datatype datatype,
                            MPI_Request *request) {
    KNOWN_OR_NATIVE(MPI_File_iwrite_at, fh, offset, buf, count, datatype, request);
    IWRITE(MPI_File_iwrite_at, 0, fh, offset, buf, count, datatype);
}

int echo_MPI_File_iwrite_at_all(MPI_File fh, MPI_Offset offset, const void *buf, int count, MPI_Datatype datatype,
                                MPI_Request *request) {
    KNOWN_OR_NATIVE(MPI_File_iwrite_at_all, fh, offset, buf, count, datatype, request);
    IWRITE(MPI_File_iwrite_at_all, 1, fh, offset, buf, count, datatype);
}

/* ---- split collectives: _begin forwards its return code, _end delivers ---- */

static int begun(echo_file_t *f, void *buf, int count, MPI_Datatype dt, int rc) {
    rc = forward_rc(rc);
    if (rc == MPI_SUCCESS) {
        f->split_buf = buf;
        f->split_count = count;
        f->split_dt = dt;
    }
    return rc;
}

/* a read's _end delivers what its _begin asked for; a write's only the status */
static int ended(echo_file_t *f, MPI_Status *st, int rc) {
    rc = echo_forward_status(f->split_buf, f->split_count, f->split_dt, st, rc);
    f->split_buf = NULL;
    f->split_count = 0;
    f->split_dt = MPI_BYTE;
    return rc;
}

int echo_MPI_File_read_all_begin(MPI_File fh, void *buf, int count, MPI_Datatype datatype) {
    KNOWN_OR_NATIVE(MPI_File_read_all_begin, fh, buf, count, datatype);
    return begun(f, buf, count, datatype, ECHO_REP(PMPI_File_read_all_begin(fh, buf, count, datatype)));
}

int echo_MPI_File_read_ordered_begin(MPI_File fh, void *buf, int count, MPI_Datatype datatype) {
    KNOWN_OR_NATIVE(MPI_File_read_ordered_begin, fh, buf, count, datatype);
    return begun(f, buf, count, datatype, ECHO_REP(PMPI_File_read_ordered_begin(fh, buf, count, datatype)));
}

int echo_MPI_File_read_at_all_begin(MPI_File fh, MPI_Offset offset, void *buf, int count, MPI_Datatype datatype) {
    KNOWN_OR_NATIVE(MPI_File_read_at_all_begin, fh, offset, buf, count, datatype);
    return begun(f, buf, count, datatype, ECHO_REP(PMPI_File_read_at_all_begin(fh, offset, buf, count, datatype)));
}

int echo_MPI_File_write_all_begin(MPI_File fh, const void *buf, int count, MPI_Datatype datatype) {
    KNOWN_OR_NATIVE(MPI_File_write_all_begin, fh, buf, count, datatype);
    outgoing(f, "MPI_File_write_all_begin", 1, buf, count, datatype);
    return begun(f, NULL, 0, MPI_BYTE, ECHO_REP(PMPI_File_write_all_begin(fh, buf, count, datatype)));
}

int echo_MPI_File_write_ordered_begin(MPI_File fh, const void *buf, int count, MPI_Datatype datatype) {
    KNOWN_OR_NATIVE(MPI_File_write_ordered_begin, fh, buf, count, datatype);
    outgoing(f, "MPI_File_write_ordered_begin", 1, buf, count, datatype);
    return begun(f, NULL, 0, MPI_BYTE, ECHO_REP(PMPI_File_write_ordered_begin(fh, buf, count, datatype)));
}

int echo_MPI_File_write_at_all_begin(MPI_File fh, MPI_Offset offset, const void *buf, int count,
                                     MPI_Datatype datatype) {
    KNOWN_OR_NATIVE(MPI_File_write_at_all_begin, fh, offset, buf, count, datatype);
    outgoing(f, "MPI_File_write_at_all_begin", 1, buf, count, datatype);
    return begun(f, NULL, 0, MPI_BYTE, ECHO_REP(PMPI_File_write_at_all_begin(fh, offset, buf, count, datatype)));
}

int echo_MPI_File_read_all_end(MPI_File fh, void *buf, MPI_Status *status) {
    KNOWN_OR_NATIVE(MPI_File_read_all_end, fh, buf, status);
    STATUS(status);
    return ended(f, st, ECHO_REP(PMPI_File_read_all_end(fh, buf, st)));
}

int echo_MPI_File_read_ordered_end(MPI_File fh, void *buf, MPI_Status *status) {
    KNOWN_OR_NATIVE(MPI_File_read_ordered_end, fh, buf, status);
    STATUS(status);
    return ended(f, st, ECHO_REP(PMPI_File_read_ordered_end(fh, buf, st)));
}

int echo_MPI_File_read_at_all_end(MPI_File fh, void *buf, MPI_Status *status) {
    KNOWN_OR_NATIVE(MPI_File_read_at_all_end, fh, buf, status);
    STATUS(status);
    return ended(f, st, ECHO_REP(PMPI_File_read_at_all_end(fh, buf, st)));
}

int echo_MPI_File_write_all_end(MPI_File fh, const void *buf, MPI_Status *status) {
    KNOWN_OR_NATIVE(MPI_File_write_all_end, fh, buf, status);
    STATUS(status);
    return ended(f, st, ECHO_REP(PMPI_File_write_all_end(fh, buf, st)));
}

int echo_MPI_File_write_ordered_end(MPI_File fh, const void *buf, MPI_Status *status) {
    KNOWN_OR_NATIVE(MPI_File_write_ordered_end, fh, buf, status);
    STATUS(status);
    return ended(f, st, ECHO_REP(PMPI_File_write_ordered_end(fh, buf, st)));
}

int echo_MPI_File_write_at_all_end(MPI_File fh, const void *buf, MPI_Status *status) {
    KNOWN_OR_NATIVE(MPI_File_write_at_all_end, fh, buf, status);
    STATUS(status);
    return ended(f, st, ECHO_REP(PMPI_File_write_at_all_end(fh, buf, st)));
}

/* ---- file pointers, size, consistency: the representative acts and answers ---- */

int echo_MPI_File_seek(MPI_File fh, MPI_Offset offset, int whence) {
    KNOWN_OR_NATIVE(MPI_File_seek, fh, offset, whence);
    return forward_rc(ECHO_REP(PMPI_File_seek(fh, offset, whence)));
}

int echo_MPI_File_seek_shared(MPI_File fh, MPI_Offset offset, int whence) {
    KNOWN_OR_NATIVE(MPI_File_seek_shared, fh, offset, whence);
    return forward_rc(ECHO_REP(PMPI_File_seek_shared(fh, offset, whence)));
}

int echo_MPI_File_get_position(MPI_File fh, MPI_Offset *offset) {
    KNOWN_OR_NATIVE(MPI_File_get_position, fh, offset);
    return forward_answer(offset, sizeof *offset, ECHO_REP(PMPI_File_get_position(fh, offset)));
}

int echo_MPI_File_get_position_shared(MPI_File fh, MPI_Offset *offset) {
    KNOWN_OR_NATIVE(MPI_File_get_position_shared, fh, offset);
    return forward_answer(offset, sizeof *offset, ECHO_REP(PMPI_File_get_position_shared(fh, offset)));
}

int echo_MPI_File_get_byte_offset(MPI_File fh, MPI_Offset offset, MPI_Offset *disp) {
    KNOWN_OR_NATIVE(MPI_File_get_byte_offset, fh, offset, disp);
    return forward_answer(disp, sizeof *disp, ECHO_REP(PMPI_File_get_byte_offset(fh, offset, disp)));
}

int echo_MPI_File_get_size(MPI_File fh, MPI_Offset *size) {
    KNOWN_OR_NATIVE(MPI_File_get_size, fh, size);
    return forward_answer(size, sizeof *size, ECHO_REP(PMPI_File_get_size(fh, size)));
}

int echo_MPI_File_set_size(MPI_File fh, MPI_Offset size) {
    KNOWN_OR_NATIVE(MPI_File_set_size, fh, size);
    return forward_rc(ECHO_REP(PMPI_File_set_size(fh, size)));
}

int echo_MPI_File_preallocate(MPI_File fh, MPI_Offset size) {
    KNOWN_OR_NATIVE(MPI_File_preallocate, fh, size);
    return forward_rc(ECHO_REP(PMPI_File_preallocate(fh, size)));
}

int echo_MPI_File_sync(MPI_File fh) {
    KNOWN_OR_NATIVE(MPI_File_sync, fh);
    return forward_rc(ECHO_REP(PMPI_File_sync(fh)));
}

int echo_MPI_File_get_atomicity(MPI_File fh, int *flag) {
    KNOWN_OR_NATIVE(MPI_File_get_atomicity, fh, flag);
    return forward_answer(flag, sizeof *flag, ECHO_REP(PMPI_File_get_atomicity(fh, flag)));
}

int echo_MPI_File_set_atomicity(MPI_File fh, int flag) {
    KNOWN_OR_NATIVE(MPI_File_set_atomicity, fh, flag);
    return forward_rc(ECHO_REP(PMPI_File_set_atomicity(fh, flag)));
}

int echo_MPI_File_get_amode(MPI_File fh, int *amode) {
    KNOWN_OR_NATIVE(MPI_File_get_amode, fh, amode);
    return forward_answer(amode, sizeof *amode, ECHO_REP(PMPI_File_get_amode(fh, amode)));
}

int echo_MPI_File_get_type_extent(MPI_File fh, MPI_Datatype datatype, MPI_Aint *extent) {
    KNOWN_OR_NATIVE(MPI_File_get_type_extent, fh, datatype, extent);
    return forward_answer(extent, sizeof *extent, ECHO_REP(PMPI_File_get_type_extent(fh, datatype, extent)));
}

int echo_MPI_File_get_group(MPI_File fh, MPI_Group *group) {
    KNOWN_OR_NATIVE(MPI_File_get_group, fh, group);
    int rc = ECHO_REP(PMPI_File_get_group(fh, group));
    if (!echo_is_rep()) rc = PMPI_Group_union(f->group, MPI_GROUP_EMPTY, group); /* a handle of its own to free */
    return forward_rc(rc);
}

/* ---- views ----
 * A copy sets the same view on its stand-in once its representative's
 * succeeded: then File_get_view hands it etype and filetype as MPI hands them
 * (the predefined handle, or a new duplicate of a derived type).  The
 * displacement and data representation are the representative's answer. */

int echo_MPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                           const char *datarep, MPI_Info info) {
    KNOWN_OR_NATIVE(MPI_File_set_view, fh, disp, etype, filetype, datarep, info);
    int rc = forward_rc(ECHO_REP(PMPI_File_set_view(fh, disp, etype, filetype, datarep, info)));
    /* MPI_DISPLACEMENT_CURRENT is only valid in sequential mode, which a stand-in is not */
    if (rc == MPI_SUCCESS && !echo_is_rep())
        PMPI_File_set_view(fh, disp == MPI_DISPLACEMENT_CURRENT ? 0 : disp, etype, filetype, datarep, info);
    return rc;
}

int echo_MPI_File_get_view(MPI_File fh, MPI_Offset *disp, MPI_Datatype *etype, MPI_Datatype *filetype,
                           char *datarep) {
    KNOWN_OR_NATIVE(MPI_File_get_view, fh, disp, etype, filetype, datarep);
    struct { MPI_Offset disp; char datarep[MPI_MAX_DATAREP_STRING]; } answer = {0, ""};
    int rc = PMPI_File_get_view(fh, &answer.disp, etype, filetype, answer.datarep);
    rc = forward_answer(&answer, sizeof answer, ECHO_REP(rc));
    *disp = answer.disp;
    strcpy(datarep, answer.datarep);
    return rc;
}

/* ---- hints: the representative's info, rebuilt on the copies ---- */

int echo_MPI_File_get_info(MPI_File fh, MPI_Info *info_used) {
    KNOWN_OR_NATIVE(MPI_File_get_info, fh, info_used);
    return echo_forward_info(info_used, ECHO_REP(PMPI_File_get_info(fh, info_used)));
}

int echo_MPI_File_set_info(MPI_File fh, MPI_Info info) {
    KNOWN_OR_NATIVE(MPI_File_set_info, fh, info);
    return forward_rc(ECHO_REP(PMPI_File_set_info(fh, info)));
}
