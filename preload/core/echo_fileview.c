/* The copies' own view of the program's files (docs/fileview.md).
 *
 * Under clones every copy of a rank runs the program in its representative's working directory.  Doing the
 * program's plain file I/O for real there breaks real codes: an exclusive create (O_CREAT|O_EXCL, Fortran's
 * status='new') finds the representative's file, a checkpoint written to a temporary file and renamed over the
 * old one races with the representative's rename, a log gets every line once per copy.
 *
 * So a copy (copy index >= 1) sees the file system copy-on-write, by path, through interposed libc calls:
 * - a path the copy writes, creates, renames or deletes lives in its own tree, <run_dir>/fileview/rankA.copyK/
 *   followed by the path's absolute name; a deletion is a whiteout (remembered in memory and in its log);
 * - a path it has not changed reads as the representative would have read it at that point of the program:
 *   the real file, unless the representative changed it during the run (the copy may be behind): then as it was
 *   before the run, which the representative set aside (below), or absent if it did not exist.
 * The representative does its I/O natively (its files are the program's real output); before it first changes
 * a path it notes it in its log, <run_dir>/fileview/rankA.copy0.log ("A path": absent before the run, "S path":
 * saved under rankA.base/ first, "E path": existed, a directory), which its copies read as it grows.  Every
 * process also logs "T path" for each file it made under a random name (mkstemp, mkdtemp), in order: a copy's k-th
 * is its representative's k-th (below).
 *
 * Why interposition and not a mount namespace with an overlay: it needs neither root nor unprivileged user
 * namespaces (often disabled on cluster nodes), works the same on every MPI, and the preload library is in every
 * process already.  Its limits are docs/fileview.md's: calls that bypass libc (raw syscalls, io_uring), directory
 * listings (a copy lists the real directory), processes the program starts.
 *
 * Which files are the program's: every path but the system's and the runtime's (prefixes below: /dev, /proc,
 * /sys, /usr, /etc, MPI's session directories...) and the run directory, and only calls the program makes itself:
 * inside an MPI call (echo_depth) the I/O is MPI's (MPI-IO stays the representative's, clone/echo_file.c). */
#define _GNU_SOURCE
#include "echo_internal.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#define INTERPOSED __attribute__((visibility("default")))

enum { OFF, REP, COPY };
static int side = OFF;
static char tree[1200];      /* a copy's own files */
static size_t tree_len;
static char base[1200];      /* the representative's files as they were before the run, where it changed them */
static char fv_dir[1120];    /* <run_dir>/fileview */
static char run_dir[1100];    /* echo's, absolute (echo.run_dir is shorter) */
static size_t run_dir_len;
static int log_fd = -1;      /* this process's log */
static int rep_log_fd = -1;  /* a copy: its representative's log, read as it grows */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- the real calls ---- */
int __xstat(int, const char *, struct stat *);
int __lxstat(int, const char *, struct stat *);
int __xstat64(int, const char *, struct stat64 *);
int __lxstat64(int, const char *, struct stat64 *);
int __fxstatat(int, int, const char *, struct stat *, int);
int __fxstatat64(int, int, const char *, struct stat64 *, int);
int __open_2(const char *, int);
int __open64_2(const char *, int);
int __openat_2(int, const char *, int);
int __openat64_2(int, const char *, int);

#define REAL(name) static __typeof__(name) *real_##name
#define R(name) ((__typeof__(name) *)resolved((void **)&real_##name, #name))
static void *resolved(void **slot, const char *name) { /* at first use: a call may come before the plan is read */
    if (!*slot) *slot = dlsym(RTLD_NEXT, name);
    return *slot;
}
REAL(open); REAL(open64); REAL(openat); REAL(openat64); REAL(__open_2); REAL(__open64_2); REAL(__openat_2);
REAL(__openat64_2); REAL(fopen); REAL(fopen64); REAL(freopen); REAL(freopen64);
REAL(renameat2); REAL(unlinkat); REAL(remove); REAL(mkdir);
REAL(mkdirat); REAL(truncate64); REAL(link); REAL(linkat); REAL(symlink);
REAL(symlinkat); REAL(stat); REAL(stat64); REAL(lstat); REAL(lstat64); REAL(fstatat); REAL(fstatat64);
REAL(__xstat); REAL(__xstat64); REAL(__lxstat); REAL(__lxstat64); REAL(__fxstatat); REAL(__fxstatat64);
REAL(statx); REAL(access); REAL(faccessat); REAL(euidaccess); REAL(eaccess); REAL(opendir); REAL(readlink);
REAL(readlinkat);

/* ---- string sets: the copy's whiteouts and logged paths, the representative's changed paths ---- */
typedef struct { char **keys; char *vals; size_t cap, n; } pathset_t;
static pathset_t whiteouts, logged, rep_changed, touched;

static size_t hash(const char *s) {
    size_t h = 1469598103934665603u;
    while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211u;
    return h;
}

static size_t slot(const pathset_t *s, const char *key) {
    size_t i = hash(key) & (s->cap - 1);
    while (s->keys[i] && strcmp(s->keys[i], key) != 0) i = (i + 1) & (s->cap - 1);
    return i;
}

static char set_get(const pathset_t *s, const char *key) {
    if (!s->n) return 0;
    size_t i = slot(s, key);
    return s->keys[i] ? s->vals[i] : 0;
}

