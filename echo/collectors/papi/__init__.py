"""PAPI collector: a different conflict-free counter set on each copy of a rank.

Planning runs the system PAPI (the library the preload collector counts with)
through a small helper, `papi_plan.c`, compiled on first use and cached.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from echo.collectors.papi.stored import UNAVAILABLE, merged_counters

HERE = Path(__file__).resolve().parent
ANCHORS = ("PAPI_TOT_CYC", "PAPI_TOT_INS", "perf::TASK-CLOCK", "perf::CPU-CLOCK")


class PapiError(RuntimeError):
    """PAPI cannot be used as asked; the message says why and what to do."""


@dataclass
class PapiPlan:
    sets: list[list[str]]
    anchor: str | None
    unavailable: list[tuple[str, str]] = field(default_factory=list)  # (event, PAPI's reason)

    def describe(self) -> str:
        lines = [f"{len(self.sets)} counter set(s), anchor {self.anchor or 'none (no event fits every set)'}:"]
        lines += [f"  set {i} (copy {i}): {', '.join(s)}" for i, s in enumerate(self.sets)]
        lines += [f"  cannot count {ev}: {why}" for ev, why in self.unavailable]
        return "\n".join(lines)


def helper() -> Path:
    """The planning helper, built with the system PAPI on first use."""
    from echo.resources import cache_root

    src = HERE / "papi_plan.c"
    import hashlib

    exe = cache_root() / f"papi_plan-{hashlib.sha256(src.read_bytes()).hexdigest()[:12]}"
    if exe.is_file():
        return exe
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise PapiError("no C compiler found to build the PAPI planner (apt-get install gcc)")
    exe.parent.mkdir(parents=True, exist_ok=True)
    tmp = exe.with_suffix(".tmp")
    r = subprocess.run([cc, "-O2", "-o", str(tmp), str(src), "-lpapi"], capture_output=True, text=True)
    if r.returncode != 0:
        why = (r.stderr.strip().splitlines() or ["the compiler said nothing"])[-1]
        raise PapiError(f"PAPI is not installed or not usable ({why}): apt-get install libpapi-dev papi-tools")
    tmp.rename(exe)
    return exe


def _run(*args: str) -> str:
    r = subprocess.run([str(helper()), *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise PapiError(f"PAPI planning failed: {r.stderr.strip()}")
    return r.stdout


@functools.cache
def _listing() -> list[tuple[str, str, str, str]]:
    """What PAPI knows here, asked once per process: planning asks for events and components several times."""
    return [(p[0], p[1], p[2], p[3]) for p in (line.split("\t") for line in _run("list").splitlines()) if len(p) == 4]


def available_events() -> list[tuple[str, str, str, str]]:
    """(kind, name, "ok" or PAPI's reason, description) of every event PAPI knows here."""
    return [e for e in _listing() if e[0] in ("preset", "native")]


def disabled_components() -> list[tuple[str, str]]:
    """(name, PAPI's reason) of every PAPI component disabled here: their events are not even listed."""
    return [(name, why) for kind, name, why, _ in _listing() if kind == "component"]


def why_nothing_counts() -> str:
    """Why PAPI counts no event here, in PAPI's words: the disabled perf_event component (the CPU's and the
    kernel's perf:: events) when that is it."""
    disabled = dict(disabled_components())
    why = disabled.get("perf_event")
    if why is None:
        return "a VM without a hardware PMU counts only perf:: software events: try --papi-sets all, or mpiecho events"
    hint = ": libpfm4 does not know this CPU model, a newer libpfm4 does" if "no default PMU" in why else ""
    return f"PAPI disabled its perf_event component, which counts the CPU's and perf:: events, saying '{why}'{hint}"


def countable(kind: str | None = None) -> list[str]:
    """Events PAPI can count here; aliases of one native event are listed once."""
    best: dict[tuple[str, str], str] = {}  # one name per underlying event: the shortest alias
    for k, name, status, descr in available_events():
        if status != "ok" or (kind and k != kind):
            continue
        key = (k, descr) if k == "native" else (k, name)
        if key not in best or len(name) < len(best[key]):
            best[key] = name
    return list(best.values())


def pack(events: list[str], anchor: str | None) -> tuple[list[list[str]], list[tuple[str, str]]]:
    sets, bad = [], []
    for line in _run("pack", anchor or "-", *events).splitlines():
        parts = line.split("\t")
        if parts[0] == "set":
            sets.append(parts[2].split(",") if parts[2] else [])
        elif parts[0] == "bad":
            bad.append((parts[1], parts[2]))
    return sets, bad


def plan(spec: str) -> PapiPlan:
    """Sets for `--papi-sets SPEC`: all, presets, a list to pack, or sets separated by ';' (kept as given,
    each checked with PAPI)."""
    spec = spec.strip()
    if spec in ("all", "presets"):
        events = countable("preset") + (countable("native") if spec == "all" else [])
        if not events:
            raise PapiError(f"--papi-sets {spec}: PAPI can count no {'event' if spec == 'all' else 'preset'} "
                            f"on this machine ({why_nothing_counts()})")
    else:
        events = [e.strip() for e in spec.replace(";", ",").split(",") if e.strip()]
        if not events:
            raise PapiError(f"--papi-sets {spec!r}: no events named")
        check_names(events)
    if ";" in spec:  # sets as the user grouped them: each must hold together
        sets, bad = [], []
        for group in spec.split(";"):
            evs = [e.strip() for e in group.split(",") if e.strip()]
            got, why = pack(evs, None)
            bad += [b for b in why if b not in bad]
            if len(got) > 1:
                raise PapiError(f"--papi-sets: the set {','.join(evs)} cannot be counted together "
                                f"(PAPI splits it into {len(got)}); regroup it or list the events without ';'")
            sets += [g for g in got if g]
        common = [e for e in sets[0] if all(e in s for s in sets)] if sets else []
        return PapiPlan(sets, common[0] if common else None, bad)
    # the anchor: a cycle or time count every copy can add, to cross-check the copies
    candidates = [a for a in ANCHORS if a in events] + ([events[0]] if spec in ("all", "presets") else [])
    for anchor in candidates + [None]:
        sets, bad = pack(events, anchor)
        if anchor is None or all(anchor in s for s in sets) and anchor not in dict(bad):
            break
    dedup = []
    for b in bad:
        if b not in dedup:
            dedup.append(b)
    return PapiPlan(sets, anchor, dedup)


def check_names(events: list[str]) -> None:
    """Every event named is one PAPI knows here (a typo is named, with the close names PAPI has); events known
    but not countable here are left to the plan, which says so."""
    import difflib

    known = {name: status for _, name, status, _ in available_events()}
    for ev in events:
        if ev not in known:
            countable_here = [n for n, status in known.items() if status == "ok"]
            close = difflib.get_close_matches(ev, countable_here, n=3, cutoff=0.6) or difflib.get_close_matches(
                ev, list(known), n=3, cutoff=0.6)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            if not close and not countable_here:  # nothing at all: the reason is the machine, not the name
                hint = f" ({why_nothing_counts()})"
            raise PapiError(f"--papi-sets: PAPI knows no event {ev} here{hint}; mpiecho events lists the events "
                            "it can count")


def check_copies(p: PapiPlan, copies: list[int]) -> None:
    """Every rank needs a copy per set: never multiplex silently."""
    need, have = len(p.sets), min(copies)
    if not p.sets:
        why = "; ".join(f"{ev}: {reason}" for ev, reason in p.unavailable) or "no event left"
        raise PapiError(f"--papi-sets: no event asked for can be counted here ({why}); mpiecho events lists the "
                        "events it can count")
    if need > have:
        rest = ";".join(",".join(s) for s in p.sets[have:])
        raise PapiError(f"{need} counter sets need {need} copies of every rank, and --clones gives {have}. "
                        f"Raise the copies (--clones {need}), or count the first {have} set(s) now and the rest "
                        f"in another run: --papi-sets '{rest}'")


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


# ---- the store and the report ----

def slot_metrics(f: Any, units: dict[str, str]) -> list[tuple[str, float, str]]:
    """Counter deltas in the record slots, per phase and per function: a slot "EV>" holds the compute
    phase before each call, "EV@" the call itself; each in its event's unit (`units`, from the process's totals)."""
    import numpy as np

    out = []
    fn = f.records["fn"].astype(np.intp)
    for j, name in enumerate(f.slot_names):
        values = f.records["slot"][:, j].astype(np.float64)
        event, phase = name[:-1], name[-1]
        unit = units.get(event, "count")
        if phase == ">":
            out.append((f"papi {event} compute", float(values.sum()), unit))
        elif phase == "@":
            out.append((f"papi {event} mpi", float(values.sum()), unit))
            per_fn = np.bincount(fn, weights=values, minlength=len(f.functions))
            out += [(f"papi {event} in {f.functions[i]}", float(per_fn[i]), unit) for i in np.flatnonzero(per_fn)]
    return out


def process_metrics(f: Any, own: list[tuple[str, float, str]]) -> list[tuple[str, float, str]]:
    """A process's counts in its record slots (echo/store/ingest.py, per record file), each in the unit the
    process gave its total of the event (`own`: its metrics file's "papi EV" lines)."""
    if f is None or not f.slot_names:
        return []
    units = {n.split(" ", 1)[1]: u for n, _, u in own if n.startswith("papi ")}
    return slot_metrics(f, units)


def ingest_rows(run_dir: Path, procs: list[tuple[int, int, int, str]], meta: dict) -> tuple[list[dict], list[dict]]:
    """The store's rows of the events the planner left out (run.json's papi_unavailable); the counts are each
    process's own metrics and its record slots (slot_metrics)."""
    return [dict(kind="papi-unavailable", message=UNAVAILABLE.format(event=ev, why=why))
            for ev, why in meta.get("papi_unavailable", [])], []


def counter_rows(metrics: list[Any]) -> list[tuple[int, int, str, str, str, float, str]]:
    """(rank, copy, event, scope, function, value, unit) of the counts among a run's metrics, in their order: scope
    is total (the whole process), compute (between MPI calls), mpi (inside MPI calls) or function (inside calls of
    one MPI function); the cost of a read ("papi read") is no count."""
    rows = []
    for m in metrics:
        words = m.name.split(" ", 2)
        if words[0] != "papi" or m.name == "papi read" or len(words) < 2:
            continue
        scope, function = "total", ""
        if len(words) == 3:
            if words[2].startswith("in "):
                scope, function = "function", words[2][3:]
            else:
                scope = words[2]
        rows.append((m.app_rank, m.copy, words[1], scope, function, m.value, m.unit or "count"))
    return rows


def report_section(session: Any, run: Any) -> list[str]:
    """`mpiecho report`'s counters of a stored run (none when no copy counted)."""
    counters = merged_counters(session, run.id)
    return counters_text(counters) if counters else []


def counters_text(counters: dict[int, dict], top: int = 3) -> list[str]:
    from echo.tables import table

    out = ["counters (each event from the copy that counted it; compute = between MPI calls):"]
    for rank in sorted(counters):
        c = counters[rank]
        rows = [("RANK", "EVENT", "COPY", "UNIT", "TOTAL", "COMPUTE", "IN MPI", "TOP FUNCTIONS")]
        for ev, v in sorted(c["events"].items()):
            funcs = ", ".join(f"{name} {value:.0f}" for value, name in sorted(c["functions"].get(ev, []),
                                                                              reverse=True)[:top])
            rows.append((str(rank), ev, str(v["copy"]), v["unit"], f"{v.get('total', 0):.0f}",
                         f"{v.get('compute', 0):.0f}",
                         f"{v.get('mpi', 0):.0f}", funcs))
        out.append(table(rows))
        for ev, pct in sorted(c["anchors"].items()):
            out.append(f"  anchor {ev}: counted by copies {sorted(c['per_copy'][ev])}, compute phases spread {pct:.1f}%"
                       + (" (copies ran the same work)" if pct < 10 else " (copies disagree: check the host)"))
        if c["read_ns"]:
            out.append(f"  one counter read costs {sum(c['read_ns']) / len(c['read_ns']):.0f} ns (two per MPI call)")
    return out


from echo.collectors.papi import pages  # noqa: E402  (its sections read this module's functions, defined above)
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
