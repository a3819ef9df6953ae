/* Public API of the echo preload library: which copy this process is.
 * echo/lib.py reads the declarations below through cffi (ABI mode): keep
 * them plain C, one per line, each starting with ECHO_API. */
#ifndef ECHO_H
#define ECHO_H
#include <stddef.h>
#define ECHO_API __attribute__((visibility("default")))
ECHO_API int echo_app_rank(void);         /* rank the application sees; -1 outside echorun */
ECHO_API int echo_copy_index(void);       /* 0 = the representative */
ECHO_API int echo_copies(void);           /* copies of this application rank */
ECHO_API int echo_is_cloned(void);        /* 1 when some rank of the job has copies */
ECHO_API const char *echo_role(void);     /* this copy's role, as the plan names it */
ECHO_API const char *echo_run_dir(void);  /* where this run's files go */
ECHO_API int echo_reinit_begin(void);     /* Python's echo.reinit: state 0 new, 2 restarted; failures return */
ECHO_API void echo_reinit_end(void);
ECHO_API int echo_reinit_error_code(void); /* what a call returns when the world was re-initialized */
ECHO_API int echo_reinit_repairs(void);    /* how many times this process took part in a repair */
ECHO_API int echo_ckpt_store(const char *name, const void *buf, size_t len); /* checkpoints: echo_reinit.h */
ECHO_API int echo_ckpt_commit(int version);
ECHO_API int echo_ckpt_latest(void);
ECHO_API int echo_ckpt_load(const char *name, void *buf, size_t len);
#endif
