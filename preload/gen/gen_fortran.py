"""Fortran entry points of the echo preload library (rendered by gen_wrappers.py at build time).

Open MPI's Fortran bindings (mpif.h, `use mpi`, `use mpi_f08`) call PMPI_* themselves, so the C wrappers see
nothing of a Fortran program.  Where the MPI's Fortran layer bypasses the C symbols (preload/compat says so:
ECHO_FORTRAN_ENTRY_POINTS), echo gives every function it can convert its Fortran symbols: `mpi_send_`,
`mpi_send__`, `mpi_send` and `MPI_SEND` (the names compilers give mpif.h's and `use mpi`'s calls), and Open
MPI's `ompi_send_f`, which its mpi_f08 module calls.  Each converts the Fortran arguments (handles by
MPI_X_f2c/c2f, status arrays, the MPI_IN_PLACE / MPI_BOTTOM / MPI_STATUS(ES)_IGNORE sentinels, which are
addresses of Fortran common blocks, found as the MPI finds them) and calls the C wrapper: the same semantics.
On MPICH mpif.h and `use mpi` call the C MPI_* symbols, which the C wrappers already are, but mpi_f08 calls
PMPI_*: there (ECHO_FORTRAN_F08_ENTRY_POINTS) echo gives mpi_f08's symbols only, `mpi_send_f08_` or, for a
function with choice buffers, `mpi_send_f08ts_`, whose buffers come as gfortran array descriptors.

Strings (MPI_File_open's file name, MPI_Info_set's key and value, MPI_Comm_get_name's result) come with a
hidden length after the arguments (gfortran's size_t, Open MPI's mpi_f08 an int by value: the low 32 bits
either way): blank-padded, converted as the MPI's own binding converts them (leading and trailing blanks dropped
going in, the result blank-padded coming out); on Open MPI only (MPICH's mpif.h calls the C symbols).

Handles are converted by the mode's own conversion (echo_calls), never by the wrapped MPI_X_f2c/c2f: those are
the application's calls to `mpiecho report`, and echo's own conversions are not.

A function with an argument this cannot convert (callbacks, arrays of strings, arrays of handles with no count)
keeps the MPI's own binding: all of them are process-local calls (error handlers, user ops, keyvals, spawn's
commands).
"""

from __future__ import annotations

import re

HANDLES = ["MPI_Comm", "MPI_Datatype", "MPI_Op", "MPI_Group", "MPI_Info", "MPI_Request", "MPI_Errhandler",
           "MPI_Win", "MPI_Message", "MPI_File"]
WIDE = ["MPI_Aint", "MPI_Offset", "MPI_Count"]
COUNT_NAMES = ("count", "incount")  # the length of the arrays of handles and statuses of a call


# Fortran parameter and the C argument made of it, for the kinds passed without a temporary
SIMPLE = {"buf": ("void *{n}", "f_buf({n})"), "int": ("MPI_Fint *{n}", "(int)*{n}"),
          "ints": ("MPI_Fint *{n}", "(int *){n}"), "wide": ("{t} *{n}", "*{n}"), "wides": ("{t} *{n}", "{n}"),
          "handle": ("MPI_Fint *{n}", "{f2c}(*{n})")}


def conv(handle: str) -> str:
    """The prefix of a handle type's f2c/c2f conversions (MPI_Datatype's are MPI_Type_f2c/c2f)."""
    return "MPI_Type" if handle == "MPI_Datatype" else handle