static void set_put(pathset_t *s, const char *key, char val) {
    if (2 * (s->n + 1) > s->cap) {
        pathset_t g = {calloc(s->cap ? 2 * s->cap : 256, sizeof(char *)), calloc(s->cap ? 2 * s->cap : 256, 1),
                       s->cap ? 2 * s->cap : 256, 0};
        for (size_t i = 0; i < s->cap; i++)
            if (s->keys[i]) {
                size_t j = slot(&g, s->keys[i]);
                g.keys[j] = s->keys[i];
                g.vals[j] = s->vals[i];
                g.n++;
            }
        free(s->keys);
        free(s->vals);
        *s = g;
    }
    size_t i = slot(s, key);
    if (!s->keys[i]) {
        /* malloc called here, not through strdup: echo's own allocation, on its heap under --sdc (echo_heap.c; the C
         * library's would be the program's, in a copy or its representative only) */
        size_t len = strlen(key) + 1;
        s->keys[i] = malloc(len);
        if (s->keys[i]) memcpy(s->keys[i], key, len);
        s->n++;
    }
    s->vals[i] = val;
}

/* ---- paths ---- */

/* `path` (relative to `dirfd`) made absolute and lexically normal into `out`; -1 if it cannot be */
static int absolute(int dirfd, const char *path, char *out) {
    char buf[2 * PATH_MAX];
    if (path[0] == '/') {
        snprintf(buf, sizeof buf, "%s", path);
    } else {
        char dir[PATH_MAX];
        if (dirfd == AT_FDCWD) {
            if (!getcwd(dir, sizeof dir)) return -1;
        } else {
            char proc[64];
            snprintf(proc, sizeof proc, "/proc/self/fd/%d", dirfd);
            ssize_t n = R(readlink)(proc, dir, sizeof dir - 1);
            if (n <= 0) return -1;
            dir[n] = 0;
        }
        if ((size_t)snprintf(buf, sizeof buf, "%s/%s", dir, path) >= sizeof buf) return -1;
    }
    /* ".", ".." and repeated slashes, without following links */
    size_t n = 0;
    for (char *p = buf; *p;) {
        while (*p == '/') p++;
        if (!*p) break;
        char *end = strchrnul(p, '/');
        size_t len = (size_t)(end - p);
        if (len == 1 && p[0] == '.') {
        } else if (len == 2 && p[0] == '.' && p[1] == '.') {
            while (n > 0 && out[n - 1] != '/') n--;
            if (n > 0) n--;
        } else {
            if (n + len + 2 >= PATH_MAX) return -1;
            out[n++] = '/';
            memcpy(out + n, p, len);
            n += len;
        }
        p = end;
    }
    if (n == 0) out[n++] = '/';
    out[n] = 0;
    return 0;
}

static int under(const char *path, const char *dir, size_t len) {
    return strncmp(path, dir, len) == 0 && (path[len] == '/' || path[len] == 0);
}

/* system and runtime paths: never the program's files */
static const char *const not_program[] = {"/dev", "/proc", "/sys", "/run", "/var/run", "/var/lock", "/etc", "/usr",
                                          "/lib", "/lib32", "/lib64", "/bin", "/sbin", "/boot"};
/* components that name MPI's and its runtime's session directories, wherever TMPDIR puts them */
static const char *const runtime_dirs[] = {"/ompi.", "/prte.", "/openmpi-sessions", "/pmix", "/mpich_", "/.pmix",
                                           "/hydra"};

/* The program's name of a path its own call gave (dirfd, path), absolute, into `logical`; 0 if it is not the
 * program's file (echo's, MPI's, the system's) or the call is not the program's. */
static int program_path(int dirfd, const char *path, char *logical) {
    if (side == OFF || echo_depth || !path || !*path) return 0;
    if (absolute(dirfd, path, logical) < 0) return 0;
    if (side == COPY && under(logical, tree, tree_len)) /* reached through its own tree (a dirfd of it) */
        memmove(logical, logical + tree_len, strlen(logical + tree_len) + 1);
    if (!logical[0]) return 0;
    if (under(logical, run_dir, run_dir_len)) return 0;
    for (size_t i = 0; i < sizeof not_program / sizeof *not_program; i++)
        if (under(logical, not_program[i], strlen(not_program[i]))) return 0;
    for (size_t i = 0; i < sizeof runtime_dirs / sizeof *runtime_dirs; i++)
        if (strstr(logical, runtime_dirs[i])) return 0;
    return 1;
}

/* dir + logical into out (PATH_MAX); a name too long becomes "", which no call finds */
static void join(char *out, const char *dir, const char *logical) {
    size_t a = strlen(dir), b = strlen(logical);
    if (a + b >= PATH_MAX) { out[0] = 0; return; }
    memcpy(out, dir, a);
    memcpy(out + a, logical, b + 1);
}

static int empty(const char *path) { return !path || !*path; } /* an fd's own stat (AT_EMPTY_PATH) */

static void write_line(int fd, char code, const char *path) {
    char line[PATH_MAX + 4];
    int n = snprintf(line, sizeof line, "%c %s\n", code, path);
    if (fd >= 0 && write(fd, line, (size_t)n) < 0) { /* the comparison will miss it: nothing else to do */ }
}

/* every directory above `path` (a file's path in the tree or the base), made */
static void make_parents(const char *path) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    char *last = strrchr(dir, '/');
    struct stat st;
    if (last && last != dir) { /* the common case: the parent is there already */
        *last = 0;
        int there = R(stat)(dir, &st) == 0;
        *last = '/';
        if (there) return;
    }
    for (char *p = dir + 1; (p = strchr(p, '/')); p++) {
        *p = 0;
        R(mkdir)(dir, 0755);
        *p = '/';
    }
}

/* copy a regular file's data and mode (shared blocks where the file system can, else sendfile: no user-space
 * buffer) */
