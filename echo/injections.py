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
from xml.etree import ElementTree as ET

from echo.runformat import junit
from echo.runformat.records import RecordsError, read
from echo.runformat.runfiles import PLAN, parse_plan, plan_procs, record_file
from echo.runformat.spec import parse_spec, split_specs
from echo.sdc import SdcEvent

# what each kind of --inject needs: the one place that says it (each kind's settings stay with its owner)
NEEDS = {"bitflip": "--sdc detect|stop|vote in --mode clones (copies compared: --clones 2 or more)",
         "memflip": "--sdc detect|stop|vote in --mode clones (copies compared: --clones 2 or more)",
         "slow": "any mode (slow:rank=R,copy=K,factor=F)",
         "kill": "--mode sdr (kill:rank=R,replica=K,call=N|after=T) or --mode reinit (kill:rank=R,after=T|repair=N)"}


# the event the library writes for an injection it reached but would not make (preload/clone/echo_sdc.c: a byte
# outside the send buffer); the store's event of every injection that did not fire has the same kind
REFUSED = "injection-not-fired"


class InjectionError(ValueError):
    """An --inject kind this run cannot carry; the message names what the kind needs."""


def check_kinds(spec: str, carried: tuple[str, ...]) -> None:
    """Every item of --inject is a known kind that this mode with its options carries (`carried`: the mode's
    `injections`; a slowdown goes with any), before its settings are read by its owner: a kill without
    --mode sdr|reinit, or an unknown kind, is told what it needs."""
    for one in split_specs(spec):
        kind = parse_spec(one).kind
        if kind not in NEEDS:
            raise InjectionError(f"--inject {one}: unknown injection {kind!r}; the kinds are "
                                 + "; ".join(f"{k} (with {v})" for k, v in NEEDS.items()))
        if kind != "slow" and kind not in carried:
            raise InjectionError(f"--inject {one}: {kind} goes with {NEEDS[kind]}")


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
                return read(record_file(run_dir, real)).calls
            except (OSError, RecordsError):
                return None
    return None


def check(run_dir: Path, events: list[SdcEvent]) -> list[Injection]:
    """The plan's injections, each marked fired or not (with the reason when it can be told)."""
    left = [e for e in events if e.kind in ("injection", REFUSED)]
    out = planned((run_dir / PLAN).read_text())
    for inj in out:
        match = next((e for e in left if e.injector == inj.kind and e.app_rank == inj.rank
                      and (inj.copy is None or e.copy == inj.copy)), None)
        if match is not None and match.kind == "injection":
            left.remove(match)
            inj.fired, inj.note = True, f"fired at call {match.call}: {match.detail}"
            continue
        if match is not None:  # the library found it could not inject without harming the program
            left.remove(match)
            inj.note = f"never fired: at call {match.call}: {match.detail}"
            continue
        inj.note = "never fired"
        made = calls_made(run_dir, inj.rank, inj.copy) if inj.call is not None and inj.copy is not None else None
        if made is not None:
            inj.note += f": rank {inj.rank} copy {inj.copy} made {made} MPI calls; " + (
                f"call {inj.call} is past its end" if made <= inj.call else
                f"none from call {inj.call} on was one {inj.kind} applies to")
        elif inj.call is None:
            inj.note += ": the program ended (or the process died) before its time"
    return out


def describe(injections: list[Injection]) -> list[str]:
    """echorun's lines after the job: each injection and whether it fired."""
    return [f"injection {i.text}: {i.note}" for i in injections]


def junit_suite(injections: list[Injection], seconds: float) -> ET.Element | None:
    """--junit's suite of the run's injections: a case per injection, failed when it never fired (a CI job whose
    test injected nothing must not pass); None when none was planned."""
    if not injections:
        return None
    out = junit.suite("echo injections", seconds)
    for i in injections:
        junit.case(out, "echo.injections", f"{i.text} fired", seconds, None if i.fired else i.note, i.note,
                   i.note if i.fired else "")
    return out


def as_rows(injections: list[Injection]) -> list[dict]:
    """As the store keeps them (runs.injections)."""
    return [asdict(i) for i in injections]
