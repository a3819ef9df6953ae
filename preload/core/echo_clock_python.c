/* Clocks of a Python program under clones.
 *
 * CPython reads CLOCK_MONOTONIC through libc for its own timed waits (taking the
 * GIL back from another thread, locks and conditions with timeouts) as many
 * times as thread scheduling makes it, so the count of libc readings on the
 * thread that initialized MPI differs between a representative and its copy:
 * shared in order, a copy would take readings of other calls, compute wrong
 * elapsed times and time out its own waits early.  So the interpreter's libc
 * readings are left alone (echo_clock_not_application), and the program's own
 * readings are taken where a Python program takes them: the time module's
 * time, monotonic, perf_counter, process_time and thread_time (and their _ns
 * forms) become echo's, which read the same clocks and share them as libc's
 * readings are shared (echo_clock_read).  Names bound before MPI_Init
 * (`from time import perf_counter`) in the program's own modules are replaced
 * too; the standard library's are not (threading binds monotonic for its own
 * waits).  mpi4py's MPI.Wtime is MPI_Wtime, shared in echo_clock.c.
 *
 * Python's C API is reached with dlsym (only when the process is a running
 * interpreter), through functions of its stable ABI, so libecho needs no
 * Python headers and works with any CPython 3. */
#define _GNU_SOURCE
#include "echo_internal.h"
#include "echo_records.h"

#include <dlfcn.h>
#include <stdio.h>

typedef struct object object; /* PyObject, used only through pointers */
typedef object *(*py_cfunction)(object *, object *);
typedef struct {               /* PyMethodDef (stable ABI) */
    const char *name;
    py_cfunction meth;
    int flags;
    const char *doc;
} method_def;
#define METH_NOARGS 0x0004
#define PY_FILE_INPUT 257

static struct {
    int (*is_initialized)(void);
    int (*gil_ensure)(void);
    void (*gil_release)(int);
    object *(*new_function)(method_def *, object *, object *);
    object *(*new_dict)(void);
    int (*dict_set)(object *, const char *, object *);
    object *(*builtins)(void);
    object *(*run)(const char *, int, object *, object *, void *);
    object *(*from_double)(double);
    object *(*from_long_long)(long long);
    void (*decref)(object *);
    void (*print_error)(void);
} py;

static int resolve_python(void) {
#define FIND(field, name) \
    if (!(*(void **)&py.field = dlsym(RTLD_DEFAULT, name))) return 0
    FIND(is_initialized, "Py_IsInitialized");
    FIND(gil_ensure, "PyGILState_Ensure");
    FIND(gil_release, "PyGILState_Release");
    FIND(new_function, "PyCFunction_NewEx");
    FIND(new_dict, "PyDict_New");
    FIND(dict_set, "PyDict_SetItemString");
    FIND(builtins, "PyEval_GetBuiltins");
    FIND(run, "PyRun_StringFlags");
    FIND(from_double, "PyFloat_FromDouble");
    FIND(from_long_long, "PyLong_FromLongLong");
    FIND(decref, "Py_DecRef");
    FIND(print_error, "PyErr_Print");
#undef FIND
    return py.is_initialized();
}

static object *seconds(clockid_t id) {
    struct timespec ts = {0, 0};
    echo_clock_read(id, &ts);
    return py.from_double((double)ts.tv_sec + (double)ts.tv_nsec * 1e-9);
}

static object *nanoseconds(clockid_t id) {
    struct timespec ts = {0, 0};
    echo_clock_read(id, &ts);
    return py.from_long_long((long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
}

/* CPython 3 on Linux: time.time is CLOCK_REALTIME, monotonic and perf_counter CLOCK_MONOTONIC */
#define CLOCK_FUNCTIONS(name, id)                                                        \
    static object *name(object *self, object *none) {                                    \
        (void)self, (void)none;                                                          \
        return seconds(id);                                                              \
    }                                                                                    \
    static object *name##_ns(object *self, object *none) {                               \
        (void)self, (void)none;                                                          \
        return nanoseconds(id);                                                          \
    }
CLOCK_FUNCTIONS(py_time, CLOCK_REALTIME)
CLOCK_FUNCTIONS(py_monotonic, CLOCK_MONOTONIC)
CLOCK_FUNCTIONS(py_perf_counter, CLOCK_MONOTONIC)
CLOCK_FUNCTIONS(py_process_time, CLOCK_PROCESS_CPUTIME_ID)
CLOCK_FUNCTIONS(py_thread_time, CLOCK_THREAD_CPUTIME_ID)

#define DEFS(name) {#name, py_##name, METH_NOARGS, NULL}, {#name "_ns", py_##name##_ns, METH_NOARGS, NULL}
static method_def clocks[] = {DEFS(time), DEFS(monotonic), DEFS(perf_counter), DEFS(process_time),
                              DEFS(thread_time)};

/* Installs `echo_clocks` (name -> echo's function) in the time module and in the program's modules. */
static const char install[] =
    "import sys, time\n"
    "old = {name: getattr(time, name) for name in echo_clocks if hasattr(time, name)}\n"
    "for name in old:\n"
    "    setattr(time, name, echo_clocks[name])\n"
    "std = getattr(sys, 'stdlib_module_names', ())\n"
    "for modname, module in list(sys.modules.items()):\n"
    "    if modname != '__main__' and (modname.partition('.')[0] in std or modname.startswith(('mpi4py', '_'))):\n"
    "        continue\n"
    "    names = getattr(module, '__dict__', None)\n"
    "    if not isinstance(names, dict):\n"
    "        continue\n"
    "    for key, value in list(names.items()):\n"
    "        for name, original in old.items():\n"
    "            if value is original:\n"
    "                names[key] = echo_clocks[name]\n";

void echo_clock_python_setup(void) {
    if (!resolve_python()) return; /* not a Python program */
    Dl_info info;
    if (dladdr((void *)py.is_initialized, &info) && info.dli_fname)
        echo_clock_not_application(info.dli_fname); /* libpython, or the python executable itself */
    int gil = py.gil_ensure();
    object *scope = py.new_dict(), *table = py.new_dict(), *done = NULL;
    int ok = scope && table && py.dict_set(scope, "__builtins__", py.builtins()) == 0 &&
             py.dict_set(scope, "echo_clocks", table) == 0;
    for (size_t i = 0; ok && i < sizeof clocks / sizeof *clocks; i++) {
        object *function = py.new_function(&clocks[i], NULL, NULL);
        ok = function && py.dict_set(table, clocks[i].name, function) == 0;
        if (function) py.decref(function);
    }
    if (ok) done = py.run(install, PY_FILE_INPUT, scope, scope, NULL);
    if (!done) {
        py.print_error(); /* clears Python's error; the program goes on with its copies' own clocks */
        echo_event("clocks-apart", "clock", echo_record_seq(), -1, -1, 0, echo.copy, -1,
                   "echo could not give the Python time module the representative's clocks");
    } else {
        py.decref(done);
    }
    if (table) py.decref(table);
    if (scope) py.decref(scope);
    py.gil_release(gil);
}