static int copy_file(const char *from, const char *to) {
    int in = R(open)(from, O_RDONLY | O_CLOEXEC);
    if (in < 0) return -1;
    struct stat st;
    if (fstat(in, &st) < 0) { close(in); return -1; }
    int out = R(open)(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, st.st_mode & 07777);
    if (out < 0) { int e = errno; close(in); errno = e; return -1; }
    off_t left = st.st_size;
    if (left > 0 && ioctl(out, FICLONE, in) == 0) left = 0; /* a file system that shares blocks (btrfs, XFS) */
    while (left > 0) {
        ssize_t n = sendfile(out, in, NULL, (size_t)left > (1u << 30) ? (1u << 30) : (size_t)left);
        if (n <= 0) {
            if (n < 0 && errno == EINTR) continue;
            int e = n < 0 ? errno : EIO;
            close(in); close(out); errno = e;
            return -1;
        }
        left -= n;
    }
    close(in);
    return close(out);
}

/* ---- the representative: notes each path before its first change, sets aside what the change destroys ---- */
static void rep_changes(const char *logical, int replaces) {
    pthread_mutex_lock(&lock);
    if (!set_get(&touched, logical)) {
        set_put(&touched, logical, 1);
        struct stat st;
        char code = 'A';
        if (R(lstat)(logical, &st) == 0) {
            code = 'E';
            if (!S_ISDIR(st.st_mode)) {
                char saved[PATH_MAX];
                join(saved, base, logical);
                make_parents(saved);
                /* a rename or deletion leaves the inode alone: a link keeps it; a write in place needs a copy */
                if ((replaces && R(link)(logical, saved) == 0) || copy_file(logical, saved) == 0) code = 'S';
            }
        }
        write_line(log_fd, code, logical); /* after the file is set aside, before it changes */
    }
    pthread_mutex_unlock(&lock);
}

/* ---- a copy's view ---- */
enum { V_ABSENT, V_TREE, V_BASE, V_REAL };

/* new lines of the representative's log (a partial last line waits for the next read) */
static void refresh_rep(void) {
    static char pending[PATH_MAX + 4];
    static size_t have;
    char buf[8192];
    ssize_t n;
    while ((n = read(rep_log_fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] != '\n') {
                if (have < sizeof pending - 1) pending[have++] = buf[i];
                continue;
            }
            pending[have] = 0;
            if (have > 2) set_put(&rep_changed, pending + 2, pending[0]);
            have = 0;
        }
}

static int whited_out(const char *logical) {
    if (!whiteouts.n) return 0;
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", logical);
    for (;;) { /* the path or a directory above it */
        if (set_get(&whiteouts, p) == 1) return 1;
        char *slash = strrchr(p, '/');
        if (!slash || slash == p) return 0;
        *slash = 0;
    }
}

/* where the copy finds `logical` now (`out`: the file to use) */
static int view_locked(const char *logical, char *out) {
    struct stat st;
    join(out, tree, logical);
    if (R(lstat)(out, &st) == 0) return V_TREE;
    if (whited_out(logical)) return V_ABSENT;
    /* the real file first, its representative's log after: a file it created before this look was in its log
     * before it was created */
    int exists = R(lstat)(logical, &st) == 0;
    refresh_rep();
    snprintf(out, PATH_MAX, "%s", logical);
    switch (set_get(&rep_changed, logical)) {
    case 'A': return V_ABSENT;
    case 'S': join(out, base, logical); return V_BASE;
    case 'E': return V_REAL; /* a directory before the run */
    default: return exists ? V_REAL : V_ABSENT;
    }
}

static int view(const char *logical, char *out) {
    pthread_mutex_lock(&lock);
    int v = view_locked(logical, out);
    pthread_mutex_unlock(&lock);
    return v;
}

/* the copy changed `logical`: 'W' written or created, 'D' deleted, 'M' a directory made */
static void copy_changed(const char *logical, char code) {
    pthread_mutex_lock(&lock);
    if (code == 'D') set_put(&whiteouts, logical, 1);
    else if (set_get(&whiteouts, logical) == 1) set_put(&whiteouts, logical, 2); /* here again */
    if (set_get(&logged, logical) != code) {
        set_put(&logged, logical, code);
        write_line(log_fd, code, logical);
    }
    pthread_mutex_unlock(&lock);
}

