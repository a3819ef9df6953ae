"""Reinit mode: global restart without re-deploying the job.

`reinit(main)` is the Python form of C's MPI_Reinit: it calls `main(state)`
with "new" (or "restarted" in a process started again in place of a failed
one); when a process of the job fails, echo repairs the world and the MPI call
that saw the failure raises mpi4py's MPI.Exception with echo's error code:
`reinit` catches it and calls `main("reinited")`. Outside echorun's reinit
mode it just calls `main("new")`.

`parse_kills` turns echorun's `--inject kill:rank=R,after=T[;...]` into plan lines; `nothing_left` tells echorun
that every process of a job failed, so that only starting the job again can restart it.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from echo import runfiles
from echo.procstatus import read_status
from echo.spec import parse_spec, seconds, split_specs

T = TypeVar("T")
STATES = {0: "new", 1: "reinited", 2: "restarted"}
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


def _checked(call: Callable[[], int]) -> int:
    """Run a checkpoint call of the library; a repair during it is the failure Python sees as an exception."""
    from mpi4py import MPI

    from echo import lib

    _ffi, clib = lib._lib()
    before = clib.echo_reinit_repairs()
    result = call()
    if clib.echo_reinit_repairs() != before:
        raise MPI.Exception(clib.echo_reinit_error_code())
    return result


def checkpoint_store(name: str, data: bytes) -> None:
    """Keep `data` under `name` in the checkpoint version being prepared (local)."""
    from echo import lib

    if lib.available():
        lib._lib()[1].echo_ckpt_store(name.encode(), data, len(data))


def checkpoint_commit(version: int) -> None:
    """Make `version` this rank's checkpoint (collective over MPI.COMM_WORLD)."""
    from echo import lib

    if lib.available():
        _checked(lambda: lib._lib()[1].echo_ckpt_commit(version))


def checkpoint_latest() -> int:
    """The latest version every rank committed, -1 if none (collective)."""
    from echo import lib

    return _checked(lambda: lib._lib()[1].echo_ckpt_latest()) if lib.available() else -1


def checkpoint_load(name: str, size: int) -> bytes | None:
    """At most `size` bytes of `name` from the latest version (after checkpoint_latest), None if it has none."""
    from echo import lib

    if not lib.available():
        return None
    ffi, clib = lib._lib()
    buf = ffi.new("char[]", size)
    if clib.echo_ckpt_load(name.encode(), buf, size) != 0:
        return None
    return ffi.buffer(buf, size)[:]


def reinit(main: Callable[[str], T]) -> T:
    """Run `main(state)` and run it again, state "reinited", each time the world is repaired."""
    from echo import lib

    if not lib.available():
        return main("new")
    from mpi4py import MPI

    ffi, clib = lib._lib()
    state = STATES[clib.echo_reinit_begin()]
    try:
        while True:
            try:
                return main(state)
            except MPI.Exception as e:
                if e.Get_error_code() != clib.echo_reinit_error_code():
                    raise
                state = "reinited"
    finally:
        clib.echo_reinit_end()