SENTINELS = """
/* Fortran's sentinels are common blocks: compared by address, under every name a compiler may give them */
#define ECHO_F_SENTINEL(n) extern int n __attribute__((weak, visibility("default")));
#define ECHO_F_SENTINELS(base) ECHO_F_SENTINEL(base) ECHO_F_SENTINEL(base##_) ECHO_F_SENTINEL(base##__)
ECHO_F_SENTINELS(mpi_fortran_in_place) ECHO_F_SENTINELS(mpi_fortran_bottom)
ECHO_F_SENTINELS(mpi_fortran_status_ignore) ECHO_F_SENTINELS(mpi_fortran_statuses_ignore)
ECHO_F_SENTINEL(MPI_FORTRAN_IN_PLACE) ECHO_F_SENTINEL(MPI_FORTRAN_BOTTOM)
ECHO_F_SENTINEL(MPI_FORTRAN_STATUS_IGNORE) ECHO_F_SENTINEL(MPI_FORTRAN_STATUSES_IGNORE)
#define ECHO_F_IS(p, base, BASE) \\
    ((p) && ((void *)(p) == (void *)&base || (void *)(p) == (void *)&base##_ || (void *)(p) == (void *)&base##__ \\
             || (void *)(p) == (void *)&BASE))
/* MPICH's mpi_f08 has its own: the statuses' are the standard's C constants MPI_F08_STATUS(ES)_IGNORE */
ECHO_F_SENTINEL(MPIR_F08_MPI_IN_PLACE) ECHO_F_SENTINEL(MPIR_F08_MPI_BOTTOM)
/* MPICH 4.0's mpi_f08 counts the indices of MPI_Waitany, _Testany, _Waitsome, _Testsome from 0 (its bug: its
 * `use mpi` counts from 1): a program gets from echo what it gets from its MPI */
#define F_INDEX_BASE (ECHO_FORTRAN_ENTRY_POINTS ? 1 : 0)
#define ECHO_F08_IS(p, name) (ECHO_FORTRAN_F08_ENTRY_POINTS && (p) && (void *)(p) == (void *)&name)
#if ECHO_FORTRAN_F08_ENTRY_POINTS
#define ECHO_F08_STATUS_IGNORE MPI_F08_STATUS_IGNORE
#define ECHO_F08_STATUSES_IGNORE MPI_F08_STATUSES_IGNORE
#else
#define ECHO_F08_STATUS_IGNORE NULL
#define ECHO_F08_STATUSES_IGNORE NULL
#endif
static void *f_buf(void *p) {
    if (ECHO_F_IS(p, mpi_fortran_in_place, MPI_FORTRAN_IN_PLACE) || ECHO_F08_IS(p, MPIR_F08_MPI_IN_PLACE))
        return MPI_IN_PLACE;
    if (ECHO_F_IS(p, mpi_fortran_bottom, MPI_FORTRAN_BOTTOM) || ECHO_F08_IS(p, MPIR_F08_MPI_BOTTOM))
        return MPI_BOTTOM;
    return p;
}
/* A Fortran string (blank-padded, `len` long) as a C string, as the MPI's binding makes it: leading and trailing
 * blanks dropped.  An output string's buffer (`out`) is longer than the Fortran one: the MPI writes up to its
 * MPI_MAX_* and f_string_out cuts what does not fit. */
#define F_STRING_SLACK 8192
static char *f_string_in(const char *f, int len, int out) {
    if (len < 0) len = 0;
    char *c = calloc((size_t)len + (out ? F_STRING_SLACK : 0) + 1, 1);
    if (!c) echo_fatal("out of memory converting a Fortran string of %d characters", len);
    if (out) return c;
    int first = 0, last = len;
    while (first < len && f[first] == ' ') first++;
    while (last > first && f[last - 1] == ' ') last--;
    memcpy(c, f + first, (size_t)(last - first));
    return c;
}
static void f_string_out(const char *c, char *f, int len) {
    int n = (int)strnlen(c, (size_t)(len > 0 ? len : 0));
    memcpy(f, c, (size_t)n);
    memset(f + n, ' ', (size_t)(len - n));
}
static int f_status_ignored(MPI_Fint *s) {
    return ECHO_F_IS(s, mpi_fortran_status_ignore, MPI_FORTRAN_STATUS_IGNORE)
        || (ECHO_F08_STATUS_IGNORE && (void *)s == (void *)ECHO_F08_STATUS_IGNORE);
}
static int f_statuses_ignored(MPI_Fint *s) {
    return ECHO_F_IS(s, mpi_fortran_statuses_ignore, MPI_FORTRAN_STATUSES_IGNORE)
        || (ECHO_F08_STATUSES_IGNORE && (void *)s == (void *)ECHO_F08_STATUSES_IGNORE);
}

/* gfortran's descriptor of an assumed-rank argument (GCC >= 8): MPICH's mpi_f08 takes choice buffers as
 * `type(*), dimension(..)`.  Strides count elements of `span` bytes. */
typedef struct { ptrdiff_t stride, lbound, ubound; } f_dim;
typedef struct {
    void *base;
    size_t offset, elem_len;
    int version;
    signed char rank, type;
    short attribute;
    ptrdiff_t span;
    f_dim dim[15];
} f_desc;
/* The buffer of a contiguous array (or a scalar); a strided section would need a datatype of its layout
 * (MPICH builds one): echo stops, naming the call, rather than send the wrong bytes. */
static void *f_desc_buf(f_desc *d, const char *call) {
    ptrdiff_t expect = 1;
    int contiguous = d->rank == 0 || d->span == (ptrdiff_t)d->elem_len;
    for (int i = 0; i < d->rank && contiguous; i++) {
        ptrdiff_t extent = d->dim[i].ubound - d->dim[i].lbound + 1;
        if (extent > 1 && d->dim[i].stride != expect) contiguous = 0;
        expect *= extent > 0 ? extent : 0;
    }
    if (!contiguous)
        echo_fatal("%s: a non-contiguous array section as a buffer of `use mpi_f08` on MPICH is not supported "
                   "by echo yet: pass a contiguous array (or describe the layout with a datatype)", call);
    return f_buf(d->base);
}
"""


