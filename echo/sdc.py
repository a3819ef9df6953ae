"""Silent data corruption: options, fault injection specs, the divergence
events the preload library writes, the job's exit status and JUnit XML."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree as ET

from echo.runformat.constants import EXIT_CORRECTED, EXIT_DIVERGED
from echo.runformat.runfiles import event_files
from echo.runformat.spec import parse_spec

MODES = ("detect", "stop", "vote")
INJECTORS_NAMED = ("memflip", "kill", "slow")  # the function field of these injectors' events


class SdcError(ValueError):
    """An --sdc or --inject option that cannot be used; the message says how to fix it."""


def check_mode(mode: str, copies: list[int]) -> None:
    if mode not in MODES:
        raise SdcError(f"--sdc {mode}: expected one of {', '.join(MODES)}")
    if max(copies) < 2:
        raise SdcError(f"--sdc {mode} compares copies of a rank: give ranks 2 or more (--clones 2)")
    if mode == "vote":
        two = [r for r, c in enumerate(copies) if c == 2]
        if two:
            raise SdcError(f"--sdc vote needs 3 or more copies to outvote one (rank {two[0]} has 2): "
                           "use --clones 3, or --sdc detect/stop")


_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s)?$")


MPI_NAME = re.compile(r"MPIX?_[A-Z][A-Za-z0-9_]*")


def parse_exclude(text: str) -> list[str]:
    """--sdc-exclude MPI_Bcast,MPI_Ibcast: the MPI functions whose data is never compared."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    bad = [n for n in names if not MPI_NAME.fullmatch(n)]
    if bad or not names:
        raise SdcError(f"--sdc-exclude {text}: expected MPI function names separated by commas, as a divergence "
                       f"names them (--sdc-exclude MPI_Bcast,MPI_Allgather)")
    return names


def heap_tunables(existing: str | None) -> str:
    """GLIBC_TUNABLES for every process of a run under --sdc, so that bytes a program never wrote are the same in
    a representative and its copies.  Their heaps differ in history (MPI's allocations happen in the
    representative only), so a buffer malloc recycles holds different old bytes in each, and a program that sends
    more than it wrote (a partly packed buffer) would be flagged.  The library has glibc fill what malloc returns
    with one byte in every process (mallopt at MPI_Init, preload/clone/echo_sdc.c); malloc's per-thread cache
    recycles chunks without filling them, so it is off, from the process's start (only a tunable can do that).
    The program's own tunables come first; ours win where they name the same one."""
    ours = "glibc.malloc.tcache_count=0"
    return f"{existing}:{ours}" if existing else ours


def _seconds(text: str) -> float:
    m = _DURATION.match(text)
    if not m:
        raise SdcError(f"after={text}: expected a time such as 2s, 500ms or 1.5")
    return float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)


def parse_inject(spec: str, copies: list[int]) -> str:
    """`bitflip:rank=R,copy=K,call=N[,byte=B,bit=b]` or `memflip:rank=R,copy=K,after=T[,seed=S,bit=b]`
    -> the plan's form ("bitflip rank=R copy=K call=N byte=B bit=b")."""
    item = parse_spec(spec)
    kind = item.kind
    required = {"bitflip": ("rank", "copy", "call"), "memflip": ("rank", "copy", "after")}
    optional = {"bitflip": {"byte": "0", "bit": "0"}, "memflip": {"seed": "1", "bit": "0"}}
    if kind not in required or not item.has_settings:
        raise SdcError(f"--inject {spec}: expected bitflip:rank=R,copy=K,call=N[,byte=B,bit=b] "
                       "or memflip:rank=R,copy=K,after=2s[,seed=S,bit=b]")
    unknown = item.unknown(required[kind] + tuple(optional[kind]))
    if unknown:
        raise SdcError(f"--inject {spec}: unknown setting {unknown!r} for {kind}")
    values = dict(optional[kind]) | item.values
    missing = [k for k in required[kind] if k not in values]
    if missing:
        raise SdcError(f"--inject {spec}: {kind} needs {', '.join(missing)}")
    try:
        ints = {k: int(v) for k, v in values.items() if k != "after"}
    except ValueError as e:
        raise SdcError(f"--inject {spec}: {e}") from None
    rank, copy = ints["rank"], ints["copy"]
    if not 0 <= rank < len(copies):
        raise SdcError(f"--inject {spec}: rank {rank} does not exist (ranks are 0..{len(copies) - 1})")
    if not 0 <= copy < copies[rank]:
        raise SdcError(f"--inject {spec}: rank {rank} has copies 0..{copies[rank] - 1}")
    if ints.get("byte", 0) < 0:  # a byte before the buffer is the program's own memory
        raise SdcError(f"--inject {spec}: byte is counted from the send buffer's first byte: 0 or more")
    if not 0 <= ints.get("bit", 0) < 8:
        raise SdcError(f"--inject {spec}: bit is 0..7 (a bit of one byte)")
    if kind == "memflip":
        values["after"] = str(_seconds(values["after"]))
    return " ".join([kind] + [f"{k}={values[k]}" for k in required[kind] + tuple(optional[kind])])


