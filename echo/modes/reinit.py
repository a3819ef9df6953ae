"""The Reinit mode (global restart without re-deploying the job, preload/reinit/, docs/reinit.md): its options
and plan lines, the kill injector's spec (`--inject kill:rank=R,after=T[;...]`), starting the job again when every
process of it failed (no survivor was left to repair the world), and what a job's end means (mpirun's status counts
the processes the repairs replaced, or misses a failure). The application's side, `echo.reinit.reinit` and the
checkpoints, is echo/reinit.py.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path
from typing import Any

from echo.collectors import roles
from echo.modes.mode import Ending, Mode, Say
from echo.runformat import runfiles
from echo.runformat.procstatus import read_status
from echo.runformat.spec import parse_spec, seconds, split_specs

# A job whose every process failed is started again (deployed anew) at most this often in all; the library reads
# the deployment's number from this variable, and every process of a later deployment starts RESTARTED
DEPLOYMENT_ENV = "ECHO_REINIT_DEPLOYMENT"
MAX_DEPLOYMENTS = 3
# the ends of a process that failed from outside (killed: SIGKILL leaves no word; a stop) rather than crashing by
# itself, whose fault a new deployment would meet again
KILLED = (None, signal.SIGKILL, signal.SIGTERM, signal.SIGHUP)


class ReinitError(ValueError):
    """A --mode reinit option that cannot be honoured."""


def parse_kills(spec: str, nranks: int) -> list[str]:
    """`kill:rank=3,after=2s;kill:rank=1,repair=1` -> plan lines `reinit_kill_<k> <rank> <seconds>` (a time after
    the job's MPI_Init), `reinit_kill_<k> <rank> repair <n>` (in the middle of the job's nth repair, once the
    missing processes were started) or, for `kill:rank=R,at=finalize` and `kill:rank=R,at=MPI_Comm_split`,
    `reinit_kill_<k> <rank> finalize` (in its MPI_Finalize, once the rank said it reached it) and
    `reinit_kill_<k> <rank> at MPI_Comm_split` (as it enters its first call of that function after MPI_Init)."""
    lines = []
    for k, one in enumerate(split_specs(spec)):
        item = parse_spec(one)
        values = item.values
        if item.kind != "kill" or not item.has_settings or \
                set(values) not in ({"rank", "after"}, {"rank", "repair"}, {"rank", "at"}) or \
                not re.fullmatch(r"finalize|MPI_[A-Za-z0-9_]+", values.get("at", "finalize")):
            raise ReinitError(f"--inject {one}: with --mode reinit, expected kill:rank=R,after=T (T in s or ms after "
                              "the job's MPI_Init), kill:rank=R,repair=N (during the job's Nth repair) or "
                              "kill:rank=R,at=finalize (in its MPI_Finalize) or kill:rank=R,at=MPI_Xxx (as it "
                              "enters its first call of MPI_Xxx); several separated by ';'")
        try:
            rank = int(values["rank"])
            if "at" in values:
                when = 1
            else:
                when = seconds(values["after"]) if "after" in values else int(values["repair"])
        except ValueError as e:
            raise ReinitError(f"--inject {one}: {e}") from None
        if not 0 <= rank < nranks:
            raise ReinitError(f"--inject {one}: rank {rank} does not exist (ranks are 0..{nranks - 1})")
        if when < 0 or ("repair" in values and when < 1):
            raise ReinitError(f"--inject {one}: after must be >= 0, repair >= 1")
        at = values.get("at")
        lines.append(f"reinit_kill_{k} {rank} finalize" if at == "finalize" else
                     f"reinit_kill_{k} {rank} at {at}" if at else
                     f"reinit_kill_{k} {rank} {when}" if "after" in values else f"reinit_kill_{k} {rank} repair {when}")
    return lines


def nothing_left(run_dir: Path, nprocs: int) -> bool:
    """Whether every process of the job's world was killed before the application finished (none exited, none
    crashed by itself): no survivor was left to repair from, the last ones dying while they started the others
    again, or all at once. The library's note that the application finished (reinit.done) says otherwise."""
    if (Path(run_dir) / runfiles.REINIT_DONE).exists():
        return False
    ends = [read_status(Path(run_dir), real) for real in range(nprocs)]
    return all(e is not None and e.exit_status is None and e.state not in ("finalizing", "finalized")
               and e.signal in KILLED for e in ends)


