"""The SDR mode (send-deterministic replication): planning and the verdict.

`echorun -n 8 --mode sdr --replicas 2 ./app` runs every rank as 2 replicas;
the preload library's SDR layer (preload/sdr/echo_sdr*.c, docs/sdr.md) keeps the
job going as long as one replica of every rank lives. Here: the plan lines,
the kill injector's spec (`--inject kill:rank=R,replica=K,call=N` or
`after=T`), and what a job's end means (mpirun reports the killed replicas as
failures; the job succeeded if every rank finished in some replica).
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from echo.collectors import roles
from echo.modes.mode import Ending, Mode, Say
from echo.runformat.constants import SDR_MAX_REPLICAS
from echo.runformat.runfiles import ECHO_STOPPED, SDR_LOST, SDR_SLOW
from echo.runformat.spec import parse_spec, seconds, split_specs

if TYPE_CHECKING:
    from echo.runformat.procstatus import ProcessEnd

MAX_REPLICAS = SDR_MAX_REPLICAS  # acks are tracked in a bit mask per message


class SdrError(ValueError):
    """A --mode sdr option that cannot be honoured."""


def check(replicas: int, clones: str | None, others: list[str]) -> None:
    """Options SDR cannot combine with, named."""
    if clones:
        raise SdrError("--mode sdr makes its own copies: give --replicas R, not --clones")
    if not 2 <= replicas <= MAX_REPLICAS:
        raise SdrError(f"--replicas {replicas}: SDR needs 2 to {MAX_REPLICAS} replicas of each rank")
    if others:
        raise SdrError(f"--mode sdr does not combine with {', '.join(others)} (replicas all do the same work)")


def exclusion_lines(exclude_slow: int | None, rejoin_after: int, nprocs: int, cores: int) -> list[str]:
    """The plan line of slow replicas' exclusion (preload/sdr/echo_sdr_slow.c), checked.  Unless asked for, it is
    off when the job has more processes than the machine has cores: replicas sharing a core take turns, and
    their turns look like slow rounds (docs/perf.md)."""
    if exclude_slow is not None and exclude_slow < 0:
        raise SdrError(f"--exclude-slow {exclude_slow}: judged rounds a replica is slow before it is excluded, "
                       ">= 1 (0: never)")
    if rejoin_after < 1:
        raise SdrError(f"--rejoin-after {rejoin_after}: judged rounds a replica is well before it is taken back, >= 1")
    if exclude_slow is None:
        exclude_slow = 2 if nprocs <= cores else 0
    return [f"sdr_exclude {exclude_slow} {rejoin_after}"] if exclude_slow else []


def parse_kills(spec: str, nranks: int, replicas: int) -> list[str]:
    """`kill:rank=1,replica=0,call=40;kill:rank=2,replica=1,after=1.5s` -> plan lines
    `sdr_kill_<i> <rank> <replica> call|after <value>`."""
    lines = []
    for i, one in enumerate(split_specs(spec)):
        item = parse_spec(one)
        values = item.values
        when = set(values) - {"rank", "replica"}
        if item.kind != "kill" or not item.has_settings or not {"rank", "replica"} <= set(values) or \
                when not in ({"call"}, {"after"}):
            raise SdrError(f"--inject {one}: with --mode sdr, expected kill:rank=R,replica=K,call=N (at its MPI "
                           "call numbered N, as mpiecho report numbers them) or kill:rank=R,replica=K,after=T "
                           "(s or ms after MPI_Init); several separated by ';'")
        what = when.pop()
        try:
            rank, replica = int(values["rank"]), int(values["replica"])
            value = int(values[what]) if what == "call" else seconds(values[what])
        except ValueError as e:
            raise SdrError(f"--inject {one}: {e}") from None
        if not 0 <= rank < nranks:
            raise SdrError(f"--inject {one}: rank {rank} does not exist (ranks are 0..{nranks - 1})")
        if not 0 <= replica < replicas:
            raise SdrError(f"--inject {one}: replica {replica} does not exist (replicas are 0..{replicas - 1})")
        if value < (1 if what == "call" else 0):
            raise SdrError(f"--inject {one}: {what} must be {'>= 1' if what == 'call' else '>= 0'}")
        lines.append(f"sdr_kill_{i} {rank} {replica} {what} {value}")
    return lines


class Exclusion(NamedTuple):
    """One line of RUN_DIR/sdr.slow (preload/sdr/echo_sdr_slow.c): a replica excluded as slow ("out"), taken back
    ("in") or stopped at the job's end while excluded ("stopped"), at its `call`th MPI call."""

    what: str
    rank: int
    replica: int
    call: int
    time: float  # seconds since the epoch


