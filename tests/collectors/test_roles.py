"""The registry drives what is generic about a role: every hook its SPEC names is a function of its module, and its
options reach echorun's parser and the plan's Options from the SPEC alone."""

import dataclasses

from collectors import roles
from echo.cli import Parser, add_run_options
from echo.plan import Options

HOOKS = ("from_args", "assign", "lines", "given", "junit", "tagged_output", "exec_wrapper", "meta", "after_job",
         "process_metrics", "ingest", "run_values", "report", "junit_suite", "machine", "counters")


def test_every_hook_named_is_a_function_of_the_role():
    """Every function a SPEC names exists (in the role's module or a submodule), and every template of its pages is
    a file of its folder."""
    for role in roles.ROLES:
        name = role.SPEC["name"]
        named = [role.SPEC[hook] for hook in HOOKS if role.SPEC.get(hook)]
        named += [c["run"] for c in role.SPEC.get("commands", [])]
        pages = role.SPEC.get("pages", {})
        named += [s["context"] for page in ("run", "rank") for s in pages.get(page, [])]
        named += list(pages.get("api", {}).values())
        for fn in named:
            assert callable(roles.function(role, fn)), f"{name}: {fn}"
        for s in (s for page in ("run", "rank") for s in pages.get(page, [])):
            assert (roles.folder(name) / s["template"]).is_file(), f"{name}: {s['template']}"
        assert callable(roles.function(role, role.SPEC["given"])) and role.SPEC["flag"].startswith("--")


def test_options_come_from_the_spec():
    p = Parser(prog="echorun")
    add_run_options(p)
    fields = {f.name for f in dataclasses.fields(Options)}
    for spec in roles.specs():
        for option in spec["options"]:
            assert all(flag in p._option_string_actions for flag in option["flags"])
    assert {name for name, _, _ in roles.fields()} <= fields
    args = p.parse_args(["--valgrind", "memcheck", "--slice-calls", "7", "--perturb", "rounding", "./a"])
    values = roles.option_values(args, 2)
    assert values["valgrind"] == "memcheck" and values["slice_calls"] == 7 and values["perturb"] == "rounding"
    assert values["papi_sets"] == () and values["min_digits"] == 3.0 and values["perturb_rep"] is False
