"""What a role declares: one typed `Role` per role folder (its module's ROLE), checked field by field when the
registry (echo/collectors/roles.py) registers it, so that a role written wrong stops echo at once with one line naming
the role and the field, never later inside a job or a page.

Hooks are the role's own functions (not names looked up later); the types below say what each is called with.
`Opts`, `Proc` and `Machine` stand for echo/plan.py's Options, Proc and Machine (this module sits below plan.py)."""

from __future__ import annotations

import argparse
import collections.abc
import dataclasses
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Opts = Any  # echo/plan.py's Options: the base fields, every role's and every mode's
Proc = Any  # echo/plan.py's Proc: (real, app, copy, ncopies, role)
Machine = Any  # echo/plan.py's Machine: the base fields and every role's machine_fields


class RoleError(TypeError):
    """A role's declaration that cannot be used; the message names the role and the field."""


@dataclass(frozen=True)
class Command:
    """An `mpiecho` subcommand of the role."""
    name: str
    help: str
    run: Callable[..., int]  # of (args), or with takes_run of (args, the stored run args.run names)
    arguments: tuple[dict[str, Any], ...] = ()  # argparse's settings, {"flags": [...], ...}, like Role.options
    takes_run: bool = False


@dataclass(frozen=True)
class Section:
    """A section of a web page: a Jinja file of the role's folder and the function giving its values (None:
    nothing to show), of (session, run, procs, events) on the run page, of (session, run, rank, procs) on a rank's."""
    template: str
    context: Callable[..., dict[str, Any] | None]


@dataclass(frozen=True)
class Pages:
    """The role's part of the web pages (echo/server/pages.py)."""
    run: tuple[Section, ...] = ()
    rank: tuple[Section, ...] = ()
    results: str | None = None  # the label of its rows in the run page's shared table of results
    apart: tuple[str, ...] = ()  # prefixes of its metrics its own sections show, left out of that table
    api: dict[str, Callable[..., Any]] = field(default_factory=dict)  # /api/runs/RUN/<name>: of (session, run_id)


@dataclass(frozen=True)
class CPart:
    """The role's C part (echo/build.py): its sources in the role's folder and the function that starts it."""
    sources: tuple[str, ...]
    init: str  # the C function echo_collectors_init calls
    libs: tuple[str, ...] = ()
    tool: str | None = None  # a command that stands for its headers and library (the build cache probes again)
    probe: str | None = None  # a C program that must compile and link for the part to be built in
    planned_by: str | None = None  # the plan key that asks for it (a library without it stops there)
    missing: str | None = None  # what the library without it says then


@dataclass(frozen=True)
class Wrap:
    """How a role runs some copies under a tool: the command each chosen process starts through (echo/exec.sh puts
    it before the program's), and the run directory's folder the tool writes its files in, a file per copy named by
    echo/runformat/runfiles.py's copy_file. The folder is made before the job, kept with the run and uploaded."""
    folder: str
    # (opts, copies, procs, machine) -> {real rank: the command before the program's}; {} when none is wrapped
    commands: Callable[[Opts, list[int], list[Proc], Machine], dict[int, list[str]]]
    kept_back: tuple[str, ...] = ()  # endings of its files the upload leaves out (Valgrind's logs)


