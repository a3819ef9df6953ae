"""echorun's modes, one module each (the interface: echo/modes/mode.py), and their registry: a new mode is its
module here and its line in MODES, as a mode of the library is its folder and its line of
preload/core/echo_modes.c. Nothing outside this package tests a mode's name: it asks the mode (`of(name)`)."""

from __future__ import annotations

from echo.modes import clones, reinit, sdr
from echo.modes.mode import Mode, ModeError

MODES: dict[str, Mode] = {mode.name: mode for mode in (clones.MODE, reinit.MODE, sdr.MODE)}
NAMES = tuple(MODES)  # --mode's choices; the first is the default


def of(name: str) -> Mode:
    """The mode named `name` (echorun --mode, the plan's and run.json's `mode`)."""
    if name not in MODES:
        raise ModeError(f"--mode {name}: expected {', '.join(NAMES[:-1])} or {NAMES[-1]}")
    return MODES[name]


def of_stored(name: str) -> Mode:
    """The mode a stored run names; a name this echo does not know (a newer echo stored it) is read as the
    default mode's."""
    return MODES.get(name, MODES[NAMES[0]])
