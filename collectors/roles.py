"""The one registry of roles: a role is its folder in collectors/ (its SPEC, its C part, its Python part) and its
name here. Everything generic about a role comes from its SPEC through this module:

- "c": its C part (echo/build.py builds and starts it);
- "group", "options": its echorun options (echo/cli.py adds them: flags and argparse's settings);
- "fields": what it adds to echo/plan.py's Options, as (default, type) by name (default: one field per option,
  named by its dest); "from_args": the function that turns the parsed options into those fields, when it does
  more than copy them (PAPI plans its sets with the library);
- "assign", "lines": the functions echo/plan.py calls to name the copies the role takes and to write its plan
  lines; "given": the option that asked for it (None: not asked), named when a mode refuses roles; "junit": whether
  it gives JUnit verdicts; "tagged_output": whether it reads mpirun's tagged output;
- "meta": what it keeps in run.json, "after_job": what echorun says of the run when it ends (echo/launch.py);
- "process_metrics" (per record file), "ingest" (per run), "run_values" (its values of the whole run, by name: rows
  of the store's run_values, no column of its own): its rows in the store (echo/store/ingest.py); "report": its
  section of `mpiecho report` (echo/report.py);
- "varied": for a role that makes copies differ on purpose, the run value that says so and how to say it: {"value":
  its name, "word": a run's state in lists ("perturbed"), "verdict": the run page's verdict, "report": the
  report's, both with {value}}: such a run is not said to agree, and starts no streak of divergence;
- "near_roles": the prefixes of the process roles it gives whose copies stay next to their representative when
  --copies is not given (echo/placement.py says so in the plan); "slow_roles": the first words of its process roles
  that make a copy slow by design, neither judged nor the reference of echo/perf.py's diagnosis;
- "counters": for a role that counts events, its function of a run's metrics giving each count as (rank, copy,
  event, scope: total, compute, mpi or function, the MPI function, value, unit), which the exports write
  (echo/export/: CSV's counters.csv, Caliper's "ROLE.EVENT" columns, the counter sets of Chrome's and OTF2's);
- "events": its event kinds, each {"order": where the report and the run page list it (echo/report.py's
  event_order), "bad": whether the run page marks it as a failure, "detail": whether the store keeps the event's
  detail alone as its message (the C part wrote a whole sentence)};
- "junit_suite": its suite of `echorun --junit` (echo/launch.py, through echo/junit.py's format), "junit_says": what
  the suite reports, in --junit's help and its error;
- "commands": its `mpiecho` subcommands, each {"name", "help", "arguments": argparse's settings like "options",
  "run": its function of (args) or, with "takes_run", of (args, the stored run named by args.run)} (echo/cli.py);
- "machine_fields": what it adds to echo/plan.py's Machine, as (default, type) by name; "machine": its function of
  mpirun's path finding them when echorun starts (echo/launch.py);
- "pages": its sections of the web pages (server/pages.py), by page ("run", "rank"), each a list of
  {"template": a Jinja file of the role's folder, "context": its function of (session, run, procs, events) for
  the run page, (session, run, rank, procs) for a rank's, giving the template's values or None (nothing to show)};
  "results": the label of its rows in the run page's shared table of results (the table stands where the first
  role with a label stands); "apart": the prefixes of its metrics that its sections show, left out of that table;
  "api": its answers of the JSON API, {name: function of (session, run_id)} served at /api/runs/RUN/name.

Each hook is named by a string, the name of a function of the role's module or of one of its submodules
("pages.run_context"), so that the SPEC opens the module as a declaration (Caliper's services declare theirs the
same way). Nothing outside a role's folder and this registry names a role: tests/echo/test_import_layers.py checks
that echo/ and server/ import none and write none of their names, event kinds or metrics' prefixes (but for
echo/runfiles.py, the run directory's one owner). A SPEC needs "name", "flag", "given", "listed" and "precedence";
every other key is optional (a role without "c" is Python only).

"listed" orders the roles as users read them (options, plan lines, store rows, options named in messages);
"precedence" says which role names a copy that several roles take (lowest first); the report's sections and the C
hooks follow the registry's order."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from collectors import papi, perturb, valgrind

# in the order their C parts subscribe their hooks: the first to start around a call ends last
ROLES = (perturb, valgrind, papi)


def specs() -> list[dict[str, Any]]:
    """Every role's SPEC, in registry order."""
    return [role.SPEC for role in ROLES]


def _ordered(order: str) -> list[Any]:
    """The roles' modules in the order asked: "registry", "listed" (as users read them: plan lines, options named
    in messages) or "precedence" (which role names a copy several roles take)."""
    if order == "registry":
        return list(ROLES)
    return sorted(ROLES, key=lambda role: role.SPEC[order])


def listed() -> list[dict[str, Any]]:
    """Every role's SPEC in the order users read them (plan lines, options named in messages)."""
    return [role.SPEC for role in _ordered("listed")]


def function(role: ModuleType, name: str) -> Callable[..., Any]:
    """A function a role's SPEC names: "fn" in the role's module, "sub.fn" in its submodule sub (imported then)."""
    where, _, fn = name.rpartition(".")
    return getattr(importlib.import_module(f"{role.__name__}.{where}") if where else role, fn)


def hooks(name: str, order: str = "listed") -> list[Callable[..., Any]]:
    """The roles' functions of one kind: a SPEC key whose value names a function of the role's module; the roles
    without one are left out."""
    return [function(role, role.SPEC[name]) for role in _ordered(order) if role.SPEC.get(name)]


def folder(name: str) -> Path:
    """The folder of the role of this name (its C part, its templates), wherever its package is."""
    role = next((r for r in ROLES if r.SPEC["name"] == name), None)
    if role is None:
        raise LookupError(f"no role {name!r} in collectors/roles.py")
    return Path(role.__file__).resolve().parent


