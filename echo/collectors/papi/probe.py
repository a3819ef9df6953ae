"""What PAPI can count here and the counter sets planned from it: the system PAPI asked through a small helper,
`papi_plan.c`, compiled on first use and cached; the events packed into conflict-free sets, one per copy."""

from __future__ import annotations

import functools
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

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
