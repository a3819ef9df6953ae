"""The clones mode (`--mode clones`, the default): each rank runs as --clones copies, copy 0 its representative
(preload/clone/, docs/replication.md); the plan's lines for SDC, the copies' file view and the shared time-stamp
counter; after the job, which copies did not finish and SDC's verdict.

SDC is an option of this mode (`--sdc detect|stop|vote`), not a mode of its own: it compares the copies this mode
makes, and in the library it is part of the clone layer (preload/clone/echo_sdc.c), not an `echo_mode_t`. Its
grammar and the events the library writes are echo/sdc.py's, read by the store and the report too."""

from __future__ import annotations

import os
import secrets
import signal
import time
from pathlib import Path
from typing import Any

from echo import fileview, sdc
from echo.collectors import roles
from echo.modes.mode import Ending, Mode, Say
from echo.runformat.constants import EXIT_COPY_FAILED, EXIT_DIVERGED
from echo.runformat.procstatus import read_status


def junit_says(last: str) -> str:
    """What --junit reports: SDC's verdict and each role's suite (its SPEC's "junit_says"), `last` before the last."""
    says = ["SDC (--sdc detect|stop|vote)", *roles.junit_says()]
    return ", ".join(says[:-1]) + last + says[-1] if len(says) > 1 else says[0]


def sdc_lines(opts: Any, copies: list[int]) -> list[str]:
    """The plan's lines of --sdc, its options checked."""
    if opts.sdc is None:  # an --inject bitflip/memflip without --sdc was refused with the kinds' needs
        if opts.junit and not any(junit(opts) for junit in roles.hooks("junit")):
            raise sdc.SdcError(f"--junit reports {junit_says(' or ')}: give one of them")
        return []
    sdc.check_mode(opts.sdc, copies)
    if opts.sdc_every < 1:
        raise sdc.SdcError(f"--sdc-every {opts.sdc_every}: check every Nth call, N >= 1")
    if opts.sdc_only not in ("all", "collectives"):
        raise sdc.SdcError(f"--sdc-only {opts.sdc_only}: expected all or collectives")
    # the seed of the stack canary a rank's processes share (preload/core/echo_canary.c): drawn for each run
    lines = [f"sdc {opts.sdc}", f"sdc_every {opts.sdc_every}", f"sdc_only {opts.sdc_only}",
             f"sdc_seed {secrets.randbits(64):016x}"]
    if opts.sdc_exclude:
        lines.append(f"sdc_exclude {','.join(sdc.parse_exclude(opts.sdc_exclude))}")
    if opts.inject:
        lines.append(f"inject {sdc.parse_inject(opts.inject, copies)}")
    return lines


def tsc_lines(opts: Any, copies: list[int]) -> list[str]:
    """The plan's `tsc share` line: the application's rdtsc traps and copies read their representative's counter.
    Under --sdc unless --tsc own (a copy reading its own counter is a false alarm in a code that gathers cycle
    counts; the trap costs microseconds per read, an MPI call only when the MPI reads the counter in it:
    bench/results/tsc_trap.md), or with --tsc share; copies of a rank only."""
    share = opts.tsc == "share" or (opts.tsc is None and opts.sdc is not None)
    return ["tsc share"] if share and max(copies) > 1 else []


def copies_not_finished(plan: Any, run_dir: Path) -> list[tuple[int, int]]:
    """(rank, copy) of every copy (not a representative: its end is the application's) that did not end as its
    representative did: a signal ended it, or it stopped at another point (no MPI_Finalize where its
    representative finalized) or with another exit status."""
    ends = {real: read_status(run_dir, real) for real in range(plan.nprocs)}
    reps = {plan.proc(real).app: end for real, end in ends.items() if plan.proc(real).copy == 0}
    out = []
    for real, end in ends.items():
        p, rep = plan.proc(real), reps.get(plan.proc(real).app)
        if p.copy == 0:
            continue
        same = end is not None and rep is not None and not end.signal and end.state == rep.state \
            and (end.exit_status or 0) == (rep.exit_status or 0)
        if not same:
            # a crash or an exit status of its own first, then the processes ended (killed) once one failed
            own = end is not None and (bool(end.exit_status) or end.signal not in (None, signal.SIGTERM,
                                                                                  signal.SIGKILL))
            out.append((not own, end.time if end else 0.0, p.app, p.copy))
    return [(app, copy) for *_, app, copy in sorted(out)]


