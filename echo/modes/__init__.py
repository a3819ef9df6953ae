"""echorun's modes, one module each (the interface: echo/modes/mode.py), and their registry: a new mode is its
module here and its line in MODES, as a mode of the library is its folder and its line of
preload/core/echo_modes.c. Nothing outside this package tests a mode's name: it asks the mode (`of(name)`)."""

from __future__ import annotations

import argparse
from typing import Any

from echo.collectors.roles import add_option, option_default, option_dest
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


def add_options(p: argparse.ArgumentParser) -> None:
    """Every mode's options on echorun's parser, each mode's under its own heading."""
    for mode in MODES.values():
        if mode.options:
            group = p.add_argument_group(f"--mode {mode.name}")
            for o in mode.options:
                add_option(group, o)


def fields() -> list[tuple[str, Any, Any]]:
    """(name, type, default) of every field the modes add to Options."""
    return [(option_dest(o), Any, option_default(o)) for mode in MODES.values() for o in mode.options]


def option_values(args: argparse.Namespace) -> dict[str, Any]:
    """The modes' fields of Options from the parsed options (an option a caller's namespace lacks: its default)."""
    return {option_dest(o): mode.value(option_dest(o), getattr(args, option_dest(o), option_default(o)))
            for mode in MODES.values() for o in mode.options}


def foreign_options(opts: Any, mode: Mode) -> list[str]:
    """The options of other modes given (their value not their default) to a run of `mode`, each with its mode."""
    return [f"{o['flags'][0]} (--mode {other.name}'s)" for other in MODES.values() if other is not mode
            for o in other.options if getattr(opts, option_dest(o)) != other.value(option_dest(o), option_default(o))]