def _kind(ctype: str, decl: str, name: str) -> tuple[str, str] | None:
    """(how, base type) of a C parameter, or None when it cannot be converted."""
    t = ctype.replace("const ", "").strip()
    # an array by its brackets or by its name: Open MPI 4.1's mpi.h declares `MPI_Status *array_of_statuses`
    # (taken for one status, the statuses of MPI_Waitall overflowed its buffer: the stack, or the common block
    # of MPI_STATUSES_IGNORE)
    array = decl.rstrip().endswith("]") or name.startswith("array_of_")
    if (t == "char *" and not array) or (t == "char" and array):  # `const char datarep[]` too; not argv's `char *[]`
        return ("string" if ctype.startswith("const") else "string_out", "char")
    if array and t.endswith("*"):
        t = t[:-1].strip()
    if t in ("void *",):
        return ("buf", "void")
    if t == "int" and not array:
        return ("int", "int")
    if t in ("int", "int *", "int*") or (t == "int" and array):
        return ("ints", "int")
    for w in WIDE:
        if t == w and not array:
            return ("wide", w)
        if t in (f"{w} *", w):
            return ("wides", w)
    for h in HANDLES:
        if t == h and not array:
            return ("handle", h)
        if t == f"{h} *" and not array:
            return ("handle_out", h)
        if t == h and array:
            return ("handles", h)
    if t == "MPI_Status *" and not array:
        return ("status", "MPI_Status")
    if t == "MPI_Status" and array:
        return ("statuses", "MPI_Status")
    return None


