"""Generate the PMPI wrappers of the echo preload library (run at build time).

One wrapper for every MPI function the MPI library's mpi.h declares. The list of
functions and the meaning of their parameters come from the MPI Forum's
machine-readable standard (pympistandard); the exact C prototype comes from the
mpi.h being compiled against, so the wrapper always matches the library.

Each wrapper holds the re-entry guard (per thread), the one-thread-inside-MPI check of copies and SDR
(core/echo_serial.c), the time-stamp counter's trap lifted for the
call (core/echo_tsc.c), the record and the roles' hooks, and calls
its entry in the dispatch table of the mode the plan chose (MODES: one table per
mode, rendered from each mode's rule for a call, core/echo_mode.h):
- plain: the real call, or the semantics that run in every mode (`echo_always_MPI_X`
  in the preload/*/*.c files);
- clone (and reinit, which also repairs the world after a failed call): the clone
  layer's semantics `echo_MPI_X`; a local call (no communicator, window, file,
  request, message or session is involved, or it is in LOCAL_WITH_HANDLES) passes
  through; another one aborts naming the function;
- sdr: `echo_sdr_MPI_X` on a replicated communicator; a call on one that has none
  aborts naming it.
A large-count `MPI_X_c` whose int form has clone semantics gets `echo_MPI_X_c`, written here: the int form's
`echo_MPI_X` with the counts narrowed (narrowed_forms).

Beside wrappers.c it writes echo_declared.h (ECHO_DECLARES(MPI_X): what this
mpi.h declares), which preload/compat/echo_mpi.h includes.

Usage: python gen_wrappers.py --mpicc MPICC --out wrappers.c SOURCES...
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import gen_bytes
import gen_fortran
import pympistandard as std

# Kinds of parameters that tie a call to other processes: with clones such a
# call needs semantics written for it.
COMMUNICATION_KINDS = {"COMMUNICATOR", "WINDOW", "FILE", "REQUEST", "MESSAGE", "SESSION"}
COMMUNICATION_TYPES = {"MPI_Comm", "MPI_Win", "MPI_File", "MPI_Request", "MPI_Message", "MPI_Session"}

# Calls that take such a handle but only touch this process's own state; they
# are correct on a copy's stand-in handle as they are.
LOCAL_WITH_HANDLES = {
    "MPI_Comm_get_name", "MPI_Comm_set_name", "MPI_Comm_get_attr", "MPI_Comm_set_attr",
    "MPI_Comm_delete_attr", "MPI_Attr_get", "MPI_Attr_put", "MPI_Attr_delete",
    "MPI_Comm_get_errhandler", "MPI_Comm_call_errhandler", "MPI_Comm_get_info", "MPI_Comm_set_info",
    "MPI_Pack", "MPI_Unpack", "MPI_Pack_size", "MPI_Pack_c", "MPI_Unpack_c", "MPI_Pack_size_c",
    "MPI_Comm_c2f", "MPI_Comm_f2c",
    "MPI_Win_c2f", "MPI_Win_f2c", "MPI_File_c2f", "MPI_File_f2c",
    "MPI_Message_c2f", "MPI_Message_f2c", "MPI_Session_c2f", "MPI_Session_f2c",
    # each process's session is its own (echo_session.c gives mpi://WORLD its meaning)
    "MPI_Session_get_num_psets", "MPI_Session_get_nth_pset", "MPI_Session_get_info", "MPI_Session_set_info",
    "MPI_Session_get_errhandler", "MPI_Session_set_errhandler", "MPI_Session_call_errhandler",
    # a copy's stand-in window (echo_win.c) holds its own names, attributes and errhandlers
    "MPI_Win_get_name", "MPI_Win_set_name", "MPI_Win_set_attr", "MPI_Win_delete_attr",
    "MPI_Win_get_errhandler", "MPI_Win_set_errhandler", "MPI_Win_call_errhandler",
    # generalized requests: the program itself completes them, each copy its own
    "MPI_Grequest_start", "MPI_Grequest_complete",
    # a copy's file handle is a real stand-in file (echo_file.c): its error handler is its own
    "MPI_File_set_errhandler", "MPI_File_get_errhandler", "MPI_File_call_errhandler",
    # MPI-4.1: the process's and a session's buffers for buffered sends are each process's own (a copy's holds
    # nothing: it sends nothing), and so is the request of flushing them (echo_buffers.c: a communicator's)
    "MPI_Buffer_iflush", "MPI_Session_attach_buffer", "MPI_Session_attach_buffer_c", "MPI_Session_detach_buffer",
    "MPI_Session_detach_buffer_c", "MPI_Session_flush_buffer", "MPI_Session_iflush_buffer",
}

# `int echo_MPI_X(` or `int echo_always_MPI_X(` defines semantics (`double echo_MPI_Wtime(`: the clocks); so
# does a line `ECHO_DEFINE_...(MPI_X, ...)`: a macro that expands to echo_MPI_X.
HANDWRITTEN = re.compile(r"^(?:(?:int|double|MPI_Fint|MPI_Request)\s+echo_(always_)?|ECHO_DEFINE_\w+\()(MPI_\w+)\b",
                         re.M)
SDR_WRITTEN = re.compile(r"^(?:int\s+echo_sdr_|SDR_\w+\()(MPI_\w+)\b", re.M)
# calls that start communication: every replica makes the same ones (unlike tests and probes, which a replica
# that waits makes more of), so SDR's slow-replica rounds count these (preload/sdr/echo_sdr_slow.c)
SDR_ROUND_CALLS = re.compile(r"MPI_(I?[BSR]?SEND|I?M?RECV|I?SENDRECV(_REPLACE)?|START(ALL)?|I?(BARRIER|BCAST|GATHERV?|"
                             r"SCATTERV?|ALLGATHERV?|ALLTOALL[VW]?|REDUCE|ALLREDUCE|REDUCE_SCATTER(_BLOCK)?|SCAN|"
                             r"EXSCAN))(_C)?$", re.I)
PROTOTYPE = re.compile(
    r"(?:__attribute__\(\([^;]*?\)\)\s*)*"
    r"\b(int|double|MPI_\w+)\s+(MPI_\w+)\s*\(([^;{]*?)\)\s*(?:__attribute__\(\([^;]*?\)\)\s*)*;",
    re.S,
)


@dataclass
class Prototype:
    ret: str
    name: str
    params: str  # as mpi.h writes them
    names: list[str]  # parameter names, in order
    types: list[str]  # parameter text without the name
    decls: list[str]  # each parameter as declared


def split_params(text: str) -> list[str]:
    """Split a C parameter list at top-level commas."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def param_name(param: str) -> str:
    """The declared name of one C parameter (`int ranges[][3]` -> `ranges`)."""
    m = re.search(r"\(\s*\*\s*(\w+)\s*\)", param)  # a function pointer
    if m:
        return m.group(1)
    m = re.search(r"(\w+)\s*(\[[^\]]*\]\s*)*$", param)
    if not m:
        raise ValueError(f"cannot find the name of parameter {param!r}")
    return m.group(1)