def stopped(run_dir: Path) -> tuple[str, int] | None:
    """A job the library ended itself (the application's MPI_Abort, or the watchdog of a failure MPI never
    reported): its note (runfiles.ECHO_STOPPED) and the job's status, the first exit status a process recorded
    that is not 0 (the abort's code; the watchdog's 70), else 70."""
    note = Path(run_dir) / runfiles.ECHO_STOPPED
    if not note.is_file():
        return None
    ends = [e for f in runfiles.status_files(Path(run_dir)) if f.stem.isdigit()
            and (e := read_status(Path(run_dir), int(f.stem))) and e.exit_status]
    status = min(ends, key=lambda e: e.time).exit_status if ends else 70
    return note.read_text(errors="replace").strip().removeprefix("echo: "), status


def earlier_deployments(run_dir: Path) -> list[str]:
    """A line for each deployment of a Reinit job that ended with every process failed, for the store: how each
    of its processes ended, and where its files are."""
    out = []
    for kept in sorted(Path(run_dir, "deployments").glob("*/procs"), key=lambda p: int(p.parent.name)):
        ends = [(int(f.stem), read_status(kept.parent, int(f.stem))) for f in kept.glob("*.status")]
        said = ", ".join(f"process {real} {end.text() if end else 'unknown'}" for real, end in sorted(ends))
        out.append(f"deployment {kept.parent.name}: every process failed ({said}), no survivor was left to repair "
                   f"the world, and echorun started the job again; its files: {kept.parent}")
    return out


def reinit_lines(opts: Any, copies: list[int]) -> list[str]:
    """The plan's lines of --mode reinit, its options checked."""
    if max(copies) > 1 or opts.sdc or roles.flags_given(opts):
        *most, last = ["--clones", "--sdc", *roles.flags()]
        raise ReinitError(f"--mode reinit runs one process per rank: it does not combine with {', '.join(most)} "
                          f"or {last}")
    if opts.checkpoint != "memory" and not (opts.checkpoint.startswith("files:") and len(opts.checkpoint) > 6):
        raise ReinitError(f"--checkpoint {opts.checkpoint}: expected memory or files:DIR")
    if not opts.failure_watchdog >= 0:
        raise ReinitError(f"--failure-watchdog {opts.failure_watchdog:g}: seconds, >= 0 (0: no watchdog)")
    lines = ["mode reinit", f"checkpoint {opts.checkpoint}", f"reinit_watchdog {opts.failure_watchdog:g}"]
    if opts.inject:
        lines += parse_kills(opts.inject, opts.nranks)
    if opts.reinit_hosts:
        hosts = opts.reinit_hosts.split(",")
        if len(hosts) != opts.nranks or not all(hosts):
            raise ReinitError(f"--reinit-hosts {opts.reinit_hosts}: give one host name per rank ({opts.nranks})")
        lines += [f"reinit_host_{r} {h}" for r, h in enumerate(hosts)]
    if opts.hostfile:
        lines += [f"reinit_slots_{host} {slots}" for host, slots in hostfile_slots(opts.hostfile)]
    return lines


def hostfile_slots(path: str) -> list[tuple[str, int]]:
    """(host, slots) of an Open MPI hostfile's lines that give slots."""
    out = []
    for line in Path(path).read_text().splitlines():
        words = line.split("#")[0].split()
        slots = [w.split("=", 1)[1] for w in words[1:] if w.startswith("slots=")]
        if words and slots and slots[0].isdigit():
            out.append((words[0], int(slots[0])))
    return out


def redeploy(run_dir: Path, nprocs: int, deployment: int, say: Say) -> bool:
    """Whether a Reinit job whose deployment `deployment` just ended is to be started again: every process of it
    was killed, so no survivor was left to repair the world (docs/reinit.md). What it wrote is set aside."""
    if not nothing_left(run_dir, nprocs):
        return False
    if deployment == MAX_DEPLOYMENTS:
        say(f"Reinit: every process of the job failed again, in each of its {deployment} deployments: the job ends")
        return False
    kept = runfiles.set_aside_deployment(run_dir, deployment)
    checkpoints = runfiles.plan_value(run_dir, "checkpoint") or "memory"
    say(f"Reinit: every process of the job failed, so none was left to repair the world (mpirun's messages above): "
        f"the job starts again ({deployment + 1} of at most {MAX_DEPLOYMENTS} deployments), every process in "
        f"the RESTARTED state, from " + ("the newest checkpoint every rank has in " + checkpoints.removeprefix("files:")
                                         if checkpoints.startswith("files:") else
                                         "its beginning (checkpoints in memory died with the processes)")
        + f"; what the failed deployment wrote: {kept}")
    return True


