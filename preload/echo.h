/* Public API of the echo preload library: which copy this process is.
 * echo/lib.py reads the declarations below through cffi (ABI mode): keep
 * them plain C, one per line, each starting with ECHO_API. */
#ifndef ECHO_H
#define ECHO_H
#define ECHO_API __attribute__((visibility("default")))
ECHO_API int echo_app_rank(void);         /* rank the application sees; -1 outside echorun */
ECHO_API int echo_copy_index(void);       /* 0 = the representative */
ECHO_API int echo_copies(void);           /* copies of this application rank */
ECHO_API int echo_is_cloned(void);        /* 1 when some rank of the job has copies */
ECHO_API const char *echo_role(void);     /* this copy's role, as the plan names it */
ECHO_API const char *echo_run_dir(void);  /* where this run's files go */
#endif
