"""The one registry of roles: a role is its folder in echo/collectors/ (its module's ROLE, a Role of
echo/collectors/role.py; its C part; its Python part) and its name in `registered(...)` below. Everything generic about
a role comes from its ROLE through this module: echo/cli.py adds its options and subcommands, echo/plan.py its fields,
copies, plan lines and wrapped copies (Role.wrap: the command a copy starts under, run by echo/exec.sh, and the folder
its tool writes in), echo/build.py its C part, echo/launch.py what it keeps and says, the store, the report, the exports
and the web pages its rows and sections. echo/collectors/role.py says what each field is.

Each ROLE is checked when it is registered (echo/collectors/role.py's check): a field of the wrong type, a template or C
source missing from its folder, stops echo at once with one line naming the role and the field. Nothing outside a
role's folder and this registry names a role: tests/echo/test_import_layers.py checks that echo/ and echo/server/ import
none and write none of their names, event kinds or metrics' prefixes.

"listed" orders the roles as users read them (options, plan lines, store rows, options named in messages);
"precedence" says which role names a copy that several roles take (lowest first); the report's sections and the C
hooks follow the registry's order."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from echo.collectors import papi, perturb, strace, valgrind
from echo.collectors.role import Role, RoleError, check


def registered(*modules: ModuleType) -> tuple[ModuleType, ...]:
    """The role modules, each one's ROLE checked (RoleError names the role and the field); names and flags unique."""
    seen: dict[str, str] = {}
    for module in modules:
        role = check(getattr(module, "ROLE", None), module.__name__, Path(module.__file__).resolve().parent)
        for key in (role.name, role.flag):
            if key in seen:
                raise RoleError(f"role {role.name!r}: {key} is {seen[key]}'s already")
            seen[key] = role.name
    return modules


# in the order their C parts subscribe their hooks: the first to start around a call ends last
ROLES = registered(perturb, valgrind, papi, strace)


def declared() -> list[Role]:
    """Every role's declaration, in registry order."""
    return [role.ROLE for role in ROLES]


def _ordered(order: str) -> list[Role]:
    """The roles in the order asked: "registry", "listed" (as users read them: plan lines, options named in
    messages) or "precedence" (which role names a copy several roles take)."""
    if order == "registry":
        return declared()
    return sorted(declared(), key=lambda role: getattr(role, order))


def listed() -> list[Role]:
    """Every role in the order users read them (plan lines, options named in messages)."""
    return _ordered("listed")


def hooks(name: str, order: str = "listed") -> list[Callable[..., Any]]:
    """The roles' functions of one kind (a field of Role holding a function); the roles without one are left out."""
    return [getattr(role, name) for role in _ordered(order) if getattr(role, name)]


def folder(name: str) -> Path:
    """The folder of the role of this name (its C part, its templates), wherever its package is."""
    module = next((r for r in ROLES if r.ROLE.name == name), None)
    if module is None:
        raise LookupError(f"no role {name!r} in echo/collectors/roles.py")
    return Path(module.__file__).resolve().parent


def wrappers() -> list[Role]:
    """The roles that run some copies under a tool (Role.wrap), as users read them."""
    return [role for role in listed() if role.wrap]


def page_sections(page: str) -> list[tuple[str | None, list[tuple[str, Callable[..., Any]]]]]:
    """Per role as users read them, its results label (None: it has none) and its sections of a web page ("run",
    "rank"): (template as "role/file", the function giving its values)."""
    return [(role.pages.results if page == "run" else None,
             [(f"{role.name}/{s.template}", s.context) for s in getattr(role.pages, page)]) for role in listed()]


def varied(values: dict[str, str]) -> tuple[dict[str, str], str] | None:
    """(the role's "varied" declaration, its value) when a run's values (Run.role_values) say a role made its copies
    differ on purpose; None when none did."""
    for role in listed():
        if role.varied and values.get(role.varied["value"]):
            return role.varied, values[role.varied["value"]]
    return None


def machine_fields() -> list[tuple[str, Any, Any]]:
    """(name, type, default) of every field the roles add to Machine."""
    return [(name, kind, default) for role in listed() for name, (default, kind) in role.machine_fields.items()]


def junit_says() -> list[str]:
    """What each role's JUnit suite reports, as users read the roles."""
    return [role.junit_says for role in listed() if role.junit_says]


def near_roles() -> tuple[str, ...]:
    """Prefixes of the process roles whose copies stay next to their representative (counter sets, tools)."""
    return tuple(p for role in listed() for p in role.near_roles)


def slow_roles() -> tuple[str, ...]:
    """First words of the process roles that make a copy slow by design (Valgrind's tools, timing jitter)."""
    return tuple(p for role in listed() for p in role.slow_roles)


def counters(metrics: list[Any]) -> list[tuple[str, int, int, str, str, str, float, str]]:
    """Every count of the roles that count events, from a run's metrics in their order: (role, rank, copy, event,
    scope, function, value, unit)."""
    return [(role.name, *row) for role in listed() if role.counters for row in role.counters(metrics)]


def results_apart() -> tuple[str, ...]:
    """The prefixes of metrics that roles show in their own sections, not in the run page's table of results."""
    return tuple(p for role in listed() for p in role.pages.apart)


def api() -> dict[str, Callable[..., Any]]:
    """The roles' answers of the JSON API by name (/api/runs/RUN/name), as users read the roles."""
    return {name: fn for role in listed() for name, fn in role.pages.api.items()}


def event_kinds() -> dict[str, dict[str, Any]]:
    """Every role's event kinds: {kind: {"order": ..., "bad": ...}}."""
    return {kind: how for role in listed() for kind, how in role.events.items()}


def commands() -> list[Any]:
    """Every role's `mpiecho` subcommands (echo/collectors/role.py's Command), as users read the roles."""
    return [c for role in listed() for c in role.commands]


def flags_given(opts: Any) -> list[str]:
    """The options (each role's flag) that asked for roles in a run's Options, as users read them."""
    return [role.flag for role in listed() if role.given(opts)]


def flags() -> list[str]:
    """Every role's option (its flag), as users read them."""
    return [role.flag for role in listed()]


def tagged_output_flags() -> list[str]:
    """The options of the roles that read mpirun's tagged output."""
    return [role.flag for role in listed() if role.tagged_output]


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
    for role in listed():
        declared = role.fields
        if declared is None:
            declared = {option_dest(o): (option_default(o), Any) for o in role.options}
        out += [(name, kind, default) for name, (default, kind) in declared.items()]
    return out


def add_options(p: argparse.ArgumentParser) -> None:
    """Every role's options on a parser, each role's in its own group when it names one; the roles that name none
    come last, so that their options stand with the general ones added after them."""
    for role in sorted(listed(), key=lambda role: not role.group):
        target = p.add_argument_group(role.group) if role.group else p
        for o in role.options:
            add_option(target, o)


def option_values(args: argparse.Namespace, nranks: int) -> dict[str, Any]:
    """The roles' fields of Options from the parsed options (an option a caller's namespace lacks: its default)."""
    out: dict[str, Any] = {}
    for role in listed():
        if role.from_args:
            continue
        for o in role.options:
            dest = option_dest(o)
            out[dest] = getattr(args, dest, option_default(o))
    for from_args in hooks("from_args"):
        out.update(from_args(args, nranks))
    return out