def page_sections(page: str) -> list[tuple[str, list[tuple[str, Callable[..., Any]]]]]:
    """Per role as users read them, its results label (None: it has none) and its sections of a web page ("run",
    "rank"): (template as "role/file", the function giving its values)."""
    out = []
    for role in _ordered("listed"):
        declared = role.SPEC.get("pages", {})
        sections = [(f"{role.SPEC['name']}/{s['template']}", function(role, s["context"]))
                    for s in declared.get(page, [])]
        out.append((declared.get("results") if page == "run" else None, sections))
    return out


def varied(values: dict[str, str]) -> tuple[dict[str, str], str] | None:
    """(the role's "varied" declaration, its value) when a run's values (Run.role_values) say a role made its copies
    differ on purpose; None when none did."""
    for role in _ordered("listed"):
        how = role.SPEC.get("varied")
        if how and values.get(how["value"]):
            return how, values[how["value"]]
    return None


def machine_fields() -> list[tuple[str, Any, Any]]:
    """(name, type, default) of every field the roles add to Machine."""
    return [(name, kind, default) for s in listed() for name, (default, kind) in s.get("machine_fields", {}).items()]


def junit_says() -> list[str]:
    """What each role's JUnit suite reports, as users read the roles."""
    return [s["junit_says"] for s in listed() if s.get("junit_says")]


def near_roles() -> tuple[str, ...]:
    """Prefixes of the process roles whose copies stay next to their representative (counter sets, tools)."""
    return tuple(p for role in _ordered("listed") for p in role.SPEC.get("near_roles", ()))


def slow_roles() -> tuple[str, ...]:
    """First words of the process roles that make a copy slow by design (Valgrind's tools, timing jitter)."""
    return tuple(p for role in _ordered("listed") for p in role.SPEC.get("slow_roles", ()))


def counters(metrics: list[Any]) -> list[tuple[str, int, int, str, str, str, float, str]]:
    """Every count of the roles that count events, from a run's metrics in their order: (role, rank, copy, event,
    scope, function, value, unit)."""
    return [(role.SPEC["name"], *row) for role in _ordered("listed") if role.SPEC.get("counters")
            for row in function(role, role.SPEC["counters"])(metrics)]


def results_apart() -> tuple[str, ...]:
    """The prefixes of metrics that roles show in their own sections, not in the run page's table of results."""
    return tuple(p for role in _ordered("listed") for p in role.SPEC.get("pages", {}).get("apart", ()))


def api() -> dict[str, Callable[..., Any]]:
    """The roles' answers of the JSON API by name (/api/runs/RUN/name), as users read the roles."""
    return {name: function(role, fn) for role in _ordered("listed")
            for name, fn in role.SPEC.get("pages", {}).get("api", {}).items()}


def event_kinds() -> dict[str, dict[str, Any]]:
    """Every role's event kinds: {kind: {"order": ..., "bad": ...}}."""
    return {kind: how for role in _ordered("listed") for kind, how in role.SPEC.get("events", {}).items()}


def commands() -> list[tuple[dict[str, Any], Callable[..., Any]]]:
    """Every role's `mpiecho` subcommands: (its declaration, its function), as users read the roles."""
    return [(c, function(role, c["run"])) for role in _ordered("listed") for c in role.SPEC.get("commands", [])]


def flags_given(opts: Any) -> list[str]:
    """The options (each role's "flag") that asked for roles in a run's Options, as users read them."""
    return [role.SPEC["flag"] for role in _ordered("listed") if function(role, role.SPEC["given"])(opts)]


def flags() -> list[str]:
    """Every role's option ("flag"), as users read them."""
    return [role.SPEC["flag"] for role in _ordered("listed")]


def option_dest(option: dict[str, Any]) -> str:
    """The field of Options an option (as argparse takes it: {"flags": [...], ...}) fills: argparse's dest."""
    return option.get("dest") or next(f for f in option["flags"] if f.startswith("--"))[2:].replace("-", "_")


def option_default(option: dict[str, Any]) -> Any:
    """An option's value when it is not given (argparse's own rule: False for a flag, else None)."""
    return option.get("default", False if option.get("action") == "store_true" else None)


def add_option(target: Any, option: dict[str, Any]) -> None:
    """One option, as argparse takes it, on a parser or a group of one (roles' and modes' options alike)."""
    target.add_argument(*option["flags"], **{k: v for k, v in option.items() if k != "flags"})


def fields() -> list[tuple[str, Any, Any]]:
    """(name, type, default) of every field the roles add to Options."""
    out = []
    for s in listed():
        declared = s.get("fields")
        if declared is None:
            declared = {option_dest(o): (option_default(o), Any) for o in s.get("options", [])}
        out += [(name, kind, default) for name, (default, kind) in declared.items()]
    return out


def add_options(p: argparse.ArgumentParser) -> None:
    """Every role's options on a parser, each role's in its own group when it names one; the roles that name none
    come last, so that their options stand with the general ones added after them."""
    for s in sorted(listed(), key=lambda s: not s.get("group")):
        target = p.add_argument_group(s["group"]) if s.get("group") else p
        for o in s.get("options", []):
            add_option(target, o)


def option_values(args: argparse.Namespace, nranks: int) -> dict[str, Any]:
    """The roles' fields of Options from the parsed options (an option a caller's namespace lacks: its default)."""
    out: dict[str, Any] = {}
    for s in listed():
        if s.get("from_args"):
            continue
        for o in s.get("options", []):
            dest = option_dest(o)
            out[dest] = getattr(args, dest, option_default(o))
    for from_args in hooks("from_args"):
        out.update(from_args(args, nranks))
    return out