@dataclass
class SdcEvent:
    kind: str  # divergence, corrected, injection
    app_rank: int
    copy: int
    function: str
    call: int
    comm: int
    peer: int
    bytes: int
    first_byte: int
    detail: str

    @property
    def injector(self) -> str:
        """An injection event's injector: its function names it, but a bitflip's, which is the MPI call it hit."""
        return self.function if self.function in INJECTORS_NAMED else "bitflip"

    def describe(self) -> str:
        if self.kind in ("clocks-apart", "copy-parted", "copy-aborted"):  # the copy's path left its rep's
            return f"application rank {self.app_rank} copy {self.copy}: after call #{self.call}: {self.detail}"
        if self.kind in ("injection", "injection-not-fired"):  # no data was compared: what was injected, where
            into = f" in {self.function}" if self.injector == "bitflip" else ""
            return (f"application rank {self.app_rank} copy {self.copy}: {self.injector} at call #{self.call}{into}: "
                    f"{self.detail}")
        if self.function == "file":  # the files a copy wrote, compared after the job (echo/fileview.py)
            return f"application rank {self.app_rank} copy {self.copy}: {self.detail}"
        where = f"{self.function} (call #{self.call}, communicator {self.comm}"
        where += f", peer {self.peer})" if self.peer >= 0 else ")"
        byte = f", first differing byte {self.first_byte}" if self.first_byte >= 0 else ""
        return f"application rank {self.app_rank} copy {self.copy}: {where}, {self.bytes} bytes{byte}: {self.detail}"


def read_events(run_dir: Path) -> list[SdcEvent]:
    events = []
    for path in event_files(Path(run_dir)):
        for line in path.read_text().splitlines():
            if line.strip():
                events.append(SdcEvent(**json.loads(line)))
    return sorted(events, key=lambda e: (e.kind == "injection", e.call, e.app_rank, e.copy))


def outcome(events: list[SdcEvent]) -> str:  # events of other kinds (injection, papi-unavailable) do not count
    """clean, diverged (some divergence stands, or a copy's path through the program parted from its
    representative's: its clock readings, or its calls) or corrected (all were outvoted)."""
    if any(e.kind in ("divergence", "clocks-apart", "copy-parted") for e in events):
        return "diverged"
    return "corrected" if any(e.kind == "corrected" for e in events) else "clean"


def exit_status(job_status: int, events: list[SdcEvent]) -> int:
    """The job's own failure wins; else 0 clean, EXIT_DIVERGED, or EXIT_CORRECTED."""
    result = outcome(events)
    if job_status not in (0, EXIT_DIVERGED):
        return job_status
    return {"clean": job_status, "diverged": EXIT_DIVERGED, "corrected": EXIT_CORRECTED}[result]


def write_junit(path: Path, program: str, nranks: int, job_status: int, events: list[SdcEvent]) -> None:
    """One test case per application rank (failed if its copies diverged), and one for the job."""
    by_rank: dict[int, list[SdcEvent]] = {}
    for e in events:
        if e.kind in ("divergence", "corrected"):
            by_rank.setdefault(e.app_rank, []).append(e)
    failures = sum(1 for r in range(nranks) if any(e.kind == "divergence" for e in by_rank.get(r, [])))
    suite = ET.Element("testsuite", name=f"echo sdc {program}", tests=str(nranks + 1),
                       failures=str(failures + (job_status not in (0, EXIT_DIVERGED))))
    for r in range(nranks):
        case = ET.SubElement(suite, "testcase", classname="echo.sdc", name=f"rank {r} copies agree")
        evs = by_rank.get(r, [])
        text = "\n".join(e.describe() for e in evs)
        if any(e.kind == "divergence" for e in evs):
            ET.SubElement(case, "failure", message=evs[0].describe()).text = text
        elif evs:
            ET.SubElement(case, "system-out").text = "corrected by vote:\n" + text
    job = ET.SubElement(suite, "testcase", classname="echo.sdc", name="job exit status")
    if job_status not in (0, EXIT_DIVERGED):
        ET.SubElement(job, "failure", message=f"the application exited with status {job_status}")
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
