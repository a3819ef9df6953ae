"""Reading what the Valgrind tools wrote: memcheck's errors, the profiles (callgrind's slices of a rank merged into
one), massif's peak, and the reports cut short by a process that ended first."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from echo.collectors.valgrind.files import FOLDER, TOOLS, output_file
from echo.runformat import runfiles


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