@dataclass(frozen=True)
class Role:
    """A role: what it adds to echorun, the plan, the job, the store, the report and the pages."""
    name: str
    description: str
    flag: str  # the option that asks for it, named when a mode refuses roles
    given: Callable[[Opts], bool]  # whether a run's options ask for it
    listed: int  # where users read it among the roles (options, plan lines, store rows, messages)
    precedence: int  # which role names a copy several roles take (lowest first)
    # echorun's options (argparse's settings, {"flags": [...], ...}), in their own group when it has a name
    group: str | None = None
    options: tuple[dict[str, Any], ...] = ()
    # what it adds to Options, {name: (default, type)} (default: one field per option, named by its dest), and the
    # function that turns the parsed options into them when it does more than copy them (PAPI plans its sets)
    fields: dict[str, tuple[Any, Any]] | None = None
    from_args: Callable[[argparse.Namespace, int], dict[str, Any]] | None = None
    # the plan: the copies it takes ((rank, copy) -> process role) and its plan lines
    assign: Callable[[Opts, list[int]], dict[tuple[int, int], str]] | None = None
    lines: Callable[[Opts, list[int], list[Proc], Machine], list[str]] | None = None
    wrap: Wrap | None = None  # the copies it runs under a tool
    # --junit: whether it gives verdicts, its suite (of opts, run_dir, program, seconds) and what the suite reports
    junit: Callable[[Opts], bool] | None = None
    junit_suite: Callable[[Opts, Path, str, float], Any] | None = None
    junit_says: str | None = None
    tagged_output: Callable[[Opts], bool] | None = None  # whether it reads mpirun's tagged output
    meta: Callable[[Opts], dict[str, Any]] | None = None  # what it keeps in run.json
    after_job: Callable[[Opts, Path], list[str]] | None = None  # what echorun says of the run when it ends
    # its rows in the store: per record file, per run (events and metrics), its values of the whole run by name
    process_metrics: Callable[..., list[dict[str, Any]]] | None = None
    ingest: Callable[[Path, list[tuple[int, int, int, str]], dict[str, Any]],
                     tuple[list[dict[str, Any]], list[dict[str, Any]]]] | None = None
    run_values: Callable[..., dict[str, str]] | None = None
    report: Callable[[Any, Any], list[str]] | None = None  # its section of `mpiecho report`, of (session, run)
    # for a role that makes copies differ on purpose: {"value": its run value, "word", "verdict", "report"}
    varied: dict[str, str] | None = None
    near_roles: tuple[str, ...] = ()  # process roles whose copies stay next to their representative
    slow_roles: tuple[str, ...] = ()  # first words of its process roles that make a copy slow by design
    # of a run's metrics: each count as (rank, copy, event, scope, function, value, unit), for the exports
    counters: Callable[[list[Any]], list[tuple[Any, ...]]] | None = None
    events: dict[str, dict[str, Any]] = field(default_factory=dict)  # kind: {"order", "bad", "detail"}
    commands: tuple[Command, ...] = ()
    # what it needs of the machine: Machine's fields {name: (default, type)} and their function of mpirun's path
    machine_fields: dict[str, tuple[Any, Any]] = field(default_factory=dict)
    machine: Callable[[str], dict[str, Any]] | None = None
    pages: Pages = Pages()
    c: CPart | None = None


def _type_name(kind: Any) -> str:
    if not typing.get_args(kind):
        return getattr(kind, "__name__", str(kind))
    return str(kind).replace("typing.", "").replace("collections.abc.", "")


def _fits(value: Any, kind: Any) -> bool:
    """Whether a value is of a declared type (a callable's signature is not checked: only that it is callable)."""
    if kind is Any:
        return True
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(value, a) for a in args)
    if kind is type(None):
        return value is None
    if origin is collections.abc.Callable or kind is collections.abc.Callable:
        return callable(value)
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_fits(v, args[0]) for v in value)
        return len(args) == len(value) and all(_fits(v, a) for v, a in zip(value, args, strict=True))
    if origin is dict:
        return isinstance(value, dict) and all(_fits(k, args[0]) and _fits(v, args[1]) for k, v in value.items())
    if origin is not None:
        return isinstance(value, origin)
    return isinstance(value, kind)


def _check_fields(role: str, where: str, declared: Any) -> None:
    """Every field of a declaration (and of the declarations it holds) of its type, else RoleError."""
    hints = typing.get_type_hints(type(declared))
    for f in dataclasses.fields(declared):
        value, kind, path = getattr(declared, f.name), hints[f.name], f"{where}{f.name}"
        if not _fits(value, kind):
            shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
            raise RoleError(f"role {role!r}: {path} is {shown}, expected {_type_name(kind)}")
        inner = value if isinstance(value, tuple) else (value,)
        for i, item in enumerate(inner):
            if dataclasses.is_dataclass(item):
                _check_fields(role, f"{path}[{i}]." if isinstance(value, tuple) else f"{path}.", item)


def check(declared: Any, module: str, folder: Path) -> Role:
    """A role module's ROLE, checked: every field of its type, its flag an option, its templates files of its
    folder, its C sources too. The error names the role and the field, in one line."""
    if not isinstance(declared, Role):
        raise RoleError(f"role module {module}: ROLE is {type(declared).__name__}, expected a collectors.role.Role")
    _check_fields(declared.name if isinstance(declared.name, str) else module, "", declared)
    name = declared.name
    if not name.isidentifier():
        raise RoleError(f"role {name!r}: name must be a word (it names its folder, plan lines and metrics)")
    if not declared.flag.startswith("--"):
        raise RoleError(f"role {name!r}: flag is {declared.flag!r}, expected an option such as --{name}")
    if declared.wrap and not declared.wrap.folder.isidentifier():
        raise RoleError(f"role {name!r}: wrap.folder is {declared.wrap.folder!r}, expected a folder name (a word)")
    for page in ("run", "rank"):
        for i, section in enumerate(getattr(declared.pages, page)):
            if not (folder / section.template).is_file():
                raise RoleError(f"role {name!r}: pages.{page}[{i}].template {section.template!r} is not a file of "
                                f"{folder}")
    for source in declared.c.sources if declared.c else ():
        if not (folder / source).is_file():
            raise RoleError(f"role {name!r}: c.sources {source!r} is not a file of {folder}")
    return declared