def entry_point(p, calls: dict[str, str]) -> list[str] | None:  # noqa: ANN001 (gen_wrappers.Prototype)
    """C source of one function's Fortran entry points, or None when it keeps the MPI's own binding. `calls`: how
    echo converts a handle without recording a call (gen_wrappers: the mode's entry, or the real PMPI_X)."""
    if p.ret not in ("int", "double") or p.name.endswith(("_c2f", "_f2c", "_c", "_f2f08", "_f082f", "_c2f08",
                                                          "_f082c")) or p.name.startswith("MPI_T_"):
        return None  # MPI_T has no Fortran binding

    # a conversion `calls` does not name is a macro of mpi.h (MPICH: a cast), whose stand-in PMPI_X stops the job
    def f2c(handle: str) -> str:
        return calls.get(f"{conv(handle)}_f2c", f"{conv(handle)}_f2c")

    def c2f(handle: str) -> str:
        return calls.get(f"{conv(handle)}_c2f", f"{conv(handle)}_c2f")
    lower = p.name.lower()
    base = lower[len("mpi_"):]
    # mpif.h's and `use mpi`'s names, then Open MPI's own: mpi_f08's bindings (mpi_x_f08_) call ompi_x_f,
    # except those with a LOGICAL argument (MPI_Test, MPI_Iprobe, MPI_Cart_create...), which call the profiling
    # pmpi_x_ in Open MPI 4.1: those are reached only by taking mpi_x_f08_ itself
    names = [f"{lower}_", f"{lower}__", lower, p.name.upper(), f"ompi_{base}_f", f"{lower}_f08_"]
    if p.ret == "double":
        if p.names:
            return None
        return ["#if ECHO_FORTRAN_ENTRY_POINTS",
                *[f"ECHO_PUBLIC double {n}(void) {{ return {p.name}(); }}" for n in names],
                "#elif ECHO_FORTRAN_F08_ENTRY_POINTS",
                f"ECHO_PUBLIC double {lower}_f08_(void) {{ return {p.name}(); }}", "#endif"]
    if p.name == "MPI_Init":
        fparams, pre, args = ["MPI_Fint *ierr"], [], "NULL, NULL"
    elif p.name == "MPI_Init_thread":
        fparams, pre, args = ["MPI_Fint *required", "MPI_Fint *provided", "MPI_Fint *ierr"], [], \
            "NULL, NULL, *required, provided"
    else:
        kinds = [_kind(t, d, n) for t, d, n in zip(p.types, p.decls, p.names, strict=True)]
        if any(k is None for k in kinds):
            return None
        count = next((n for n, k in zip(p.names, kinds, strict=True) if k[0] == "int" and n in COUNT_NAMES), None)
        if any(k[0] in ("handles", "statuses") for k in kinds) and count is None:
            return None
        fparams, pre, post, call, lengths = [], [], [], [], []
        for name, (how, base_t) in zip(p.names, kinds, strict=True):
            if how in SIMPLE:
                fparam, arg = SIMPLE[how]
                fparams.append(fparam.format(n=name, t=base_t))
                call.append(arg.format(n=name, t=base_t, f2c=f2c(base_t) if how == "handle" else ""))
            elif how in ("string", "string_out"):
                fparams.append(f"char *{name}")
                lengths.append(f"int {name}_len")
                pre.append(f"char *c_{name} = f_string_in({name}, {name}_len, {int(how == 'string_out')});")
                call.append(f"c_{name}")
                if how == "string_out":  # MPI_Info_get leaves the value as it is when the key is not there
                    found = " && *flag" if "flag" in p.names else ""
                    post.append(f"if (rc == MPI_SUCCESS{found}) f_string_out(c_{name}, {name}, {name}_len);")
                post.append(f"free(c_{name});")
            elif how == "handle_out":  # in, out or both: converted both ways
                fparams.append(f"MPI_Fint *{name}")
                pre.append(f"{base_t} c_{name} = {f2c(base_t)}(*{name});")
                call.append(f"&c_{name}")
                post.append(f"*{name} = {c2f(base_t)}(c_{name});")
            elif how == "handles":
                fparams.append(f"MPI_Fint *{name}")
                pre.append(f"int n_{name} = *{count} > 0 ? *{count} : 0;")
                pre.append(f"{base_t} c_{name}[n_{name} + 1];")
                pre.append(f"for (int i = 0; i < n_{name}; i++) c_{name}[i] = {f2c(base_t)}({name}[i]);")
                call.append(f"c_{name}")
                post.append(f"for (int i = 0; i < n_{name}; i++) {name}[i] = {c2f(base_t)}(c_{name}[i]);")
            elif how == "status":
                fparams.append(f"MPI_Fint *{name}")
                pre.append(f"MPI_Status c_{name};")
                # in (MPI_Get_count, MPI_Test_cancelled), out or both: converted both ways
                pre.append(f"if (!f_status_ignored({name})) PMPI_Status_f2c({name}, &c_{name});")
                call.append(f"f_status_ignored({name}) ? MPI_STATUS_IGNORE : &c_{name}")
                post.append(f"if (!f_status_ignored({name}) && rc == MPI_SUCCESS) "
                            f"PMPI_Status_c2f(&c_{name}, {name});")
            elif how == "statuses":
                fparams.append(f"MPI_Fint *{name}")
                pre.append(f"int n_{name} = *{count} > 0 ? *{count} : 0;")
                pre.append(f"MPI_Status c_{name}[n_{name} + 1];")
                call.append(f"f_statuses_ignored({name}) ? MPI_STATUSES_IGNORE : c_{name}")
                # MPI_Testsome and MPI_Waitsome fill the first outcount only
                filled = "(*outcount == MPI_UNDEFINED ? 0 : *outcount)" if "outcount" in p.names else f"n_{name}"
                post.append(f"if (!f_statuses_ignored({name}) && (rc == MPI_SUCCESS || rc == MPI_ERR_IN_STATUS)) "
                            f"for (int i = 0; i < {filled}; i++) "
                            f"PMPI_Status_c2f(&c_{name}[i], {name} + i * (MPI_STATUS_SIZE_F));")
        # Fortran counts from 1: the indices of completed requests (F_INDEX_BASE: as the MPI's binding counts)
        index = next((n for n in ("index", "indx") if n in p.names), None)
        if index:
            post.append(f"if (rc == MPI_SUCCESS && *{index} != MPI_UNDEFINED) *{index} += F_INDEX_BASE;")
        if "array_of_indices" in p.names and "outcount" in p.names:
            post.append("if (rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED) "
                        "for (int i = 0; i < *outcount; i++) array_of_indices[i] += F_INDEX_BASE;")
        fparams.append("MPI_Fint *ierr")
        fparams += lengths  # a string's hidden length comes after every argument, in the strings' order
        args = ", ".join(call)
        body = [f"static void f_{base}({', '.join(fparams)}) {{", *[f"    {x}" for x in pre],
                f"    int rc = {p.name}({args});", *[f"    {x}" for x in post],
                "    if (ierr) *ierr = rc;", "}"]
        return body + _exported(p, base, names, fparams, bool(lengths))
    body = [f"static void f_{base}({', '.join(fparams)}) {{ int rc = {p.name}({args}); if (ierr) *ierr = rc; }}"]
    return body + _exported(p, base, names, fparams)