def reinit_verdict(run_dir: Path, nprocs: int, rc: int, deployment: int, say: Say) -> int:
    """A Reinit job's exit status: 0 if it was repaired and then finished (failures were replaced, not lost);
    not 0 if it ended without finishing (with ULFM, mpirun may report 0 for a job whose processes failed)."""
    done = run_dir / runfiles.REINIT_DONE
    again = f" in its deployment {deployment} (started again after every process failed)" if deployment > 1 else ""
    if not done.exists():
        if ended := stopped(run_dir):  # echo ended it: the application's abort, or the watchdog
            say(f"{ended[0]} (exit status {ended[1]})")
            return ended[1]
        ends = [read_status(run_dir, real) for real in range(nprocs)]
        if rc == 0 and any(e is None or e.state != "finalized" for e in ends):
            say("Reinit: the application did not finish: a process failed where no restart point could take "
                "it back (see the messages above)")
            return 1
        if rc == 0 and again:
            say(f"Reinit: the application finished{again}")
        return rc
    words = done.read_text().split()
    repairs = int(words[1]) if len(words) == 2 and words[1].isdigit() else 0
    say(f"Reinit: the application finished{again} after {repairs} repair{'s' if repairs != 1 else ''} of its world "
        "(mpirun's messages about processes that ended without MPI_Finalize are those repairs: after one, "
        "processes end without Open MPI's closing fence, which would wait for the failed ones)")
    return 0


class Reinit(Mode):
    name = "reinit"
    ulfm = True
    word = "process"
    restarts = True
    options = (
        {"flags": ["--checkpoint"], "default": "memory", "metavar": "memory|files:DIR",
         "help": "keep checkpoints in memory with a copy on a buddy rank (default), or in files under DIR (survive "
                 "the loss of a node if DIR is shared)"},
        {"flags": ["--reinit-hosts"], "default": None, "metavar": "H,H,...",
         "help": "the host of each rank, simulated, to see where ranks of a lost host restart (testing on one "
                 "machine)"},
        {"flags": ["--failure-watchdog"], "type": float, "default": 60.0, "metavar": "S",
         "help": "a process failure MPI has not reported in S seconds to a survivor waiting in a call (Open MPI's "
                 "one-sided epochs never report one) ends the job, naming the process and the call (default 60; "
                 "0: wait for ever)"},
    )

    def value(self, dest: str, given: Any) -> Any:
        """files:DIR is made absolute: the processes run elsewhere than echorun's directory."""
        kind, sep, where = str(given).partition(":")
        return f"files:{Path(where).absolute()}" if dest == "checkpoint" and kind == "files" and sep and where \
            else given
    oversubscribe = True  # a failed rank is started again while its slot still counts as taken

    def injections(self, opts: Any) -> tuple[str, ...]:
        return ("kill",)

    def lines(self, opts: Any, copies: list[int], procs: list[Any], machine: Any) -> list[str]:
        return reinit_lines(opts, copies)

    def mpirun_args(self) -> list[str]:
        # coll/han decides per process whether it takes a communicator merged with restarted processes: their
        # collectives then never match (a hang). osc/sm takes a window only where every member is on this node,
        # which a restarted (spawned) process and the survivors judged differently: their MPI_Win_allocate ran
        # different collectives (a hang)
        return super().mpirun_args() + ["--mca", "coll", "^han", "--mca", "osc", "^sm"]

    def relaunch(self, run_dir: Path, nprocs: int, deployment: int, say: Say) -> dict[str, str] | None:
        return {DEPLOYMENT_ENV: str(deployment + 1)} if redeploy(run_dir, nprocs, deployment, say) else None

    def ended(self, opts: Any, plan: Any, rc: int, deployment: int, say: Say) -> Ending:
        """mpirun's status counts the processes the repairs replaced, or misses a failure."""
        return Ending(reinit_verdict(Path(opts.run_dir), plan.nprocs, rc, deployment, say))


MODE = Reinit()
