"""Whether each planned injection fired.

An injection that never fires (a call number past the end of the program, a
time after it ended) would otherwise pass silently, and a run meant to test
recovery or detection would look like a success. The preload library writes an
"injection" event when one fires (echo/sdc.py reads them); here the plan's
injections are matched with those events, one event for one injection.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from echo.records import RecordsError, read
from echo.runfiles import PLAN, parse_plan, plan_procs, record_file
from echo.sdc import SdcEvent


@dataclass
class Injection:
    kind: str  # bitflip, memflip, slow or kill
    rank: int
    copy: int | None  # None: whichever process holds the rank (Reinit)
    when: str  # "call 20", "2 s after MPI_Init", "from call 10"
    text: str  # as the user would write it
    call: int | None = None  # the call it fires at, if it fires at a call
    fired: bool = False
    note: str = ""  # why it did not fire, or what it did


def _words(value: str) -> dict[str, str]:
    return dict(w.partition("=")[::2] for w in value.split()[1:])


def planned(plan_text: str) -> list[Injection]:
    """The injections a plan file holds, in its order."""
    out = []
    for key, value in parse_plan(plan_text):
        w = value.split()
        if key == "inject" and w:  # bitflip rank=R copy=K call=N ... / memflip rank=R copy=K after=S ...
            v = _words(value)
            text = f"{w[0]}:" + ",".join(w[1:])
            if w[0] == "bitflip":
                out.append(Injection("bitflip", int(v["rank"]), int(v["copy"]), f"call {v['call']}", text,
                                     int(v["call"])))
            else:
                out.append(Injection("memflip", int(v["rank"]), int(v["copy"]), _after(v["after"]), text))
        elif key == "slow":  # R K F FROM TO (TO 0: to the end)
            rank, copy, factor, start, stop = w[0], w[1], float(w[2]), int(w[3]), int(w[4])
            until = f",to={stop}" if stop else ""
            out.append(Injection("slow", int(rank), int(copy), f"from call {start}" + (f" to {stop}" if stop else ""),
                                 f"slow:rank={rank},copy={copy},factor={factor:g},from={start}{until}", start))
        elif key.startswith("sdr_kill_"):  # R K call|after V
            at = f"call={w[3]}" if w[2] == "call" else f"after={float(w[3]):g}s"
            out.append(Injection("kill", int(w[0]), int(w[1]), f"call {w[3]}" if w[2] == "call" else _after(w[3]),
                                 f"kill:rank={w[0]},replica={w[1]},{at}", int(w[3]) if w[2] == "call" else None))
        elif key.startswith("reinit_kill_") and w[1] == "repair":  # R repair N: in the job's Nth repair
            out.append(Injection("kill", int(w[0]), None, f"in repair {w[2]}", f"kill:rank={w[0]},repair={w[2]}"))
        elif key.startswith("reinit_kill_") and w[1] == "finalize":  # R finalize: in its MPI_Finalize
            out.append(Injection("kill", int(w[0]), None, "in MPI_Finalize", f"kill:rank={w[0]},at=finalize"))
        elif key.startswith("reinit_kill_") and w[1] == "at":  # R at MPI_X: as it enters its first MPI_X
            out.append(Injection("kill", int(w[0]), None, f"entering {w[2]}", f"kill:rank={w[0]},at={w[2]}"))
        elif key.startswith("reinit_kill_"):  # R SECONDS: whichever process holds the rank then
            out.append(Injection("kill", int(w[0]), None, _after(w[1]), f"kill:rank={w[0]},after={float(w[1]):g}s"))
    return out


def _after(seconds: str) -> str:
    return f"{float(seconds):g} s after MPI_Init"


def calls_made(run_dir: Path, rank: int, copy: int) -> int | None:
    """How many MPI calls the process made, from its record file (None: no readable records)."""
    for real, app, k, _role in plan_procs(run_dir):
        if (app, k) == (rank, copy):
            try:
                return len(read(record_file(run_dir, real)).records)
            except (OSError, RecordsError):
                return None
    return None


def check(run_dir: Path, events: list[SdcEvent]) -> list[Injection]:
    """The plan's injections, each marked fired or not (with the reason when it can be told)."""
    left = [e for e in events if e.kind == "injection"]
    out = planned((run_dir / PLAN).read_text())
    for inj in out:
        match = next((e for e in left if e.injector == inj.kind and e.app_rank == inj.rank
                      and (inj.copy is None or e.copy == inj.copy)), None)
        if match is not None:
            left.remove(match)
            inj.fired, inj.note = True, f"fired at call {match.call}: {match.detail}"
            continue
        inj.note = "never fired"
        made = calls_made(run_dir, inj.rank, inj.copy) if inj.call is not None and inj.copy is not None else None
        if made is not None:
            inj.note += f": rank {inj.rank} copy {inj.copy} made {made} MPI calls; " + (
                f"call {inj.call} is past its end" if made < inj.call else
                f"none from call {inj.call} on was one {inj.kind} applies to")
        elif inj.call is None:
            inj.note += ": the program ended (or the process died) before its time"
    return out


def describe(injections: list[Injection]) -> list[str]:
    """echorun's lines after the job: each injection and whether it fired."""
    return [f"injection {i.text}: {i.note}" for i in injections]


def as_rows(injections: list[Injection]) -> list[dict]:
    """As the store keeps them (runs.injections)."""
    return [asdict(i) for i in injections]