def exclusions(run_dir: Path) -> list[Exclusion]:
    path = run_dir / SDR_SLOW
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        w = line.split()
        if len(w) == 5:
            out.append(Exclusion(w[0], int(w[1]), int(w[2]), int(w[3]), float(w[4])))
    return sorted(out, key=lambda e: e.time)


EXCLUSION_SAID = {"out": "excluded as slow (its world takes its messages from a sibling)",
                  "in": "taken back (caught up, agreed by its rank's replicas)",
                  "stopped": "stopped at the end, still excluded (its rank's output is its siblings')"}


def exclusion_text(e: Exclusion) -> str:
    """What happened to the replica, and when (the store's event message)."""
    return f"{EXCLUSION_SAID[e.what]} at its call {e.call}"


def describe_exclusions(events: list[Exclusion]) -> list[str]:
    return [f"SDR: rank {e.rank} replica {e.replica} {exclusion_text(e)}" for e in events]


@dataclass(frozen=True)
class Outcome:
    status: int  # the job's exit status as echorun reports it
    lines: list[str]  # what to say


def application_failure(run_dir: Path, nprocs: int) -> tuple[int, ProcessEnd] | None:
    """The first process (by time) whose program exited with a non-zero status, with its real rank: mpirun ends
    every other process once one does, and then reports replicas it ended as failures, or none at all."""
    from echo.runformat.procstatus import read_status

    failed = [(end.time, real, end) for real in range(nprocs)
              if (end := read_status(run_dir, real)) and end.exit_status]
    return min(failed)[1:] if failed else None