static int parent_exists(const char *logical) {
    char parent[PATH_MAX], where[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", logical);
    char *slash = strrchr(parent, '/');
    if (!slash || slash == parent) return 1;
    *slash = 0;
    struct stat st;
    if (view(parent, where) == V_ABSENT || R(stat)(where, &st) != 0) { errno = ENOENT; return 0; }
    if (!S_ISDIR(st.st_mode)) { errno = ENOTDIR; return 0; }
    return 1;
}

/* The copy is about to create or change `logical` (a file): its tree holds it from now on, with the view's data
 * unless `fresh` (it will be truncated).  `out`: the tree's path.  -1 with errno as the real call would set it. */
static int own(const char *logical, int create, int excl, int fresh, char *out) {
    char from[PATH_MAX];
    int v = view(logical, from);
    join(out, tree, logical);
    if (v == V_TREE) return 0; /* the real call says EEXIST to an exclusive create */
    if (v == V_ABSENT) {
        if (!create) { errno = ENOENT; return -1; }
        if (!parent_exists(logical)) return -1;
        make_parents(out);
    } else {
        struct stat st;
        if (create && excl) { errno = EEXIST; return -1; }
        if (R(stat)(from, &st) == 0 && S_ISDIR(st.st_mode)) { errno = EISDIR; return -1; }
        make_parents(out);
        if (fresh) {
            int fd = R(open)(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, st.st_mode & 07777);
            if (fd < 0) return -1;
            close(fd);
        } else if (copy_file(from, out) < 0) {
            return -1;
        }
    }
    copy_changed(logical, 'W');
    return 0;
}

static int writes(int flags) {
    return (flags & O_ACCMODE) != O_RDONLY || (flags & (O_TRUNC | O_CREAT));
}

/* The file a copy's open of `logical` uses, in `out`; -1 with errno set. */
static int copy_open_path(const char *logical, int flags, char *out) {
    if (!writes(flags)) {
        if (view(logical, out) == V_ABSENT) { errno = ENOENT; return -1; }
        return 0;
    }
    if ((flags & O_ACCMODE) == O_RDONLY && !(flags & O_TRUNC)) { /* O_CREAT for reading: creates if absent */
        int v = view(logical, out);
        if (v != V_ABSENT) return 0;
    }
    return own(logical, flags & O_CREAT, flags & O_EXCL, flags & O_TRUNC, out);
}

/* Files of the system that change by themselves between the representative's read and a copy's: the machine's
 * free memory (CP2K reduces /proc/meminfo's fields over the ranks and prints them), the process's own size (its
 * resident pages: the representative's MPI maps what a copy's never does).  A copy reads them as its
 * representative read them: each side snapshots the file when the program opens it, the representative's
 * snapshot goes to its copies like a clock reading (echo_clock.c), and the program opens the snapshot, a memory
 * file, instead.  The last snapshot's descriptor is closed at the next (the program has its own by then). */
static const char *const shared_proc_files[] = {"/proc/meminfo", "/proc/self/statm", "/proc/self/status"};
static int snapshot_fd = -1;

static const char *snapshot(const char *path, int flags, const void *at, char *buf) {
    /* an open for reading and writing reads too: gfortran's OPEN without ACTION= tries O_RDWR|O_CREAT first and
     * falls back to reading only when that is refused, which it is not for root (CP2K's OPEN of /proc/meminfo) */
    if ((flags & O_ACCMODE) == O_WRONLY || (flags & O_TRUNC)) return path;
    size_t i = 0;
    while (i < sizeof shared_proc_files / sizeof *shared_proc_files && strcmp(path, shared_proc_files[i]) != 0) i++;
    if (i == sizeof shared_proc_files / sizeof *shared_proc_files) return path;
    static char content[65536];
    long len = 0;
    int fd = R(open)(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return path;
    for (ssize_t n; len < (long)sizeof content && (n = read(fd, content + len, sizeof content - (size_t)len)) > 0;)
        len += n;
    close(fd);
    len = echo_clock_share_bytes(content, len, (long)sizeof content, at);
    if (len < 0) return path; /* a copy whose readings parted: its own */
    if (snapshot_fd >= 0) close(snapshot_fd);
    snapshot_fd = memfd_create("echo-proc-snapshot", MFD_CLOEXEC);
    if (snapshot_fd < 0 || write(snapshot_fd, content, (size_t)len) != len) return path;
    snprintf(buf, PATH_MAX, "/proc/self/fd/%d", snapshot_fd);
    return buf;
}

/* The path an open of (dirfd, path) uses: the same, unless the program's file is a copy's (into `buf`) or one of
 * the system's it reads as the representative did (a snapshot: above); `at` is the open's caller */
static const char *opening(int dirfd, const char *path, int flags, char *buf, int *fail, const void *at) {
    char logical[PATH_MAX];
    *fail = 0;
    if (!echo_depth) path = echo_pid_proc_path(path, buf, at); /* a copy's /proc/<pid> is its own (echo_pid.c) */
    if (side != OFF && !echo_depth && path && path[0] == '/' && strncmp(path, "/proc/", 6) == 0)
        return snapshot(path, flags, at, buf); /* reads `path` before it writes `buf`, which may be it */
    if (!program_path(dirfd, path, logical)) return path;
    if ((flags & __O_TMPFILE) == __O_TMPFILE) { /* an unnamed file in a directory: it has no name to keep apart */
        if (side == COPY && view(logical, buf) == V_ABSENT) { errno = ENOENT; *fail = 1; }
        return side == COPY ? buf : path;
    }
    if (side == REP) {
        if (writes(flags)) rep_changes(logical, 0);
        return path;
    }
    if (copy_open_path(logical, flags, buf) < 0) *fail = 1;
    return buf;
}

static int open_mode_flags(const char *mode) {
    int flags = mode[0] == 'r' ? O_RDONLY : mode[0] == 'w' ? O_WRONLY | O_CREAT | O_TRUNC
                : mode[0] == 'a' ? O_WRONLY | O_CREAT | O_APPEND : O_RDONLY;
    if (strchr(mode, '+')) flags = (flags & ~O_ACCMODE) | O_RDWR;
    if (strchr(mode, 'x')) flags |= O_EXCL;
    return flags;
}

/* ---- set-up: when the plan is read (echo_process.c), before the program's first call ---- */
void echo_fileview_setup(void) {
    const char *v = echo_plan_value("fileview");
    if (!v || strcmp(v, "on") != 0 || echo.sdr || echo.reinit || echo.ncopies < 2) return;
    char path[PATH_MAX + 64];
    if (absolute(AT_FDCWD, echo.run_dir, path) < 0 || strlen(path) >= sizeof run_dir) return;
    snprintf(run_dir, sizeof run_dir, "%s", path);
    run_dir_len = strlen(run_dir);
    snprintf(fv_dir, sizeof fv_dir, "%s/fileview", run_dir);
    snprintf(base, sizeof base, "%s/rank%d.base", fv_dir, echo.app_rank);
    snprintf(tree, sizeof tree, "%s/rank%d.copy%d", fv_dir, echo.app_rank, echo.copy);
    tree_len = strlen(tree);
    R(mkdir)(fv_dir, 0755);
    snprintf(path, sizeof path, "%s/rank%d.copy%d.log", fv_dir, echo.app_rank, echo.copy);
    log_fd = R(open)(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (echo.copy > 0) {
        R(mkdir)(tree, 0755);
        snprintf(path, sizeof path, "%s/rank%d.copy0.log", fv_dir, echo.app_rank);
        rep_log_fd = R(open)(path, O_RDONLY | O_CREAT | O_CLOEXEC, 0644); /* whichever process comes first */
    }
    if (log_fd < 0 || (echo.copy > 0 && rep_log_fd < 0)) {
        fprintf(stderr, "echo: rank %d copy %d: cannot keep the file view in %s (%s); run with --file-view off\n",
                echo.app_rank, echo.copy, fv_dir, strerror(errno));
        exit(64);
    }
    side = echo.copy > 0 ? COPY : REP;
}

/* ---- the interposed calls ---- */
#define OPEN_MODE(flags, mode)                                   \
    mode_t mode = 0;                                             \
    if ((flags) & (O_CREAT | __O_TMPFILE)) {                     \
        va_list ap;                                              \
        va_start(ap, flags);                                     \
        mode = va_arg(ap, mode_t);                               \
        va_end(ap);                                              \
    }
/* `use`: the path an open of (dirfd, path) with these flags uses; the caller returns `refused` if the view refuses */
#define OPENING(dirfd, path, flags, refused)                       \
    char buf_[PATH_MAX];                                           \
    int fail_;                                                     \
    const char *use = opening(dirfd, path, flags, buf_, &fail_, __builtin_return_address(0)); \
    if (fail_) return refused

INTERPOSED int open(const char *path, int flags, ...) {
    OPEN_MODE(flags, mode);
    OPENING(AT_FDCWD, path, flags, -1);
    return R(open)(use, flags, mode);
}
INTERPOSED int open64(const char *path, int flags, ...) {
    OPEN_MODE(flags, mode);
    OPENING(AT_FDCWD, path, flags, -1);
    return R(open64)(use, flags, mode);
}
INTERPOSED int __open_2(const char *path, int flags) {
    OPENING(AT_FDCWD, path, flags, -1);
    return R(__open_2)(use, flags);
}
INTERPOSED int __open64_2(const char *path, int flags) {
    OPENING(AT_FDCWD, path, flags, -1);
    return R(__open64_2)(use, flags);
}
/* the *at forms: a path of the copy's is absolute */
INTERPOSED int openat(int dirfd, const char *path, int flags, ...) {
    OPEN_MODE(flags, mode);
    OPENING(dirfd, path, flags, -1);
    return use == path ? R(openat)(dirfd, path, flags, mode) : R(open)(use, flags, mode);
}
INTERPOSED int openat64(int dirfd, const char *path, int flags, ...) {
    OPEN_MODE(flags, mode);
    OPENING(dirfd, path, flags, -1);
    return use == path ? R(openat64)(dirfd, path, flags, mode) : R(open64)(use, flags, mode);
}
INTERPOSED int __openat_2(int dirfd, const char *path, int flags) {
    OPENING(dirfd, path, flags, -1);
    return use == path ? R(__openat_2)(dirfd, path, flags) : R(open)(use, flags, 0);
}
INTERPOSED int __openat64_2(int dirfd, const char *path, int flags) {
    OPENING(dirfd, path, flags, -1);
    return use == path ? R(__openat64_2)(dirfd, path, flags) : R(open64)(use, flags, 0);
}
INTERPOSED int creat(const char *path, mode_t mode) { return open(path, O_WRONLY | O_CREAT | O_TRUNC, mode); }
INTERPOSED int creat64(const char *path, mode_t mode) { return open64(path, O_WRONLY | O_CREAT | O_TRUNC, mode); }

INTERPOSED FILE *fopen(const char *path, const char *mode) {
    OPENING(AT_FDCWD, path, open_mode_flags(mode), NULL);
    return R(fopen)(use, mode);
}
INTERPOSED FILE *fopen64(const char *path, const char *mode) {
    OPENING(AT_FDCWD, path, open_mode_flags(mode), NULL);
    return R(fopen64)(use, mode);
}
INTERPOSED FILE *freopen(const char *path, const char *mode, FILE *stream) {
    if (!path) return R(freopen)(path, mode, stream); /* the same file in another mode */
    OPENING(AT_FDCWD, path, open_mode_flags(mode), NULL);
    return R(freopen)(use, mode, stream);
}
INTERPOSED FILE *freopen64(const char *path, const char *mode, FILE *stream) {
    if (!path) return R(freopen64)(path, mode, stream);
    OPENING(AT_FDCWD, path, open_mode_flags(mode), NULL);
    return R(freopen64)(use, mode, stream);
}

/* Whether a call changing (dirfd, path) is a copy's to redirect (`logical`: the program's name of it); if not, the
 * caller makes the real call, the representative having noted the change first (`replaces`: the call replaces or
 * removes the file, rather than writing in it). */
static int copy_changes(int dirfd, const char *path, char *logical, int replaces) {
    if (!program_path(dirfd, path, logical)) return 0;
    if (side == REP) {
        rep_changes(logical, replaces);
        return 0;
    }
    return 1;
}

/* rename: the representative sets both names aside; a copy moves the file in its tree (taking it there first
 * if it was not its own yet) and whites out the old name */
static int do_rename(int olddir, const char *old, int newdir, const char *new, unsigned flags) {
    char lold[PATH_MAX], lnew[PATH_MAX];
    int po = program_path(olddir, old, lold), pn = program_path(newdir, new, lnew);
    if (side == OFF || (!po && !pn)) return R(renameat2)(olddir, old, newdir, new, flags);
    if (side == REP || !po || !pn) { /* a copy moving a file in or out of the program's files: as it is */
        if (side == REP && po) rep_changes(lold, 1);
        if (side == REP && pn) rep_changes(lnew, 1);
        return R(renameat2)(olddir, old, newdir, new, flags);
    }
    char from[PATH_MAX], to[PATH_MAX], here[PATH_MAX];
    int v = view(lold, from);
    if (v == V_ABSENT) { errno = ENOENT; return -1; }
    if (view(lnew, here) != V_ABSENT && (flags & RENAME_NOREPLACE)) { errno = EEXIST; return -1; }
    if (!parent_exists(lnew)) return -1;
    join(to, tree, lnew);
    make_parents(to);
    if (v == V_TREE) {
        if (R(renameat2)(AT_FDCWD, from, AT_FDCWD, to, flags & ~RENAME_NOREPLACE) < 0) return -1;
    } else {
        struct stat st;
        if (R(stat)(from, &st) == 0 && S_ISDIR(st.st_mode)) { errno = EXDEV; return -1; } /* docs/fileview.md */
        if (copy_file(from, to) < 0) return -1;
    }
    copy_changed(lold, 'D');
    copy_changed(lnew, 'W');
    return 0;
}
INTERPOSED int rename(const char *old, const char *new) { return do_rename(AT_FDCWD, old, AT_FDCWD, new, 0); }
INTERPOSED int renameat(int od, const char *old, int nd, const char *new) { return do_rename(od, old, nd, new, 0); }
INTERPOSED int renameat2(int od, const char *old, int nd, const char *new, unsigned flags) {
    return do_rename(od, old, nd, new, flags);
}

/* unlink and rmdir: a copy removes its own file and whites the name out */
static int do_remove(int dirfd, const char *path, int dir) {
    char logical[PATH_MAX], where[PATH_MAX];
    if (!copy_changes(dirfd, path, logical, 1)) return R(unlinkat)(dirfd, path, dir ? AT_REMOVEDIR : 0);
    int v = view(logical, where);
    struct stat st;
    if (v == V_ABSENT || R(lstat)(where, &st) != 0) { errno = ENOENT; return -1; }
    if (dir && !S_ISDIR(st.st_mode)) { errno = ENOTDIR; return -1; }
    if (!dir && S_ISDIR(st.st_mode)) { errno = EISDIR; return -1; }
    if (v == V_TREE && R(unlinkat)(AT_FDCWD, where, dir ? AT_REMOVEDIR : 0) < 0) return -1;
    copy_changed(logical, 'D');
    return 0;
}
INTERPOSED int unlink(const char *path) { return do_remove(AT_FDCWD, path, 0); }
INTERPOSED int rmdir(const char *path) { return do_remove(AT_FDCWD, path, 1); }
INTERPOSED int unlinkat(int dirfd, const char *path, int flags) {
    return do_remove(dirfd, path, (flags & AT_REMOVEDIR) != 0);
}
INTERPOSED int remove(const char *path) {
    char logical[PATH_MAX], where[PATH_MAX];
    if (!program_path(AT_FDCWD, path, logical)) return R(remove)(path);
    struct stat st;
    int dir = side == COPY ? view(logical, where) != V_ABSENT && R(lstat)(where, &st) == 0 && S_ISDIR(st.st_mode)
                           : R(lstat)(path, &st) == 0 && S_ISDIR(st.st_mode);
    return do_remove(AT_FDCWD, path, dir);
}

/* A copy about to make `logical` (a directory, a link): absent in its view, its parent there; `where`: its path in
 * the tree, whose parents are made.  -1 with errno as the real call would set it. */
static int new_name(const char *logical, char *where) {
    if (view(logical, where) != V_ABSENT) { errno = EEXIST; return -1; }
    if (!parent_exists(logical)) return -1;
    join(where, tree, logical);
    make_parents(where);
    return 0;
}

static int do_mkdir(int dirfd, const char *path, mode_t mode) {
    char logical[PATH_MAX], where[PATH_MAX];
    if (!copy_changes(dirfd, path, logical, 0)) return R(mkdirat)(dirfd, path, mode);
    if (new_name(logical, where) < 0 || R(mkdir)(where, mode) < 0) return -1;
    copy_changed(logical, 'M');
    return 0;
}
INTERPOSED int mkdir(const char *path, mode_t mode) { return do_mkdir(AT_FDCWD, path, mode); }
INTERPOSED int mkdirat(int dirfd, const char *path, mode_t mode) { return do_mkdir(dirfd, path, mode); }

static int do_truncate(const char *path, off_t len) {
    char logical[PATH_MAX], where[PATH_MAX];
    if (!copy_changes(AT_FDCWD, path, logical, 0)) return R(truncate64)(path, len);
    if (own(logical, 0, 0, len == 0, where) < 0) return -1;
    return R(truncate64)(where, len);
}
INTERPOSED int truncate(const char *path, off_t len) { return do_truncate(path, len); }
INTERPOSED int truncate64(const char *path, off64_t len) { return do_truncate(path, len); }

/* a copy's hard link is a copy of the file in its tree (its own file either way) */
static int do_link(int od, const char *old, int nd, const char *new, int flags) {
    char lold[PATH_MAX], lnew[PATH_MAX];
    int po = program_path(od, old, lold), pn = program_path(nd, new, lnew);
    if (!pn) return R(linkat)(od, old, nd, new, flags);
    if (side == REP) {
        rep_changes(lnew, 0);
        return R(linkat)(od, old, nd, new, flags);
    }
    char from[PATH_MAX], to[PATH_MAX];
    int v = po ? view(lold, from) : V_REAL;
    if (!po) snprintf(from, sizeof from, "%s", old);
    if (v == V_ABSENT) { errno = ENOENT; return -1; }
    if (new_name(lnew, to) < 0) return -1;
    if ((v == V_TREE ? R(link)(from, to) : copy_file(from, to)) < 0) return -1;
    copy_changed(lnew, 'W');
    return 0;
}
INTERPOSED int link(const char *old, const char *new) { return do_link(AT_FDCWD, old, AT_FDCWD, new, 0); }
INTERPOSED int linkat(int od, const char *old, int nd, const char *new, int flags) {
    return do_link(od, old, nd, new, flags);
}

static int do_symlink(const char *target, int dirfd, const char *path) {
    char logical[PATH_MAX], where[PATH_MAX];
    if (!copy_changes(dirfd, path, logical, 0)) return R(symlinkat)(target, dirfd, path);
    if (new_name(logical, where) < 0 || R(symlink)(target, where) < 0) return -1;
    copy_changed(logical, 'W');
    return 0;
}
INTERPOSED int symlink(const char *target, const char *path) { return do_symlink(target, AT_FDCWD, path); }
INTERPOSED int symlinkat(const char *target, int dirfd, const char *path) {
    return do_symlink(target, dirfd, path);
}

/* ---- files made under a random name: mkstemp and its kin, mkdtemp, tmpfile ----
 * gfortran's scratch units (OPEN(STATUS='SCRATCH') is mkostemp on $TMPDIR/gfortrantmpXXXXXX, then unlink), C codes'
 * mkstemp files and directories: each process draws its own name, so a representative's and its copy's are never the
 * same path.  A copy makes its file in its own tree (under a name of its own drawing: nothing reaches the real
 * directory), and every process notes, in order, each path it made so ("T path" in its log): the copy's k-th such
 * file is its representative's k-th, and the comparison (echo/fileview.py) matches them by that rank, never by name.
 * glibc's versions make the file with its internal open, which no interposer sees: hence these. */
REAL(mkostemps64); REAL(mkdtemp); REAL(tmpfile64);

static void made_at_random(const char *logical, char code) {
    pthread_mutex_lock(&lock);
    if (side == REP) {
        set_put(&touched, logical, 1);
        write_line(log_fd, 'A', logical); /* it did not exist: the call made it exclusively */
    } else {
        set_put(&logged, logical, code);
        write_line(log_fd, code, logical);
    }
    write_line(log_fd, 'T', logical);
    pthread_mutex_unlock(&lock);
}

/* the real call on `path` (a template): a file's descriptor, or 0 for a directory; -1 with errno */
static int make_random(char *path, int suffixlen, int flags, int dir) {
    if (dir) return R(mkdtemp)(path) ? 0 : -1;
    return R(mkostemps64)(path, suffixlen, flags);
}

/* mkostemps with `dir` false, mkdtemp with it true: the program's template `tmpl` gets the name drawn */
static int random_name(char *tmpl, int suffixlen, int flags, int dir) {
    char logical[PATH_MAX], where[PATH_MAX];
    size_t len = tmpl ? strlen(tmpl) : 0;
    if (!program_path(AT_FDCWD, tmpl, logical) || suffixlen < 0 || len < (size_t)suffixlen + 6)
        return make_random(tmpl, suffixlen, flags, dir); /* not the program's, or EINVAL as the real call says */
    if (side == REP) {
        int r = make_random(tmpl, suffixlen, flags, dir);
        if (r >= 0 && program_path(AT_FDCWD, tmpl, logical)) made_at_random(logical, 0);
        return r;
    }
    if (!parent_exists(logical)) return -1;
    size_t at = strlen(logical) - (size_t)suffixlen - 6; /* the XXXXXX in the program's name */
    for (int tries = 0; tries < 100; tries++) {
        join(where, tree, logical);
        if (!where[0]) { errno = ENAMETOOLONG; return -1; }
        make_parents(where);
        int r = make_random(where, suffixlen, flags, dir);
        if (r < 0) return -1;
        char name[PATH_MAX];
        snprintf(name, sizeof name, "%s", logical);
        memcpy(name + at, where + strlen(where) - suffixlen - 6, 6);
        struct stat st;
        if (R(lstat)(name, &st) == 0) { /* a real file has the name this copy drew: draw another */
            if (r > 0) close(r);
            R(unlinkat)(AT_FDCWD, where, dir ? AT_REMOVEDIR : 0);
            continue;
        }
        memcpy(tmpl + len - suffixlen - 6, name + at, 6);
        made_at_random(name, dir ? 'M' : 'W');
        return r;
    }
    errno = EEXIST;
    return -1;
}

INTERPOSED int mkstemp(char *t) { return random_name(t, 0, 0, 0); }
INTERPOSED int mkstemp64(char *t) { return random_name(t, 0, 0, 0); }
INTERPOSED int mkostemp(char *t, int flags) { return random_name(t, 0, flags, 0); }
INTERPOSED int mkostemp64(char *t, int flags) { return random_name(t, 0, flags, 0); }
INTERPOSED int mkstemps(char *t, int suffixlen) { return random_name(t, suffixlen, 0, 0); }
INTERPOSED int mkstemps64(char *t, int suffixlen) { return random_name(t, suffixlen, 0, 0); }
INTERPOSED int mkostemps(char *t, int suffixlen, int flags) { return random_name(t, suffixlen, flags, 0); }
INTERPOSED int mkostemps64(char *t, int suffixlen, int flags) { return random_name(t, suffixlen, flags, 0); }
INTERPOSED char *mkdtemp(char *t) { return random_name(t, 0, 0, 1) < 0 ? NULL : t; }

/* tmpfile (C's, and C++'s std::tmpfile): a file without a name (glibc makes it in /tmp and unlinks it at once), so
 * nothing of it is left to compare; a copy makes it in its own tree, so that no copy's file ever shows in /tmp */
static FILE *unnamed_file(void) {
    char where[PATH_MAX];
    if (side != COPY || echo_depth) return R(tmpfile64)();
    join(where, tree, "/tmp/echo-tmpfileXXXXXX");
    make_parents(where);
    int fd = R(mkostemps64)(where, 0, O_CLOEXEC);
    if (fd < 0) return NULL;
    R(unlinkat)(AT_FDCWD, where, 0);
    fcntl(fd, F_SETFD, 0); /* tmpfile's descriptor is inherited by exec, as glibc's is */
    FILE *f = fdopen(fd, "w+");
    if (!f) close(fd);
    return f;
}
INTERPOSED FILE *tmpfile(void) { return unnamed_file(); }
INTERPOSED FILE *tmpfile64(void) { return unnamed_file(); }

/* ---- calls that only look: a copy looks at its view ---- */
/* the path a copy's look at (dirfd, path) uses: the path itself, or `buf`; NULL: absent in its view */
static const char *looking(int dirfd, const char *path, char *buf, const void *at) {
    char logical[PATH_MAX];
    const char *proc = echo_depth ? path : echo_pid_proc_path(path, buf, at); /* a copy's /proc/<pid>: echo_pid.c */
    if (proc != path) return proc;
    if (side != COPY || !program_path(dirfd, path, logical)) return path;
    if (view(logical, buf) == V_ABSENT) {
        errno = ENOENT;
        return NULL;
    }
    return buf;
}
#define LOOK(dirfd, path, fail, real_call, view_call) \
    char buf[PATH_MAX];                                \
    const char *use = looking(dirfd, path, buf, __builtin_return_address(0)); \
    if (!use) return fail;                             \
    return use == (path) ? real_call : view_call

INTERPOSED int stat(const char *path, struct stat *st) { LOOK(AT_FDCWD, path, -1, R(stat)(path, st), R(stat)(use, st)); }
INTERPOSED int stat64(const char *path, struct stat64 *st) {
    LOOK(AT_FDCWD, path, -1, R(stat64)(path, st), R(stat64)(use, st));
}
INTERPOSED int lstat(const char *path, struct stat *st) { LOOK(AT_FDCWD, path, -1, R(lstat)(path, st), R(lstat)(use, st)); }
INTERPOSED int lstat64(const char *path, struct stat64 *st) {
    LOOK(AT_FDCWD, path, -1, R(lstat64)(path, st), R(lstat64)(use, st));
}
INTERPOSED int fstatat(int dirfd, const char *path, struct stat *st, int flags) {
    if ((flags & AT_EMPTY_PATH) && empty(path)) return R(fstatat)(dirfd, path, st, flags);
    LOOK(dirfd, path, -1, R(fstatat)(dirfd, path, st, flags), R(fstatat)(AT_FDCWD, use, st, flags));
}
INTERPOSED int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags) {
    if ((flags & AT_EMPTY_PATH) && empty(path)) return R(fstatat64)(dirfd, path, st, flags);
    LOOK(dirfd, path, -1, R(fstatat64)(dirfd, path, st, flags), R(fstatat64)(AT_FDCWD, use, st, flags));
}
INTERPOSED int __xstat(int ver, const char *path, struct stat *st) {
    LOOK(AT_FDCWD, path, -1, R(__xstat)(ver, path, st), R(__xstat)(ver, use, st));
}
INTERPOSED int __xstat64(int ver, const char *path, struct stat64 *st) {
    LOOK(AT_FDCWD, path, -1, R(__xstat64)(ver, path, st), R(__xstat64)(ver, use, st));
}
INTERPOSED int __lxstat(int ver, const char *path, struct stat *st) {
    LOOK(AT_FDCWD, path, -1, R(__lxstat)(ver, path, st), R(__lxstat)(ver, use, st));
}
INTERPOSED int __lxstat64(int ver, const char *path, struct stat64 *st) {
    LOOK(AT_FDCWD, path, -1, R(__lxstat64)(ver, path, st), R(__lxstat64)(ver, use, st));
}
INTERPOSED int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags) {
    if ((flags & AT_EMPTY_PATH) && empty(path)) return R(__fxstatat)(ver, dirfd, path, st, flags);
    LOOK(dirfd, path, -1, R(__fxstatat)(ver, dirfd, path, st, flags), R(__fxstatat)(ver, AT_FDCWD, use, st, flags));
}
INTERPOSED int __fxstatat64(int ver, int dirfd, const char *path, struct stat64 *st, int flags) {
    if ((flags & AT_EMPTY_PATH) && empty(path)) return R(__fxstatat64)(ver, dirfd, path, st, flags);
    LOOK(dirfd, path, -1, R(__fxstatat64)(ver, dirfd, path, st, flags),
         R(__fxstatat64)(ver, AT_FDCWD, use, st, flags));
}
INTERPOSED int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *st) {
    if ((flags & AT_EMPTY_PATH) && empty(path)) return R(statx)(dirfd, path, flags, mask, st);
    LOOK(dirfd, path, -1, R(statx)(dirfd, path, flags, mask, st), R(statx)(AT_FDCWD, use, flags, mask, st));
}
INTERPOSED int access(const char *path, int how) { LOOK(AT_FDCWD, path, -1, R(access)(path, how), R(access)(use, how)); }
INTERPOSED int faccessat(int dirfd, const char *path, int how, int flags) {
    LOOK(dirfd, path, -1, R(faccessat)(dirfd, path, how, flags), R(faccessat)(AT_FDCWD, use, how, flags));
}
INTERPOSED int euidaccess(const char *path, int how) {
    LOOK(AT_FDCWD, path, -1, R(euidaccess)(path, how), R(euidaccess)(use, how));
}
INTERPOSED int eaccess(const char *path, int how) { LOOK(AT_FDCWD, path, -1, R(eaccess)(path, how), R(eaccess)(use, how)); }
INTERPOSED DIR *opendir(const char *path) { LOOK(AT_FDCWD, path, NULL, R(opendir)(path), R(opendir)(use)); }
INTERPOSED ssize_t readlink(const char *path, char *out, size_t len) {
    LOOK(AT_FDCWD, path, -1, R(readlink)(path, out, len), R(readlink)(use, out, len));
}
INTERPOSED ssize_t readlinkat(int dirfd, const char *path, char *out, size_t len) {
    LOOK(dirfd, path, -1, R(readlinkat)(dirfd, path, out, len), R(readlinkat)(AT_FDCWD, use, out, len));
}

/* which mechanism keeps the copies' files apart, for the plan's summary and the report */
const char *echo_fileview_mechanism(void) { return side == OFF ? "off" : "libc interposition"; }
