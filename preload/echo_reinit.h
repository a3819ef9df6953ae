/* Reinit: global restart without re-deploying the job (echorun --mode reinit).
 *
 *   int resilient_main(int argc, char **argv, MPI_Reinit_state_t state) {...}
 *   int main(int argc, char **argv) {
 *       MPI_Init(&argc, &argv);
 *       MPI_Reinit(&argc, &argv, resilient_main);
 *       MPI_Finalize();
 *   }
 *
 * MPI_Reinit calls resilient_main with MPI_REINIT_NEW.  When a process of the
 * job fails, the survivors return to MPI_Reinit (the state of their MPI calls
 * is discarded as after MPI_Init) and call resilient_main again with
 * MPI_REINIT_REINITED; the failed ranks are started again, keep their rank
 * numbers, and call it with MPI_REINIT_RESTARTED.  Build with the flags of
 * `mpiecho --cflags`: nothing to link (the library comes with echorun); a
 * program run without echorun just calls resilient_main once, NEW.
 *
 * Checkpoints (the state a restart resumes from), collective over
 * MPI_COMM_WORLD: store named buffers, commit a version; after a restart ask
 * for the latest version every rank has and load it. */
#ifndef ECHO_REINIT_H
#define ECHO_REINIT_H
#include <stddef.h>

typedef enum { MPI_REINIT_NEW, MPI_REINIT_REINITED, MPI_REINIT_RESTARTED } MPI_Reinit_state_t;
typedef int (*MPI_Restart_point)(int argc, char **argv, MPI_Reinit_state_t state);

/* in the echo library; to a program, weak: absent when it runs without echorun */
#ifdef ECHO_LIBRARY
#define ECHO_REINIT_API __attribute__((visibility("default")))
#else
#define ECHO_REINIT_API __attribute__((weak))
#endif
ECHO_REINIT_API int echo_reinit_run(int *argc, char ***argv, MPI_Restart_point resilient_main);
ECHO_REINIT_API int echo_ckpt_store(const char *name, const void *buf, size_t len);
ECHO_REINIT_API int echo_ckpt_commit(int version);
ECHO_REINIT_API int echo_ckpt_latest(void);
ECHO_REINIT_API int echo_ckpt_load(const char *name, void *buf, size_t len);

#ifndef ECHO_LIBRARY
static inline int MPI_Reinit(int *argc, char ***argv, MPI_Restart_point resilient_main) {
    if (echo_reinit_run) return echo_reinit_run(argc, argv, resilient_main);
    return resilient_main(*argc, *argv, MPI_REINIT_NEW);
}

/* store `len` bytes under `name` in the version being prepared */
static inline int echo_checkpoint_store(const char *name, const void *buf, size_t len) {
    return echo_ckpt_store ? echo_ckpt_store(name, buf, len) : 0;
}
/* make `version` (>= 0, increasing) the checkpoint of this rank: collective */
static inline int echo_checkpoint_commit(int version) { return echo_ckpt_commit ? echo_ckpt_commit(version) : 0; }
/* the latest version committed by every rank, -1 if none: collective */
static inline int echo_checkpoint_latest(void) { return echo_ckpt_latest ? echo_ckpt_latest() : -1; }
/* copy `name` of the latest version into buf (at most len bytes); 0, or -1 if it has no such buffer */
static inline int echo_checkpoint_load(const char *name, void *buf, size_t len) {
    return echo_ckpt_load ? echo_ckpt_load(name, buf, len) : -1;
}
#endif
#endif