SCRUB = "if (echo_stack_scrub) echo_stack_scrubbed(0);"

# mpi_f08's `type(c_ptr)` arguments: addresses, not choice buffers
C_POINTERS = ("baseptr", "buffer_addr")


def _exported(p, base: str, names: list[str], fparams: list[str], strings: bool = False) -> list[str]:  # noqa: ANN001
    """The exported symbols of one function, calling its f_x: Open MPI's names, or MPICH's mpi_f08 ones (its
    mpif.h and `use mpi` call the C MPI_* symbols, its mpi_f08 calls PMPI_*): mpi_x_f08_, or mpi_x_f08ts_ for
    a function with choice buffers, which come as gfortran array descriptors (`type(*), dimension(..)`).
    A function with strings has Open MPI's names only (MPICH's mpi_f08 converts strings itself, untried)."""
    params = ", ".join(fparams)
    fargs = [re.sub(r".*[ *]", "", f) for f in fparams]
    out = ["#if ECHO_FORTRAN_ENTRY_POINTS"]
    # the stack below the program's frame zeroed again after this entry point's own frame (core/echo_stack.c)
    out += [f"ECHO_PUBLIC void {n}({params}) {{ f_{base}({', '.join(fargs)}); {SCRUB} }}" for n in names]
    if strings:
        return [*out, "#endif"]
    bufs = [n for n, t in zip(p.names, p.types, strict=True)
            if t.replace("const ", "").strip() == "void *" and n not in C_POINTERS]
    lower = p.name.lower()
    if bufs and p.name not in ("MPI_Init", "MPI_Init_thread"):
        dparams = ", ".join(f"f_desc *{n}" if n in bufs else f for n, f in zip(fargs, fparams, strict=True))
        call = ", ".join(f'f_desc_buf({n}, "{p.name}")' if n in bufs else n for n in fargs)
        f08 = f"ECHO_PUBLIC void {lower}_f08ts_({dparams}) {{ f_{base}({call}); {SCRUB} }}"
    else:
        f08 = f"ECHO_PUBLIC void {lower}_f08_({params}) {{ f_{base}({', '.join(fargs)}); {SCRUB} }}"
    return out + ["#elif ECHO_FORTRAN_F08_ENTRY_POINTS", f08, "#endif"]


def render(protos: dict, calls: dict[str, str]) -> str:
    out = ["", "/* ---- Fortran entry points (preload/gen/gen_fortran.py) ---- */",
           "#if ECHO_FORTRAN_ENTRY_POINTS || ECHO_FORTRAN_F08_ENTRY_POINTS",
           "#define MPI_STATUS_SIZE_F ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))", SENTINELS]
    done = 0
    for name in sorted(protos):
        lines = entry_point(protos[name], calls)
        if lines:
            out += lines + [""]
            done += 1
    out += [f"/* {done} of {len(protos)} functions have Fortran entry points here */", "#endif", ""]
    return "\n".join(out)