def compare_files(opts: Any, plan: Any, lost: list[tuple[int, int]], say: Say) -> None:
    """Under --sdc, the files each copy wrote against its representative's (echo/fileview.py): their differences
    join the SDC events.  Not when a copy did not finish (its files are not its last)."""
    if opts.file_view != "on" or lost or max(plan.copies) < 2:
        return
    start = time.monotonic()
    events, shared = fileview.compare(Path(opts.run_dir), plan.copies, opts.sdc == "vote")
    say(f"SDC: compared the files the copies wrote with their representatives' in {time.monotonic() - start:.2f} s"
        + (f": {len(events)} differences" if events else "")
        + (f"; {len(shared)} files written by several ranks not compared (a copy holds its own rank's writes "
           f"only), e.g. {min(shared)}" if shared else ""))


def sdc_verdict(opts: Any, rc: int, lost: list[tuple[int, int]], say: Say) -> int:
    """Say what the copies' comparison found; the exit status says it too.  Copies that did not finish were not
    compared to the end: the verdict is never "clean" then."""
    events = sdc.read_events(Path(opts.run_dir))
    for e in events[:10]:
        say(f"SDC {e.kind}: {e.describe()}")
    if len(events) > 10:
        say(f"SDC ... {len(events) - 10} more events (mpiecho report)")
    result = sdc.outcome(events)
    status = sdc.exit_status(rc, events)
    if lost and result == "clean":
        who = ", ".join(f"rank {r} copy {c}" for r, c in lost[:8]) + (" ..." if len(lost) > 8 else "")
        result = f"incomplete: {who} did not finish, so the copies were not compared to the end"
        status = status or EXIT_COPY_FAILED
    say(f"SDC ({opts.sdc}): {result}; exit status {status}")
    if opts.junit:
        sdc.write_junit(Path(opts.junit), Path(opts.program[0]).name, opts.nranks, rc, events)
        say(f"JUnit report: {opts.junit}")
    return status


class Clones(Mode):
    name = "clones"

    def injections(self, opts: Any) -> tuple[str, ...]:
        return ("bitflip", "memflip") if opts.sdc is not None else ()

    def lines(self, opts: Any, copies: list[int], procs: list[Any], machine: Any) -> list[str]:
        return sdc_lines(opts, copies) + fileview.plan_lines(copies, opts.file_view) + tsc_lines(opts, copies)

    def env(self, opts: Any) -> dict[str, str]:
        # under --sdc, bytes the program never wrote are alike in every copy (echo/sdc.py)
        return {"GLIBC_TUNABLES": sdc.heap_tunables(os.environ.get("GLIBC_TUNABLES"))} if opts.sdc else {}

    def same_layout(self, opts: Any) -> bool:
        # under --sdc, the code addresses a program leaves on its stack (its calls' return addresses) are alike in a
        # representative and its copies only where their programs and libraries are loaded at the same addresses
        return opts.sdc is not None

    def notes(self, opts: Any, copies: list[int]) -> list[str]:
        notes = [n for n in [fileview.describe(copies, opts.file_view, opts.run_dir)] if n]
        if self.same_layout(opts):
            notes.append("address space randomization off (--sdc: what a program never wrote holds the same addresses "
                         "in every copy; docs/sdc.md)")
        if tsc_lines(opts, copies):
            notes.append("time-stamp counter: copies read their representative's (the application's rdtsc traps)")
        return notes

    def apart(self, opts: Any) -> str | None:
        return "SDC copies apart" if opts.sdc else None

    def ended(self, opts: Any, plan: Any, rc: int, deployment: int, say: Say) -> Ending:
        stopped_by_sdc = opts.sdc == "stop" and rc == EXIT_DIVERGED  # the SDC report explains it
        lost = [] if stopped_by_sdc else copies_not_finished(plan, Path(opts.run_dir))
        # the representatives finished, some copy did not: never a success
        return Ending(EXIT_COPY_FAILED if rc == 0 and lost else rc, lost, explained=stopped_by_sdc)

    def verdict(self, opts: Any, plan: Any, ending: Ending, say: Say) -> int:
        if not opts.sdc:
            return ending.status
        if not ending.explained:  # the copies were stopped: their files are not their last
            compare_files(opts, plan, ending.lost, say)
        return sdc_verdict(opts, ending.status, ending.lost, say)


MODE = Clones()
