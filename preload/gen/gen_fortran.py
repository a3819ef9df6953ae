"""Fortran entry points of the echo preload library (rendered by gen_wrappers.py at build time).

Open MPI's Fortran bindings (mpif.h, `use mpi`, `use mpi_f08`) call PMPI_* themselves, so the C wrappers see
nothing of a Fortran program.  Where the MPI's Fortran layer bypasses the C symbols (preload/compat says so:
ECHO_FORTRAN_ENTRY_POINTS), echo gives every function it can convert its Fortran symbols: `mpi_send_`,
`mpi_send__`, `mpi_send` and `MPI_SEND` (the names compilers give mpif.h's and `use mpi`'s calls), and Open
MPI's `ompi_send_f`, which its mpi_f08 module calls.  Each converts the Fortran arguments (handles by
MPI_X_f2c/c2f, status arrays, the MPI_IN_PLACE / MPI_BOTTOM / MPI_STATUS(ES)_IGNORE sentinels, which are
addresses of Fortran common blocks, found as the MPI finds them) and calls the C wrapper: the same semantics.
On MPICH the Fortran layer calls the C MPI_* symbols, which the C wrappers already are.

A function with an argument this cannot convert (strings, callbacks, arrays of handles with no count) keeps
the MPI's own binding: all of them are process-local calls (names, info keys, error handlers, user ops).
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
          "handle": ("MPI_Fint *{n}", "{c}_f2c(*{n})")}


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
static void *f_buf(void *p) {
    if (ECHO_F_IS(p, mpi_fortran_in_place, MPI_FORTRAN_IN_PLACE)) return MPI_IN_PLACE;
    if (ECHO_F_IS(p, mpi_fortran_bottom, MPI_FORTRAN_BOTTOM)) return MPI_BOTTOM;
    return p;
}
static int f_status_ignored(MPI_Fint *s) { return ECHO_F_IS(s, mpi_fortran_status_ignore, MPI_FORTRAN_STATUS_IGNORE); }
static int f_statuses_ignored(MPI_Fint *s) {
    return ECHO_F_IS(s, mpi_fortran_statuses_ignore, MPI_FORTRAN_STATUSES_IGNORE);
}
"""


def _kind(ctype: str, decl: str) -> tuple[str, str] | None:
    """(how, base type) of a C parameter, or None when it cannot be converted."""
    t = ctype.replace("const ", "").strip()
    array = decl.rstrip().endswith("]")
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