def preprocessed_mpi_h(mpicc: str, *flags: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "inc.c"
        src.write_text("#include <mpi.h>\n")
        return subprocess.run([mpicc, "-E", *flags, str(src)], check=True, capture_output=True, text=True).stdout


def function_macros(mpicc: str) -> set[str]:
    """MPI functions mpi.h also defines as macros (MPICH's *_c2f/*_f2c): a program
    compiled with it never calls the function, but the function is wrapped all the
    same (under `#undef`) for one that takes its address or was compiled otherwise."""
    return set(re.findall(r"^#define (P?MPI_\w+)\(", preprocessed_mpi_h(mpicc, "-dM"), re.M))


def declared_functions(mpicc: str) -> dict[str, Prototype]:
    text = preprocessed_mpi_h(mpicc, "-P")
    protos = {}
    for ret, name, params in PROTOTYPE.findall(text):
        params = " ".join(params.split())
        plist = [] if params in ("", "void") else split_params(params)
        plist = [q for q in plist if q != "..."]  # MPI_Pcontrol: the level alone is passed on
        names = [param_name(p) for p in plist]
        types = [p[: p.rfind(n)].strip() for p, n in zip(plist, names, strict=True)]
        protos[name] = Prototype(ret, name, params, names, types, plist)
    return protos


def standard_kinds() -> dict[str, list[str]]:
    """Parameter kinds per C function name, from the MPI standard."""
    std.use_api_version(1)
    kinds: dict[str, list[str]] = {}
    for proc in std.PROCEDURES.values():
        forms = [proc.express.iso_c]
        if proc.has_embiggenment():
            forms.append(proc.express.embiggen.iso_c)
        for c in forms:
            if c is not None:
                kinds[c.name] = [p.kind.name for p in c.parameters]
    return kinds


def handwritten(sources: list[Path]) -> dict[str, bool]:
    """Functions with written semantics -> whether they run in every mode."""
    found: dict[str, bool] = {}
    for path in sources:
        for always, name in HANDWRITTEN.findall(path.read_text()):
            found[name] = bool(always)
    return found


def sdr_written(sources: list[Path]) -> set[str]:
    """Functions with SDR-mode semantics."""
    return {name for path in sources for name in SDR_WRITTEN.findall(path.read_text())}


def is_local(proto: Prototype, kinds: list[str] | None) -> bool:
    # MPI 5's MPI_X_toint converts a handle to an integer (returned, not an error code), as MPI_X_c2f does
    if proto.name in LOCAL_WITH_HANDLES or proto.ret != "int" or proto.name.endswith("_toint"):
        return True
    if kinds is not None and len(kinds) == len(proto.names):
        return not COMMUNICATION_KINDS.intersection(kinds)
    return not any(re.search(rf"\b{t}\b", t2) for t2 in proto.types for t in COMMUNICATION_TYPES)


def communicator_arg(proto: Prototype, kinds: list[str] | None) -> str | None:
    """Name of the communicator a call acts on (an input handle), if any."""
    for i, (name, ctype) in enumerate(zip(proto.names, proto.types, strict=True)):
        kind_ok = kinds is None or len(kinds) != len(proto.names) or kinds[i] == "COMMUNICATOR"
        if kind_ok and re.fullmatch(r"MPI_Comm", ctype):
            return name
    return None


# Calls that reach other processes even on MPI_COMM_SELF (a connection to, or
# the start of, another job): with clones the representatives make them, so they
# are replicated whatever their communicator (echo_spawn.c).
REPLICATED_ON_SELF = {"MPI_Comm_accept", "MPI_Comm_connect", "MPI_Comm_spawn", "MPI_Comm_spawn_multiple",
                      "MPI_Intercomm_create"}

# Where MPI raises the error of a call: the error handler of its file, window or
# communicator (in that order).  Not MPI_FILE_NULL's (the handler of
# MPI_File_open/delete and of calls given MPI_FILE_NULL): Open MPI refuses
# MPI_File_call_errhandler on it (MPI_ERR_ARG, raised on MPI_COMM_WORLD).
ERROR_HANDLE_CALLS = {"MPI_File": "PMPI_File_call_errhandler", "MPI_Win": "PMPI_Win_call_errhandler",
                      "MPI_Comm": "PMPI_Comm_call_errhandler"}


def error_handler_call(proto: Prototype, code: str = "rc") -> str | None:
    """C call that raises an error on the handle the call reports errors on, with `code`."""
    for ctype, call in ERROR_HANDLE_CALLS.items():
        for name, t in zip(proto.names, proto.types, strict=True):
            if t == ctype:
                guard = f"if ({name} != MPI_FILE_NULL) " if ctype == "MPI_File" else ""
                return f"{guard}{call}({name}, {code})"
    return None


def record_fields(proto: Prototype, kinds: list[str] | None) -> tuple[str, str, str, str]:
    """C expressions for a call's record: communicator id, peer, tag, bytes."""
    comm = communicator_arg(proto, kinds)
    peer, tag, bytes_ = "-1", "-1", "0"
    if kinds is None or len(kinds) != len(proto.names):
        return (f"echo_comm_id({comm})" if comm else "-1"), peer, tag, bytes_
    scalar = [not re.search(r"[*\[]", d) for d in proto.decls]
    for i, kind in enumerate(kinds):
        if kind == "RANK" and scalar[i] and peer == "-1":
            peer = f"echo_peer({proto.names[i]})"
        elif kind == "TAG" and scalar[i] and tag == "-1":
            tag = proto.names[i]
        elif "XFER_NUM_ELEM" in kind and scalar[i] and bytes_ == "0":
            dt = next((j for j in range(i + 1, len(kinds)) if kinds[j] == "DATATYPE" and scalar[j]), None)
            if dt is not None:
                bytes_ = f"echo_bytes({proto.names[i]}, {proto.names[dt]})"
    bytes_ = gen_bytes.collective_bytes(proto) or bytes_
    return (f"echo_comm_id({comm})" if comm else "-1"), peer, tag, bytes_


# In SDR mode the application's handle of a replicated communicator is a real
# one of its own (MPI_COMM_WORLD, or a stand-in: echo_sdr_comm.c): these calls
# on it only touch this process's own state.
SDR_LOCAL = {"MPI_Abort", "MPI_Comm_set_errhandler", "MPI_Comm_test_inter", "MPI_Topo_test",
             "MPI_Comm_remote_size", "MPI_Comm_remote_group"}


def sdr_body(p: Prototype, kinds: list[str] | None, sdr: set[str], fallback: str) -> str:
    """What a wrapper does in SDR mode: `fallback` is what it does otherwise on a process-local object."""
    comm = communicator_arg(p, kinds)
    args = ", ".join(p.names)
    if p.name in sdr and p.name in REPLICATED_ON_SELF:
        # MPI_Intercomm_create over MPI_COMM_SELF names a replicated peer communicator: SDR's says why it refuses
        replicated = " || ".join(f"sdr_comm_of({n})" for n, t in zip(p.names, p.types, strict=True) if t == "MPI_Comm")
        return f"{replicated} ? echo_sdr_{p.name}({args}) : {fallback}"
    if p.name in sdr:
        return f"sdr_comm_of({comm}) ? echo_sdr_{p.name}({args}) : {fallback}" if comm else \
            f"echo_sdr_{p.name}({args})"
    if comm and not is_local(p, kinds) and p.name not in SDR_LOCAL:
        # every communicator it names: MPI_Intercomm_create over MPI_COMM_SELF still reaches the replicated bridge
        comms = [n for n, t in zip(p.names, p.types, strict=True) if t == "MPI_Comm"] \
            if p.name in REPLICATED_ON_SELF else [comm]
        replicated = " || ".join(f"sdr_comm_of({c})" for c in comms)
        return f"{replicated} ? (echo_unsupported(\"{p.name}\"), MPI_ERR_OTHER) : {fallback}"
    return fallback


# Large-count forms (MPI-4's MPI_X_c): their semantics are the int form's (echo_MPI_X), called with the counts
# narrowed to int (preload/clone/echo_bigcount.c), so each call family has one semantics.
WIDE_SCALARS = {"MPI_Count", "MPI_Aint"}
NARROW_ARRAY = {"MPI_Count": "echo_narrow_counts", "MPI_Aint": "echo_narrow_aints"}


def array_side(name: str, names: list[str]) -> int:
    """0 for a send-side array of a v- or w-collective, 1 for a receive-side one (`displs` goes with its counts)."""
    if name.startswith(("send", "sdispls")):
        return 0
    if name.startswith(("recv", "rdispls")):
        return 1
    return 0 if "sendcounts" in names else 1


def narrowing(p: Prototype, base: Prototype, kinds: list[str] | None) -> str | None:
    """C definition of echo_MPI_X_c calling the int form's semantics echo_MPI_X with its counts narrowed, or None
    when a parameter differs in a way this does not know (the call then stays unsupported with clones)."""
    if len(p.names) != len(base.names):
        return None
    comm = communicator_arg(p, kinds)
    # a nonblocking or persistent operation may read its count arrays until it completes
    keep = int(p.name.startswith("MPI_I") or p.name.endswith("_init_c"))
    root = "root" if "root" in p.names else "-1"
    pre, args, post = [], [], []
    # a count beyond an int travels as one element of a contiguous type of `count` elements: the same type
    # signature, so the same message (not with an MPI_Op, which applies to predefined types only)
    elements = {}
    if kinds is not None and len(kinds) == len(p.names) and "MPI_Op" not in p.types:
        for i, kind in enumerate(kinds):
            if "XFER_NUM_ELEM" in kind and p.types[i] == "MPI_Count" and base.types[i] == "int":
                dt = next((j for j in range(i + 1, len(kinds)) if kinds[j] == "DATATYPE"), None)
                if dt is not None and p.types[dt] == "MPI_Datatype" and dt not in elements.values():
                    elements[i] = dt
    widened = {p.names[dt]: p.names[i] for i, dt in elements.items()}
    for i, (name, ctype, btype, decl) in enumerate(zip(p.names, p.types, base.types, p.decls, strict=True)):
        wide = ctype.removeprefix("const ").strip()
        if i in elements:
            dt = p.names[elements[i]]
            pre.append(f"    MPI_Datatype w_{dt} = {dt};")
            pre.append(f"    int n_{name} = echo_narrow_count({name}, &w_{dt}, \"{p.name}\", \"{name}\");")
            args.append(f"n_{name}")
            post.append(f"    echo_widened_free(w_{dt}, {dt});")
        elif name in widened:
            args.append(f"w_{name}")
        elif ctype == btype:
            args.append(name)
        elif re.search(r"\[\s*\]$", decl) and btype == "const int" and wide in NARROW_ARRAY and comm:
            side = array_side(name, p.names)
            pre.append(f"    const int *n_{name} = {NARROW_ARRAY[wide]}({name}, echo_narrow_len({comm}, \"{p.name}\", "
                       f"{side}, {root}), {keep}, \"{p.name}\", \"{name}\");")
            args.append(f"n_{name}")
            post.append(f"    echo_narrow_free(n_{name}, {keep});")
        elif ctype in WIDE_SCALARS and btype == "int":
            args.append(f"echo_narrow_int({name}, \"{p.name}\", \"{name}\")")
        elif ctype.endswith("*") and ctype[:-1].strip() in WIDE_SCALARS and btype.endswith("*"):
            pre.append(f"    {btype[:-1].strip()} o_{name} = 0;")  # an output, written back widened
            args.append(f"&o_{name}")
            post.append(f"    if ({name}) *{name} = o_{name};")
        else:
            return None
    return "\n".join([
        f"int echo_{base.name}({base.params});",
        f"int echo_{p.name}({p.params}) {{",
        *pre,
        f"    int rc = echo_{base.name}({', '.join(args)});",
        *post,
        "    return rc;",
        "}",
        "",
    ])


def narrowed_forms(protos: dict[str, Prototype], kinds: dict[str, list[str]], written: dict[str, bool]) \
        -> dict[str, str]:
    """The MPI_X_c of every int form with clone semantics that has none of its own -> its narrowing."""
    out = {}
    for name, p in protos.items():
        base = protos.get(name.removesuffix("_c"))
        if name.endswith("_c") and name not in written and base and written.get(base.name) is False \
                and not is_local(p, kinds.get(name)):
            code = narrowing(p, base, kinds.get(name))
            if code:
                out[name] = code
    return out


def declared_header(protos: dict[str, Prototype], standard: set[str]) -> str:
    """echo_declared.h: ECHO_DECLARES(MPI_X) is 1 for each function this mpi.h declares.  A standard function it
    lacks (MPI-4's, in Open MPI 4.1) gets a stand-in PMPI_X that stops the job naming it: the hand-written
    semantics that call it compile, and are never reached (no wrapper calls the semantics of a call mpi.h
    lacks); preload/compat/fallback.h gives real fallbacks for the few echo itself needs."""
    lacking = sorted(n for n in standard - set(protos) if n.startswith("MPI_"))
    return "\n".join(["/* GENERATED by preload/gen/gen_wrappers.py at build time: do not edit, do not commit. */",
                      *[f"#define ECHO_DECLARES_{n} 1" for n in sorted(protos)],
                      *[f'#define P{n}(...) echo_lacks("{n}")' for n in lacking], ""])


@dataclass(frozen=True)
class Call:
    """One MPI function as the modes' dispatch tables see it."""

    p: Prototype
    kinds: list[str] | None
    written: bool | None  # semantics by hand: True echo_always_MPI_X (every mode), False echo_MPI_X, None none
    sdr: bool  # echo_sdr_MPI_X exists

    @property
    def name(self) -> str:
        return self.p.name

    @property
    def args(self) -> str:
        return ", ".join(self.p.names)

    @property
    def real(self) -> str:
        return f"P{self.name}({self.args})"

    @property
    def handle(self) -> bool:
        """MPI_X_c2f returns a Fortran handle, MPI 5's MPI_X_toint an integer one, not an error code."""
        return self.name.endswith(("_c2f", "_toint"))


# A mode's entry for one call: the name of a function to point to (no work of its own), or the statements of a
# function generated for it (they end in `return rc;`).
Entry = str | list[str]


def own_handles(c: Call) -> bool:
    """A conversion of echo's own handles (MPI_Request_c2f...): every mode with copies or replicas converts them."""
    return c.handle and c.written is not None


def plain_entry(c: Call) -> Entry:
    """Records and roles, no copies: the real call, or the semantics that run in every mode (MPI_Init...)."""
    return f"echo_always_{c.name}" if c.written and not own_handles(c) else f"P{c.name}"


def clone_entry(c: Call) -> Entry:
    """Copies follow their representative: the clone layer's semantics, on the objects it replicates."""
    if own_handles(c):
        return f"echo_{c.name}"
    if c.written:
        return f"echo_always_{c.name}"
    comm = communicator_arg(c.p, c.kinds)
    # calls on MPI_COMM_SELF (and what derives from it) are each copy's own
    replicated = f"!echo_comm_is_local({comm})" if comm and c.name not in REPLICATED_ON_SELF else ""
    if c.written is False:
        call = f"echo_{c.name}({c.args})"
    elif is_local(c.p, c.kinds):
        return f"P{c.name}"
    else:
        call = f'(echo_unsupported("{c.name}"), MPI_ERR_OTHER)'
    lines = [f"int rc = {replicated} ? {call} : {c.real};" if replicated else f"int rc = {call};"]
    # a copy's call returns what its representative's returned: an error must reach the copy's own error
    # handler too (it may be the user's).  MPICH 5 returns MPI_SUCCESS once a user's handler ran: the forward
    # then says which class the representative's handler was raised with (echo_raised, cleared before the call)
    raise_error = error_handler_call(c.p, "rc != MPI_SUCCESS ? rc : echo_raised")
    if c.written is False and raise_error and not c.handle:
        lines.insert(0, "echo_raised = 0;")
        lines.append(f"if ((rc != MPI_SUCCESS || echo_raised) && {replicated or '1'} && !echo_is_rep()) "
                     f"{{ echo_depth = 0; {raise_error}; }}")
    if lines == [f"int rc = {call};"] and c.written is False:
        return f"echo_{c.name}"
    return [*lines, "return rc;"]


# Reinit: a window's failures must reach the repair as any call's, one behaviour with or without a restart point
# (docs/reinit.md); a window's default handler is MPI_ERRORS_ARE_FATAL: a failure seen in MPI_Win_fence aborted
# the survivor, mpirun ended every process, and echorun took the job for one whose every process was killed
REINIT_WINDOW_MAKERS = re.compile(r"MPI_Win_(create|allocate|allocate_shared|create_dynamic)(_c)?")


def reinit_entry(c: Call) -> Entry:
    """Reinit's world is a clone world of one copy each; a failed call repairs the world (echo_reinit.c)."""
    entry = clone_entry(c)
    if c.handle:
        return entry
    lines = [f"int rc = {entry}({c.args});", "return rc;"] if isinstance(entry, str) else entry
    if REINIT_WINDOW_MAKERS.fullmatch(c.name):
        lines = [*lines[:-1], f"if (rc == MPI_SUCCESS) {{ PMPI_Win_set_errhandler(*{c.p.names[-1]}, "
                 "MPI_ERRORS_RETURN); echo_reinit_windows = 1; }", lines[-1]]
    # the call the process is in, for the watchdog of failures MPI never reports (echo_reinit_watchdog.c)
    return [f'echo_reinit_call.name = "{c.name}"; echo_reinit_call.seq++;',
            f'if (echo_kills_entering) echo_kill_entering("{c.name}");', *lines[:-1],
            "echo_reinit_call.name = NULL; echo_reinit_call.seq++;",
            "if (rc != MPI_SUCCESS) rc = echo_reinit_on_error(rc);", lines[-1]]


def sdr_entry(c: Call) -> Entry:
    """Every replica communicates: SDR's semantics on its replicated communicators (echo_sdr.h), and its rounds
    that find a slow replica (echo_sdr_slow.c)."""
    fallback = f"echo_always_{c.name}({c.args})" if c.written else c.real
    sdr = {c.name} if c.sdr else set()
    call = f"echo_{c.name}({c.args})" if own_handles(c) else sdr_body(c.p, c.kinds, sdr, fallback)
    # SDR: an error of a replicated call reaches the application's error handler, as MPI's would
    raise_error = error_handler_call(c.p) if c.sdr else None
    return [f"sdr_tick({int(bool(SDR_ROUND_CALLS.match(c.name)))});",
            f"int rc = {call};",
            *([f"if (rc != MPI_SUCCESS) {{ echo_depth = 0; {raise_error}; }}"] if raise_error else []),
            "sdr_slow_leave();",
            "return rc;"]


def conversion_entry(mode: str, p: Prototype, written: bool) -> str:
    """Functions that return no error code (conversions, clocks): echo's own when a mode with copies wrote some."""
    return f"echo_{p.name}" if written and mode != "plain" else f"P{p.name}"


@dataclass(frozen=True)
class Mode:
    """A mode's dispatch table: echo_calls_<name>, which its echo_mode_t points to (core/echo_mode.h)."""

    name: str
    entry: Callable[[Call], Entry]


# The table of modes the wrappers dispatch to; the plain one is the table until the plan is read.  A new mode is
# a line here (and its echo_mode_t's `.calls = &echo_calls_<name>`).
MODES = (Mode("plain", plain_entry), Mode("clone", clone_entry), Mode("sdr", sdr_entry),
         Mode("reinit", reinit_entry))


def render(protos: dict[str, Prototype], kinds: dict[str, list[str]], written: dict[str, bool],
           sdr: set[str], macros: set[str] = frozenset()) -> str:
    """wrappers.c: one dispatch table per mode (MODES), and one wrapper per function that calls the table's entry
    between the records and the roles' hooks.  The mode is chosen once when the plan is read (core/echo_modes.c):
    a wrapper makes one indirect call, or a direct one when every mode does the same."""
    names = sorted(protos)
    narrowed = narrowed_forms(protos, kinds, written)
    written = {**written, **dict.fromkeys(narrowed, False)}
    out = [
        "/* GENERATED by preload/gen/gen_wrappers.py at build time: do not edit, do not commit. */",
        '#include "echo_sdr.h"',
        '#include "echo_reinit_internal.h"',
        '#include "echo_records.h"',
        "",
        *[f"#undef {m}" for m in sorted(macros) if m.removeprefix("P") in protos],
        "",
        *narrowed.values(),
        f"const int echo_nfunctions = {len(names)};",
        "const char *const echo_function_names[] = {",
        *[f'    "{n}",' for n in names],
        "};",
        "",
    ]
    # each mode's entry of each function; a function every mode does alike is called directly
    entries: dict[str, dict[str, Entry]] = {}
    for name in names:
        p = protos[name]
        if p.ret != "int":
            row = {m.name: conversion_entry(m.name, p, name in written) for m in MODES}
        else:
            call = Call(p, kinds.get(name), written.get(name), name in sdr)
            row = {m.name: m.entry(call) for m in MODES}
        if len({str(e) for e in row.values()}) > 1:
            entries[name] = row
    for name in names:  # the semantics the entries name
        p, params = protos[name], protos[name].params or "void"
        if name in sdr:
            out.append(f"int echo_sdr_{name}({params});")
        if name in written:
            out.append(f"{p.ret} echo_{'always_' if written[name] else ''}{name}({params});")
    # a table holds a real function's address, which the loader resolves when it loads the library, where a call
    # is resolved at its first use: MPICH's mpi.h declares functions its library lacks (PMPI_Status_c2f08), which
    # no program calls. Weak, such an address is NULL and the library still loads.
    pointed = sorted({e for row in entries.values() for e in row.values() if isinstance(e, str) and e[0] == "P"})
    out += ["", *[f"extern __typeof__({f}) {f} __attribute__((weak));" for f in pointed]]
    out += ["", "struct echo_calls {",
            *[f"    {protos[n].ret} (*{n})({protos[n].params or 'void'});" for n in entries], "};", ""]
    for mode in MODES:
        for name, row in entries.items():
            if isinstance(row[mode.name], list):
                out += [f"static int {mode.name}_{name}({protos[name].params or 'void'}) {{",
                        *[f"    {line}" for line in row[mode.name]], "}", ""]
        out += [f"const struct echo_calls echo_calls_{mode.name} = {{",
                *[f"    .{n} = {row[mode.name] if isinstance(row[mode.name], str) else f'{mode.name}_{n}'},"
                  for n, row in entries.items()], "};", ""]
    # the sizes a collective's bytes need, asked of the mode as the application would ask them, but not counted as
    # its calls: SDR's entries count calls (its kill injection at the Nth call), so SDR's semantics are called here
    # without them
    asked = {}
    for n in gen_bytes.ASKED:
        call = Call(protos[n], kinds.get(n), written.get(n), n in sdr)
        mode = f"echo_calls->{n}({call.args})" if n in entries else f"{plain_entry(call)}({call.args})"
        fallback = f"echo_always_{n}({call.args})" if call.written else call.real
        out += [f"static __attribute__((unused)) int coll_{n}({protos[n].params}) {{",
                f"    return echo.sdr ? {sdr_body(call.p, call.kinds, sdr, fallback)} : {mode};", "}"]
        asked[n] = f"coll_{n}"
    out += [line.replace("static ", "static __attribute__((unused)) ", 1) for line in gen_bytes.helpers(asked)]
    for fn_id, name in enumerate(names):
        p = protos[name]
        args = ", ".join(p.names)
        params = p.params or "void"
        real = f"P{name}({args})"
        dispatch = f"echo_calls->{name}({args})" if name in entries else None
        if p.ret != "int":  # conversions and clocks: nothing to replicate or record
            out += [f"ECHO_PUBLIC {p.ret} {name}({params}) {{ return {dispatch or real}; }}", ""]
            continue
        if dispatch is None:  # every mode does the same: the one function they would all point to
            dispatch = f"{plain_entry(Call(p, kinds.get(name), written.get(name), name in sdr))}({args})"
        guard = "echo_depth" if written.get(name) else "echo_depth || !echo.active"
        code = "MPI_SUCCESS" if name.endswith(("_c2f", "_toint")) else "rc"
        rec_comm, peer, tag, nbytes = record_fields(p, kinds.get(name))
        if name in ("MPI_Comm_free", "MPI_Finalize"):
            rec_comm = "-1"  # the handle is gone after the call
        # a communicator freed inside MPI (an attribute's delete callback, say) is
        # gone all the same: its entry must not outlive it, or a later handle of the
        # same value would be taken for it
        forget = "echo_comm_remove(*comm); " if name in ("MPI_Comm_free", "MPI_Comm_disconnect") else ""
        out += [
            f"ECHO_PUBLIC int {name}({params}) {{",
            f"    if ({guard}) {{ {forget}return {real}; }}",
            "    echo_depth = 1;",
            f"    int serial = echo_serial_on && echo_serial_enter({fn_id});",
            "    int tsc = echo_tsc_trapped && echo_tsc_enter();",
            "    if (echo_slow_on) echo_slow_before();",
            "    uint64_t t0 = echo_ticks();",
            f"    int32_t rec_comm = {rec_comm};",
            "    if (echo_hooks.enter) echo_hooks.enter();",
            f"    int rc = {dispatch};",
            "    if (echo_hooks.leave) echo_hooks.leave();",
            f"    if (echo.active) echo_record({fn_id}, t0, rec_comm, {peer}, {tag}, {nbytes}, {code});",
            "    if (echo_slow_on) echo_slow_after();",
            "    if (tsc) echo_tsc_leave();",
            "    if (serial) echo_serial_leave();",
            "    echo_depth = 0;",
            "    return echo_stack_scrub ? echo_stack_scrubbed(rc) : rc;  /* a tail call: core/echo_stack.c */",
            "}",
            "",
        ]
    # semantics of a standard call this mpi.h lacks are guarded by ECHO_DECLARES in their source: no
    # wrapper.  A name the standard does not know either is a slip of the pen.
    unknown = sorted((set(written) | sdr) - set(protos) - set(kinds))
    if unknown:
        raise SystemExit(f"hand-written semantics for functions neither mpi.h nor the MPI standard declares: {unknown}")
    # Fortran entry points convert handles as the mode does, without the record of an application's call
    conversions = {n: f"echo_calls->{n}" if n in entries else f"P{n}" for n in names if n.endswith(("_f2c", "_c2f"))}
    return "\n".join(out) + gen_fortran.render(protos, conversions)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpicc", required=True)
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("sources", nargs="+", type=Path, help="hand-written preload sources")
    a = ap.parse_args()
    protos = declared_functions(a.mpicc)
    if not protos:
        raise SystemExit(f"no MPI function found in the mpi.h of {a.mpicc}")
    kinds = standard_kinds()
    (a.out.parent / "echo_declared.h").write_text(declared_header(protos, set(kinds)))
    a.out.write_text(render(protos, kinds, handwritten(a.sources), sdr_written(a.sources), function_macros(a.mpicc)))


if __name__ == "__main__":
    main()
