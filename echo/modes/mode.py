"""What a mode (echorun --mode) is to the rest of echo: one object with a small interface, which planning
(echo/plan.py), the launcher (echo/launch.py), Slurm's default ranks (echo/slurm.py) and placement (echo/placement.py)
ask instead of testing the mode's name, as the library's wrappers call through its `echo_mode_t`
(preload/core/echo_mode.h). `Mode` says what a mode does when it says nothing: each rank's copies from --clones,
no plan lines of its own, no relaunch, mpirun's status as the verdict.

Options and plans reach a mode as `Any`, as they reach a role's hooks: their classes (echo/plan.py) are planned from
the modes, above them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from echo.runformat.copymap import parse_copies

Say = Callable[[str], None]  # how a mode tells the user something after the job (echorun's "echo: ..." lines)


class ModeError(ValueError):
    """An --mode that does not exist."""


@dataclass(frozen=True)
class Ending:
    """How the job ended, as its mode reads its processes' ends (before the summary line of the exit status)."""

    status: int  # echorun's exit status so far
    lost: list[tuple[int, int]] = field(default_factory=list)  # (rank, copy) of the copies that did not finish
    explained: bool = False  # the mode's own report says why the job failed: no list of the processes that failed


class Mode:
    """A mode's interface, with what a mode does that does not say otherwise."""

    name = ""  # its --mode and the plan's `mode` line (the library chooses its echo_mode_t by it)
    ulfm = False  # it runs on ULFM: an MPI with it, mpirun --with-ft ulfm, never srun's direct launch
    oversubscribe = False  # mpirun is told to oversubscribe even when the processes fit the cores
    # its echorun options, as argparse takes them ({"flags": [...], "type": ..., "default": ..., "help": ...}): each
    # a field of Options (echo/plan.py) and a line of `echorun --help` under "--mode NAME"; given with another mode,
    # the plan refuses them
    options: tuple[dict[str, Any], ...] = ()
    word = "copy"  # what the pages call a rank's processes (a copy, a replica, the rank's one process)
    restarts = False  # it starts failed processes again: the run page lists its repairs and restarted processes

    def value(self, dest: str, given: Any) -> Any:
        """The value of its option `dest` that Options holds, from the one given (e.g. a path made absolute)."""
        return given

    def per_rank(self, clones: str | None, args: Any) -> tuple[int, str]:
        """The processes of each rank when -n is not given (a Slurm allocation is filled), and what they are
        called: --clones N's copies; a map of ranks to copies cannot fill it."""
        if clones is not None and not clones.strip().isdigit():
            raise ValueError(f"--clones {clones} gives ranks their own copies: give -n too")
        return int(clones or 1), "copies"

    def copies(self, opts: Any) -> list[int]:
        """Each rank's processes, its options checked."""
        return parse_copies(opts.clones, opts.nranks)

    def role(self, copy: int) -> str:
        """The word naming copy `copy` of a rank when no role (echo/collectors/) names it."""
        return "representative" if copy == 0 else "copy"

    def injections(self, opts: Any) -> tuple[str, ...]:
        """The --inject kinds this mode carries with these options (a slowdown goes with every mode)."""
        return ()

    def lines(self, opts: Any, copies: list[int], procs: list[Any], machine: Any) -> list[str]:
        """Its plan lines, its options checked (a bad one raises a ValueError naming the fix)."""
        return []

    def env(self, opts: Any) -> dict[str, str]:
        """What every process of the job gets in its environment besides the plan and the library."""
        return {}

    def same_layout(self, opts: Any) -> bool:
        """Whether every process of the job is laid out in memory alike (address space randomization off), so
        that addresses the program leaves in memory it never wrote are alike in processes that are compared."""
        return False

    def notes(self, opts: Any, copies: list[int]) -> list[str]:
        """What the plan's summary says of what the mode chose that the user did not ask for."""
        return []

    def apart(self, opts: Any) -> str | None:
        """Why copies of a rank go on other hosts by default (echo/placement.py), None: by their roles."""
        return None

    def mpirun_args(self) -> list[str]:
        """The options a ULFM mode needs of its launcher (Open MPI's mpirun: ULFM's own is Family.ulfm_options)."""
        return []

    def relaunch(self, run_dir: Path, nprocs: int, deployment: int, say: Say) -> dict[str, str] | None:
        """After deployment `deployment` of the job ended: the environment to start it again with, None: it is
        not started again."""
        return None

    def ended(self, opts: Any, plan: Any, rc: int, deployment: int, say: Say) -> Ending:
        """How the job ended (mpirun's status `rc`), what the mode says of it."""
        return Ending(rc)

    def verdict(self, opts: Any, plan: Any, ending: Ending, say: Say) -> int:
        """The mode's verdict on what the job computed, after it ended; the exit status. An OSError: its report
        could not be written (echorun says so; the run is kept)."""
        return ending.status