def entry_point(p) -> list[str] | None:  # noqa: ANN001 (gen_wrappers.Prototype)
    """C source of one function's Fortran entry points, or None when it keeps the MPI's own binding."""
    if p.ret not in ("int", "double") or p.name.endswith(("_c2f", "_f2c", "_c", "_f2f08", "_f082f", "_c2f08",
                                                          "_f082c")):
        return None
    lower = p.name.lower()
    base = lower[len("mpi_"):]
    names = [f"{lower}_", f"{lower}__", lower, p.name.upper(), f"ompi_{base}_f"]
    if p.ret == "double":
        if p.names:
            return None
        return [f"ECHO_PUBLIC double {n}(void) {{ return {p.name}(); }}" for n in names]
    if p.name == "MPI_Init":
        fparams, pre, args = ["MPI_Fint *ierr"], [], "NULL, NULL"
    elif p.name == "MPI_Init_thread":
        fparams, pre, args = ["MPI_Fint *required", "MPI_Fint *provided", "MPI_Fint *ierr"], [], \
            "NULL, NULL, *required, provided"
    else:
        kinds = [_kind(t, d) for t, d in zip(p.types, p.decls, strict=True)]
        if any(k is None for k in kinds):
            return None
        count = next((n for n, k in zip(p.names, kinds, strict=True) if k[0] == "int" and n in COUNT_NAMES), None)
        if any(k[0] in ("handles", "statuses") for k in kinds) and count is None:
            return None
        fparams, pre, post, call = [], [], [], []
        for name, (how, base_t) in zip(p.names, kinds, strict=True):
            if how in SIMPLE:
                fparam, arg = SIMPLE[how]
                fparams.append(fparam.format(n=name, t=base_t))
                call.append(arg.format(n=name, t=base_t, c=conv(base_t)))
            elif how == "handle_out":  # in, out or both: converted both ways
                fparams.append(f"MPI_Fint *{name}")
                pre.append(f"{base_t} c_{name} = {conv(base_t)}_f2c(*{name});")
                call.append(f"&c_{name}")
                post.append(f"*{name} = {conv(base_t)}_c2f(c_{name});")
            elif how == "handles":
                fparams.append(f"MPI_Fint *{name}")
                pre.append(f"int n_{name} = *{count} > 0 ? *{count} : 0;")
                pre.append(f"{base_t} c_{name}[n_{name} + 1];")
                pre.append(f"for (int i = 0; i < n_{name}; i++) c_{name}[i] = {conv(base_t)}_f2c({name}[i]);")
                call.append(f"c_{name}")
                post.append(f"for (int i = 0; i < n_{name}; i++) {name}[i] = {conv(base_t)}_c2f(c_{name}[i]);")
            elif how == "status":
                fparams.append(f"MPI_Fint *{name}")
                pre.append(f"MPI_Status c_{name};")
                call.append(f"f_status_ignored({name}) ? MPI_STATUS_IGNORE : &c_{name}")
                post.append(f"if (!f_status_ignored({name}) && rc == MPI_SUCCESS) "
                            f"PMPI_Status_c2f(&c_{name}, {name});")
            elif how == "statuses":
                fparams.append(f"MPI_Fint *{name}")
                pre.append(f"int n_{name} = *{count} > 0 ? *{count} : 0;")
                pre.append(f"MPI_Status c_{name}[n_{name} + 1];")
                call.append(f"f_statuses_ignored({name}) ? MPI_STATUSES_IGNORE : c_{name}")
                post.append(f"if (!f_statuses_ignored({name})) for (int i = 0; i < n_{name}; i++) "
                            f"PMPI_Status_c2f(&c_{name}[i], {name} + i * (MPI_STATUS_SIZE_F));")
        # Fortran counts from 1: the indices of completed requests
        if "index" in p.names:
            post.append("if (rc == MPI_SUCCESS && *index != MPI_UNDEFINED) *index += 1;")
        if "array_of_indices" in p.names and "outcount" in p.names:
            post.append("if (rc == MPI_SUCCESS && *outcount != MPI_UNDEFINED) "
                        "for (int i = 0; i < *outcount; i++) array_of_indices[i] += 1;")
        fparams.append("MPI_Fint *ierr")
        args = ", ".join(call)
        body = [f"static void f_{base}({', '.join(fparams)}) {{", *[f"    {x}" for x in pre],
                f"    int rc = {p.name}({args});", *[f"    {x}" for x in post],
                "    if (ierr) *ierr = rc;", "}"]
        fargs = ", ".join(re.sub(r".*[ *]", "", f) for f in fparams)
        return body + [f"ECHO_PUBLIC void {n}({', '.join(fparams)}) {{ f_{base}({fargs}); }}" for n in names]
    body = [f"static void f_{base}({', '.join(fparams)}) {{ int rc = {p.name}({args}); if (ierr) *ierr = rc; }}"]
    fargs = ", ".join(re.sub(r".*[ *]", "", f) for f in fparams)
    return body + [f"ECHO_PUBLIC void {n}({', '.join(fparams)}) {{ f_{base}({fargs}); }}" for n in names]


def render(protos: dict) -> str:
    out = ["", "/* ---- Fortran entry points (preload/gen_fortran.py) ---- */", "#if ECHO_FORTRAN_ENTRY_POINTS",
           "#define MPI_STATUS_SIZE_F ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))", SENTINELS]
    done = 0
    for name in sorted(protos):
        lines = entry_point(protos[name])
        if lines:
            out += lines + [""]
            done += 1
    out += [f"/* {done} of {len(protos)} functions have Fortran entry points here */", "#endif", ""]
    return "\n".join(out)
