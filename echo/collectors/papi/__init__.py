"""PAPI collector: a different conflict-free counter set on each copy of a rank.

This module: echorun's option, the plan lines, `mpiecho events` and the role's declaration; probe.py: what PAPI can
count here and the sets planned from it (the system PAPI, the library the preload collector counts with, asked
through a small helper, `papi_plan.c`, compiled on first use and cached); stored.py: its rows in the store and the
report; pages.py: its sections of the pages.
"""

from __future__ import annotations

from typing import Any

from echo.collectors.papi.probe import available_events, check_copies, disabled_components, plan

# ---- echorun's option and the plan ----

def options_from_args(args: Any, nranks: int) -> dict[str, Any]:
    """Options' fields from `--papi-sets`: the sets planned with PAPI, checked against the copies, and said."""
    if not getattr(args, "papi_sets", None):
        return {"papi_sets": (), "papi_unavailable": ()}
    import sys

    from echo.runformat.copymap import parse_copies

    p = plan(args.papi_sets)
    check_copies(p, parse_copies(args.clones, nranks))
    print("echo: " + p.describe().replace("\n", "\necho: "), file=sys.stderr)
    return {"papi_sets": tuple(tuple(s) for s in p.sets), "papi_unavailable": tuple(p.unavailable)}


def given(opts: Any) -> bool:
    return bool(opts.papi_sets)


def meta(opts: Any) -> dict[str, Any]:
    """What run.json keeps for the store (echo/launch.py): the events the planner left out, and why."""
    return {"papi_unavailable": [list(x) for x in opts.papi_unavailable]}


def assign(opts: Any, copies: list[int]) -> dict[tuple[int, int], str]:
    """(rank, copy) -> "papi-set-K" for the copies that count set K."""
    return {(app, copy): f"papi-set-{copy}" for app, n in enumerate(copies) for copy in range(n)
            if copy < len(opts.papi_sets)}


def plan_lines(opts: Any, copies: list[int], procs: list[Any], machine: Any) -> list[str]:
    """The plan's papi_sets line and each set's events (echo/plan.py's Options)."""
    if not opts.papi_sets:
        return []
    if len(opts.papi_sets) > min(copies):
        raise ValueError(f"{len(opts.papi_sets)} counter sets need {len(opts.papi_sets)} copies of every rank; "
                         f"--clones gives {min(copies)}")
    return ["papi_sets " + str(len(opts.papi_sets))] + [
        f"papi_set_{k} {','.join(events)}" for k, events in enumerate(opts.papi_sets)]


# ---- mpiecho events ----

def events_command(args: Any) -> int:
    """What PAPI can count here, and how --papi-sets would split it into sets."""
    p = plan(args.papi_sets)  # first: a set that cannot be counted is an error, before the listing
    check_copies(p, [len(p.sets)])
    events = available_events()
    ok = [e for e in events if e[2] == "ok"]
    print(f"PAPI can count {len(ok)} of the {len(events)} events it knows here:")
    for kind, name, _, descr in ok:
        print(f"  {kind:6}  {name:40}  {descr}")
    reasons: dict[str, int] = {}
    for e in events:
        if e[2] != "ok":
            reasons[e[2]] = reasons.get(e[2], 0) + 1
    for why, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        print(f"  {n} cannot be counted: {why}")
    for name, why in disabled_components():  # their events are not listed at all
        print(f"  component {name} is disabled: {why}")
    print()
    print(f"--papi-sets {args.papi_sets}: " + p.describe())
    print(f"one run counts them all with --clones {max(1, len(p.sets))} (one set per copy)")
    return 0


from echo.collectors.papi import pages  # noqa: E402  (its sections read this module's functions, defined above)
from echo.collectors.papi.stored import counter_rows, ingest_rows, process_metrics, report_section  # noqa: E402
from echo.collectors.role import Command, CPart, Pages, Role, Section  # noqa: E402

ROLE = Role(
    name="papi",
    description="hardware and software counters, one set per copy, counted exactly (no multiplexing)",
    # echorun's option (echo/cli.py adds it among the general options: no group); it becomes the sets planned with
    # PAPI (from_args), Options' fields papi_sets and papi_unavailable
    options=({"flags": ["--papi-sets"], "metavar": "SPEC",
              "help": "a PAPI counter set per copy: all, presets, EV1,EV2,... (packed into sets) or EV1,EV2;EV3,EV4 "
                      "(sets as given); mpiecho events shows what can be counted"},),
    fields={"papi_sets": ((), Any),  # counter set of copy 0, 1, ... (planned with PAPI)
            "papi_unavailable": ((), Any)},  # (event, PAPI's reason) the planner had to leave out
    from_args=options_from_args, flag="--papi-sets", listed=0, precedence=1,
    assign=assign, lines=plan_lines, given=given, meta=meta,
    process_metrics=process_metrics, ingest=ingest_rows, report=report_section,
    events={"papi-unavailable": {"order": 6, "detail": True}},
    near_roles=("papi-set-",),  # a counter set counts best next to its representative
    counters=counter_rows,  # what the exports write of its counts
    commands=(Command("events", "what PAPI can count here, and how it splits into sets", events_command,
                      ({"flags": ["--papi-sets"], "default": "all", "metavar": "SPEC",
                        "help": "as echorun --papi-sets (default: all)"},)),),
    # its sections of the web pages (pages.py beside this file, with run.html and rank.html), its metrics that they
    # show (kept out of the run page's table of results) and its JSON answer /api/runs/RUN/counters
    pages=Pages(run=(Section("run.html", pages.run_context),), rank=(Section("rank.html", pages.rank_context),),
                apart=("papi ",), api={"counters": pages.counters_answer}),
    # its C part (echo/build.py): built in when the probe compiles and links here (the tool stands for the library
    # when the build's cache asks again); a plan that asks for it from a library without it stops there
    c=CPart(sources=("echo_papi.c",), init="echo_papi_init", libs=("-lpapi",), tool="papi_avail",
            probe="#include <papi.h>\nint main(void) { return PAPI_is_initialized(); }\n", planned_by="papi_sets",
            missing="this echo library was built without PAPI (install libpapi-dev, then run again: the library is "
                    "rebuilt)"),
)
