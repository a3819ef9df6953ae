"""SDR mode (send-deterministic replication): planning and the verdict.

`echorun -n 8 --mode sdr --replicas 2 ./app` runs every rank as 2 replicas;
the preload library's SDR layer (preload/echo_sdr*.c, docs/sdr.md) keeps the
job going as long as one replica of every rank lives. Here: the plan lines,
the kill injector's spec (`--inject kill:rank=R,replica=K,call=N` or
`after=T`), and what a job's end means (mpirun reports the killed replicas as
failures; the job succeeded if every rank finished in some replica).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

MAX_REPLICAS = 8  # preload/echo_sdr.h: acks are tracked in a bit mask per message


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


def _seconds(text: str) -> float:
    for suffix, scale in (("ms", 1e-3), ("s", 1.0), ("m", 60.0)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * scale
    return float(text)


def parse_kills(spec: str, nranks: int, replicas: int) -> list[str]:
    """`kill:rank=1,replica=0,call=40;kill:rank=2,replica=1,after=1.5s` -> plan lines
    `sdr_kill_<i> <rank> <replica> call|after <value>`."""
    lines = []
    for i, one in enumerate(filter(None, (s.strip() for s in spec.split(";")))):
        kind, sep, rest = one.partition(":")
        values = dict(item.partition("=")[::2] for item in rest.split(",") if item)
        when = set(values) - {"rank", "replica"}
        if kind != "kill" or not sep or not {"rank", "replica"} <= set(values) or when not in ({"call"}, {"after"}):
            raise SdrError(f"--inject {one}: with --mode sdr, expected kill:rank=R,replica=K,call=N (its Nth MPI "
                           "call) or kill:rank=R,replica=K,after=T (s or ms after MPI_Init); several separated by ';'")
        what = when.pop()
        try:
            rank, replica = int(values["rank"]), int(values["replica"])
            value = int(values[what]) if what == "call" else _seconds(values[what])
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


@dataclass(frozen=True)
class Outcome:
    status: int  # the job's exit status as echorun reports it
    lines: list[str]  # what to say


def verdict(run_dir: Path, nranks: int, replicas: int, rc: int) -> Outcome:
    """Under ULFM mpirun's status counts the killed replicas (or misses them): the job succeeded when every rank
    finished in at least one replica; the output of a rank whose replica 0 died continues in a file."""
    from echo.procstatus import read_status

    lost, lines = [], []
    note = run_dir / "sdr.lost"  # left by the first process that saw every replica of a rank dead
    if note.is_file():
        app, replicas_of = note.read_text().split()[:2]
        lines.append(f"SDR: every replica of application rank {app} failed ({replicas_of} of {replicas_of}): its "
                     "messages are lost and the job cannot go on. Run with more replicas (--replicas), or see "
                     "mpiecho plan --reliability.")
    for app in range(nranks):
        ends = [read_status(run_dir, k * nranks + app) for k in range(replicas)]
        done = [k for k, e in enumerate(ends) if e is not None and e.state == "finalized"]
        dead = [k for k, e in enumerate(ends) if e is None or e.state != "finalized"]
        if not done:
            lost.append(app)
        elif dead:
            lines.append(f"SDR: rank {app} lost replica{'s' if len(dead) > 1 else ''} "
                         f"{', '.join(map(str, dead))} and finished in replica {done[0]}")
            if 0 in dead:
                lines.append(f"SDR: rank {app}'s output after replica 0 died is in "
                             f"{run_dir / 'output' / f'rank{app}.copy{done[0]}.out'}")
    if lost:
        return Outcome(rc or 1, lines + [f"SDR: the job stopped before ranks {lost} finished in any replica"])
    if not lines:  # no replica died: mpirun's status is the application's
        return Outcome(rc, lines)
    lines.append("SDR: the job finished (mpirun's messages about killed processes are the replicas that died)")
    return Outcome(0, lines)
