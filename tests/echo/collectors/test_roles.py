"""The registry drives what is generic about a role: every role's declaration (echo/collectors/role.py's Role) is
checked when it is registered, a role written wrong is refused in one line naming the role and the field, and its
options reach echorun's parser and the plan's Options from the declaration alone."""

import dataclasses
import types
from typing import Any

import pytest

from echo.cli import Parser, add_run_options
from echo.collectors import roles
from echo.collectors.role import Pages, Role, RoleError, Section, Wrap
from echo.plan import Options


def test_every_role_is_registered_checked():
    """The registry holds each role's checked declaration; its templates are files of its folder."""
    assert [r.name for r in roles.declared()] == [m.ROLE.name for m in roles.ROLES]
    assert roles.registered(*roles.ROLES) == roles.ROLES
    for role in roles.declared():
        for section in role.pages.run + role.pages.rank:
            assert (roles.folder(role.name) / section.template).is_file()


def _module(tmp_path, role, name="tally"):
    """A role's folder and module as a registry line would import it."""
    folder = tmp_path / name
    folder.mkdir(exist_ok=True)
    (folder / "__init__.py").write_text("")
    module = types.ModuleType(name)
    module.__file__ = str(folder / "__init__.py")
    module.ROLE = role
    return module


def _given(opts):
    return bool(opts.tally)


GOOD = Role(name="tally", description="calls per copy", flag="--tally", given=_given, listed=9, precedence=9,
            options=({"flags": ["--tally"], "action": "store_true", "help": "count"},))


@pytest.mark.parametrize(("changes", "message"), [
    # the old SPEC's way: a hook named by a string
    ({"given": "given"}, "role 'tally': given is 'given', expected Callable"),
    ({"listed": "3"}, "role 'tally': listed is '3', expected int"),
    ({"options": [{"flags": ["--tally"]}]}, "role 'tally': options is .*, expected tuple"),
    ({"wrap": Wrap(folder="tally", commands="wrapped")}, "role 'tally': wrap.commands is 'wrapped', expected Callable"),
    ({"wrap": Wrap(folder="../x", commands=dict)}, "role 'tally': wrap.folder is '../x', expected a folder name"),
    ({"pages": Pages(run=(Section("run.html", len),))},
     r"role 'tally': pages.run\[0\].template 'run.html' is not a file"),
    ({"pages": Pages(run=(Section("run.html", "run_context"),))},
     r"role 'tally': pages.run\[0\].context is 'run_context', expected Callable"),
    ({"flag": "tally"}, "role 'tally': flag is 'tally', expected an option such as --tally"),
    ({"flag": "--valgrind"}, "role 'tally': --valgrind is valgrind's already"),
])
def test_a_bad_role_is_refused_in_one_line(tmp_path, changes, message):
    module = _module(tmp_path, dataclasses.replace(GOOD, **changes))
    with pytest.raises(RoleError, match=message) as e:
        roles.registered(*roles.ROLES, module)
    assert "\n" not in str(e.value)


def test_a_module_without_a_role_is_refused(tmp_path):
    module = _module(tmp_path, {"name": "tally", "given": "given"})  # a SPEC dict of old
    with pytest.raises(RoleError, match="role module tally: ROLE is dict, expected a collectors.role.Role"):
        roles.registered(module)


def test_a_good_role_is_registered(tmp_path, monkeypatch):
    module = _module(tmp_path, GOOD)
    monkeypatch.setattr(roles, "ROLES", roles.registered(*roles.ROLES, module))
    assert roles.flags()[-1] == "--tally" and ("tally", Any, False) in roles.fields()
    p = Parser(prog="echorun")
    roles.add_options(p)
    assert roles.option_values(p.parse_args(["--tally"]), 2)["tally"] is True


def test_options_come_from_the_declaration():
    p = Parser(prog="echorun")
    add_run_options(p)
    fields = {f.name for f in dataclasses.fields(Options)}
    for role in roles.declared():
        for option in role.options:
            assert all(flag in p._option_string_actions for flag in option["flags"])
    assert {name for name, _, _ in roles.fields()} <= fields
    args = p.parse_args(["--valgrind", "memcheck", "--slice-calls", "7", "--perturb", "rounding", "--strace", "1",
                         "./a"])
    values = roles.option_values(args, 2)
    assert values["valgrind"] == "memcheck" and values["slice_calls"] == 7 and values["perturb"] == "rounding"
    assert values["papi_sets"] == () and values["min_digits"] == 3.0 and values["perturb_rep"] is False
    assert values["strace"] == "1"