def verdict(run_dir: Path, nranks: int, replicas: int, rc: int) -> Outcome:
    """Under ULFM mpirun's status counts the killed replicas (or misses them): the job's status is the
    application's, the exit status of the replicas that finished (non-zero if a process of the application
    exited non-zero), when every rank finished in at least one replica; the output of a rank whose replica 0
    died continues in a file."""
    from echo.runformat.procstatus import read_status

    lost, ended_early = [], False
    lines = describe_exclusions(exclusions(run_dir))
    # the application's own MPI_Abort (echo_sdr_aborts): a replica other than 0 said so only in its own error file
    stop = run_dir / ECHO_STOPPED
    if stop.is_file() and "called MPI_Abort" in (said := stop.read_text(errors="replace").strip()):
        lines.append(said.removeprefix("echo: "))
    failure = application_failure(run_dir, nranks * replicas)
    note = run_dir / SDR_LOST  # left by the first process that saw every replica of a rank dead
    if note.is_file():
        ended_early = True
        app, replicas_of = note.read_text().split()[:2]
        lines.append(f"SDR: every replica of application rank {app} failed ({replicas_of} of {replicas_of}): its "
                     "messages are lost and the job cannot go on. Run with more replicas (--replicas), or see "
                     "mpiecho plan --reliability.")
    for app in range(nranks):
        ends = [read_status(run_dir, k * nranks + app) for k in range(replicas)]
        done = [k for k, e in enumerate(ends) if e is not None and e.state == "finalized"]
        # once the application failed, mpirun ends the processes still running: not replicas lost
        dead = [k for k, e in enumerate(ends) if e is None or e.state not in ("finalized", "stopped")
                and not (failure and (e.exit_status or e.state == "finalizing" or e.signal == signal.SIGTERM))]
        stopped = [k for k, e in enumerate(ends) if e is not None and e.state == "stopped"]
        ended_early |= bool(dead or stopped)
        if not done:
            lost.append(app)
            continue
        if 0 in stopped:
            lines.append(f"SDR: rank {app}'s output after replica 0 was stopped is in "
                         f"{run_dir / 'output' / f'rank{app}.copy{done[0]}.out'}")
        if dead:
            lines.append(f"SDR: rank {app} lost replica{'s' if len(dead) > 1 else ''} "
                         f"{', '.join(map(str, dead))} and finished in replica {done[0]}")
            if 0 in dead:
                lines.append(f"SDR: rank {app}'s output after replica 0 died is in "
                             f"{run_dir / 'output' / f'rank{app}.copy{done[0]}.out'}")
    if failure:
        real, end = failure
        lines.append(f"SDR: application rank {real % nranks} replica {real // nranks} exited with status "
                     f"{end.exit_status}: the application's status (mpirun then ends the processes still running)")
        return Outcome(end.exit_status, lines + ([f"SDR: ranks {lost} did not finish in any replica"] if lost else []))
    if lost:
        return Outcome(rc or 1, lines + [f"SDR: the job stopped before ranks {lost} finished in any replica"])
    if not ended_early:  # no replica died or was stopped: mpirun's status is the application's
        return Outcome(rc, lines)
    lines.append("SDR: the job finished (mpirun's messages about killed or stopped processes are those replicas)")
    return Outcome(0, lines)


class Sdr(Mode):
    name = "sdr"
    ulfm = True
    word = "replica"
    options = (
        {"flags": ["--replicas"], "type": int, "default": 2, "metavar": "R",
         "help": "replicas of each rank (default 2; mpiecho plan --reliability helps choose)"},
        {"flags": ["--exclude-slow"], "type": int, "default": None, "metavar": "N",
         "help": "exclude a replica slower than its siblings for N judged rounds in a row, so nobody waits for it "
                 "(0: never; default 2, or never when processes outnumber cores: replicas taking turns on a core "
                 "look slow); docs/perf.md"},
        {"flags": ["--rejoin-after"], "type": int, "default": 3, "metavar": "N",
         "help": "take an excluded replica back after N judged rounds in a row at its siblings' speed, once it "
                 "has caught up (default 3)"},
    )

    def per_rank(self, clones: str | None, args: Any) -> tuple[int, str]:
        return getattr(args, "replicas", 2), "replicas"

    def copies(self, opts: Any) -> list[int]:
        """Every rank's replicas, checked against the options SDR cannot combine with."""
        check(opts.replicas, opts.clones, (["--sdc"] if opts.sdc else []) + roles.flags_given(opts))
        return [opts.replicas] * opts.nranks

    def role(self, copy: int) -> str:
        return "replica"

    def injections(self, opts: Any) -> tuple[str, ...]:
        return ("kill",)

    def lines(self, opts: Any, copies: list[int], procs: list[Any], machine: Any) -> list[str]:
        kills = parse_kills(opts.inject, opts.nranks, opts.replicas) if opts.inject else []
        return ["mode sdr", *kills, *exclusion_lines(opts.exclude_slow, opts.rejoin_after, len(procs), machine.cores)]

    def apart(self, opts: Any) -> str | None:
        return "SDR replicas apart"

    def ended(self, opts: Any, plan: Any, rc: int, deployment: int, say: Say) -> Ending:
        """mpirun's status counts the replicas that died."""
        outcome = verdict(Path(opts.run_dir), opts.nranks, opts.replicas, rc)
        for line in outcome.lines:
            say(line)
        return Ending(outcome.status)


MODE = Sdr()
