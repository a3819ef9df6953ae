"""Performance faults: slow processes found from their copies (DGRP's rule on echo's records).

Copies of a rank execute the same instructions between the same MPI calls, so
the time each copy spends in a compute phase (from the end of one call to the
start of the next) is a test of the core and host under it. For every phase,
each copy's time is divided by the fastest copy's (the group's reference); a
per-process estimator in the manner of TCP's retransmission timer (DGRP)
keeps the mean and deviation of that ratio as weighted averages (alpha 0.9)
over the phases the process was healthy in, and the threshold is
tolerance x (mean + beta x deviation), beta 4. `strikes` phases in a row
above the threshold (2: a single one is a process preempted once) make the
process non-recommended; it is recommended again after `rejoin` phases in a
row below it. A host is non-recommended while one of its
processes is. Phases shorter than `min_phase` alone are timing noise: consecutive
phases are pooled until the reference has computed `min_phase`, and each pool is
judged as one phase (SDR's exclusion pools its rounds the same way).

Runs without copies can be judged by DGRP's explicit tests instead (`--perf-tests N`:
every process times a fixed short computation before every Nth call; the kth
tests of all processes are compared the same way).

`analyse(run_dir)` writes RUN_DIR/perf.json; `parse_slow` plans the injector
(`--inject slow:rank=R,copy=K,factor=F[,from=N][,to=M]`, calls N to M).
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from echo import hostload
from echo.runformat import constants, runfiles
from echo.runformat.records import RecordFile, read_run
from echo.runformat.spec import parse_spec

if TYPE_CHECKING:  # numpy is imported by the functions that compute: planning a run does not load it
    import numpy as np


class PerfError(ValueError):
    """A performance option that cannot be used; the message says how to fix it."""


@dataclass(frozen=True)
class Params:
    alpha: float = constants.DGRP_ALPHA  # weight of the past in the mean and deviation
    beta: float = constants.DGRP_BETA  # deviations above the mean
    tolerance: float = constants.DGRP_TOLERANCE  # the threshold's factor
    strikes: int = 2  # phases in a row above the threshold to be non-recommended (one is a preempted phase)
    rejoin: int = 3  # good phases in a row to be recommended again
    min_phase: float = constants.DGRP_MIN_PHASE  # seconds: phases are pooled until the reference computed this long


@dataclass
class Estimator:
    """DGRP's adaptive threshold on one process's phase-time ratios."""

    params: Params
    mean: float = 1.0
    dev: float = 0.1

    def threshold(self) -> float:
        return self.params.tolerance * (self.mean + self.params.beta * self.dev)

    def update(self, x: float) -> None:
        a = self.params.alpha
        self.dev = a * self.dev + (1 - a) * abs(x - self.mean)
        self.mean = a * self.mean + (1 - a) * x


@dataclass
class ProcessStatus:
    rank: int
    copy: int
    host: str
    judged: int = 0  # phases compared with the group
    slow: int = 0  # of those, spent non-recommended
    # (call number, seconds since the job's start, "non-recommended" | "recommended"), in order
    changes: list[tuple[int, float, str]] = field(default_factory=list)


def phase_times(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Compute phase k: from the end of call k-1 to the start of call k (phase 0: none)."""
    import numpy as np

    out = np.zeros(len(starts))
    out[1:] = starts[1:] - ends[:-1]
    return out


def pooled(times: np.ndarray, ref: np.ndarray, min_phase: float) -> tuple[np.ndarray, np.ndarray]:
    """Consecutive phases pooled until the reference has computed `min_phase` (a pool ends at the phase where its
    running total passes the next multiple): per copy, its time over the reference's in each pool, placed at the
    pool's last phase, and which phases end a pool."""
    import numpy as np

    n = ref.shape[0]
    count = np.floor(np.cumsum(ref) / min_phase)
    ends = np.flatnonzero(np.diff(np.concatenate(([0.0], count))) > 0)
    ratios, judged = np.ones(times.shape), np.zeros(n, dtype=bool)
    if len(ends) == 0:
        return ratios, judged
    starts = np.concatenate(([0], ends[:-1] + 1))
    ref_sums = np.add.reduceat(ref, starts)
    for i, t in enumerate(times):
        ratios[i, ends] = np.divide(np.add.reduceat(t, starts), ref_sums, out=np.ones(len(ends)), where=ref_sums > 0)
    judged[ends] = True
    return ratios, judged


def judge(ratios: np.ndarray, judged: np.ndarray, params: Params) -> tuple[list[tuple[int, str]], int]:
    """The status changes of one process, (phase index, new status), and how many judged phases it spent
    non-recommended."""
    import numpy as np

    est, recommended, good, bad, changes, slow = Estimator(params), True, 0, 0, [], 0
    for k in np.flatnonzero(judged):
        slow += not recommended
        x = float(ratios[k])
        limit = est.threshold()
        if recommended:
            bad = bad + 1 if x > limit else 0
            if bad >= params.strikes:
                recommended, good = False, 0
                changes.append((int(k), "non-recommended"))
            elif not bad:
                est.update(x)
        elif x <= limit:
            good += 1
            if good >= params.rejoin:
                recommended = True
                changes.append((int(k), "recommended"))
        else:
            good = 0
    return changes, slow


def busy_phases(group: list[RecordFile], n: int, load: dict | None) -> np.ndarray:
    """Which of the first n phases of a rank's copies ran, in one copy at least, while its host was busy with
    other work (hostload's spans): their times measure the turns the scheduler gave, not the core."""
    import numpy as np

    out = np.zeros(n, dtype=bool)
    for f in group:
        spans = hostload.busy_spans(load, f.host)
        if len(spans) and n > 1:
            start, end = f.seconds("t_start")[:n], f.seconds("t_end")[:n]
            out[1:] |= hostload.overlaps(spans, f.start_time + end[:-1], f.start_time + start[1:])
    return out


def pools_with(marked: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """For each pool (ending where `ends` is true, as `pooled` gives them), true at its end if one of its phases
    is marked."""
    import numpy as np

    count = np.cumsum(marked)
    at_ends = np.flatnonzero(ends)
    before = np.concatenate(([0], count[at_ends][:-1]))
    out = np.zeros(len(ends), dtype=bool)
    out[at_ends] = count[at_ends] - before > 0
    return out


def since_start(f: RecordFile, k: int, origin: float) -> float:
    """When record k of a file started, in seconds since the job's first process started."""
    return round(f.start_time - origin + float(f.seconds("t_start")[k]), 6)


def slow_by_design(role: str) -> bool:
    """Whether a process role makes a copy slow by design (a Valgrind tool or a slice of one, timing jitter: its
    Role's slow_roles): against its rank's other copies it would always look slow, so it is neither judged
    nor the reference."""
    from echo.collectors import roles

    return role.split("-")[0] in roles.slow_roles()


def crowded_hosts(files: list[RecordFile], cores: int | None = None,
                  load: dict | None = None) -> dict[str, tuple[int, int, float]]:
    """Hosts where processes outnumbered cores, as (the job's processes, cores, processes ready to run): there
    processes take turns on a core, and a phase's time measures the turns the scheduler gave, not the core.
    Ready processes (`load`, hostload.py: sampled while the job ran) count other work on the host too; without
    a sample they are the job's. Only this machine is known (the analysis runs where echorun ran), so other hosts
    of a multi-host job are taken as having a core a process."""
    cores = cores or os.cpu_count() or 1
    count: dict[str, int] = {}
    for f in files:
        count[f.host] = count.get(f.host, 0) + 1
    here = socket.gethostname()
    out = {}
    for host, n in count.items():
        ready = max(n, load["runnable_median"]) if load and load.get("host") == host else n
        if host == here and ready > cores:
            out[host] = (n, cores, ready)
    return out


def not_judged_reason(role: str, host: str, crowded: dict[str, tuple[int, int, float]]) -> str | None:
    """Why a process's phase times cannot stand for its core's speed, or None if they can: its role first (true
    of it anywhere), then its host."""
    if slow_by_design(role):
        return f"its role ({role}) makes it slow by design"
    if host in crowded:
        n, cores, ready = crowded[host]
        if n > cores:
            return (f"{n} processes shared {cores} cores on {host}: they took turns on a core, so their phase times "
                    "measure the scheduler, not the core (give every process a core to judge them)")
        return (f"{host} was busy: {ready:g} processes were ready to run on its {cores} cores (the job's {n} and "
                "other work), so they took turns on a core and phase times measure the scheduler, not the core "
                "(run where the job has the cores to itself to judge them)")
    return None


def analyse(run_dir: str | Path, params: Params = Params(), cores: int | None = None) -> dict:
    """Every process's status timeline and every host's, from the run's records; also written to perf.json.
    Processes whose phase times cannot be trusted (a crowded host, a role slow by design) are listed as not
    judged, with the reason, instead."""
    import numpy as np

    every = read_run(run_dir)
    files = [f for f in every if len(f.records)]
    origin = min((f.start_time for f in files), default=0.0)
    roles = {(app, copy): role for _real, app, copy, role in runfiles.plan_procs(Path(run_dir))}
    load = hostload.read(Path(run_dir))
    crowded = crowded_hosts(every, cores, load)  # those without calls took turns too
    groups: dict[int, list] = {}
    not_judged, left_out = [], []
    for f in files:
        why = not_judged_reason(roles.get((f.app_rank, f.copy), ""), f.host, crowded)
        if why:
            not_judged.append({"rank": f.app_rank, "copy": f.copy, "host": f.host, "reason": why})
        else:
            groups.setdefault(f.app_rank, []).append(f)
    procs: list[ProcessStatus] = []
    for rank, group in sorted(groups.items()):
        n = min(len(f.records) for f in group)  # copies make the same calls: phase k is the same in each
        times = np.array([phase_times(f.seconds("t_start")[:n], f.seconds("t_end")[:n]) for f in group])
        ratios, judged = pooled(times, times.min(axis=0), params.min_phase)
        if len(group) < 2:
            judged[:] = False
        busy = busy_phases(group, n, load)
        busy_pools = pools_with(busy, judged)  # true only at the ends of pools, which are the judged phases
        if busy_pools.any():
            left_out.append({"rank": rank, "phases": int(busy_pools.sum()), "of": int(judged.sum()),
                             "hosts": sorted({f.host for f in group})})
            judged &= ~busy_pools
        for f, r in zip(group, ratios, strict=True):
            changes, slow = judge(r, judged, params)
            st = ProcessStatus(rank, f.copy, f.host, judged=int(judged.sum()), slow=slow)
            for k, status in changes:
                st.changes.append((int(f.records["seq"][k]), since_start(f, k, origin), status))
            procs.append(st)
    tests = tested(Path(run_dir), {f.real_rank: f for f in files}, origin, params,
                   skip={f.real_rank for f in files if f.host in crowded})
    result = {"params": asdict(params), "processes": [asdict(p) for p in procs], "tested": [asdict(p) for p in tests],
              "hosts": host_view(procs + tests), "not_judged": sorted(not_judged, key=lambda p: (p["rank"], p["copy"])),
              "busy_left_out": left_out}
    runfiles.perf_json_file(Path(run_dir)).write_text(json.dumps(result, indent=1))
    return result


def tested(run_dir: Path, files: dict, origin: float, params: Params, skip: set[int] = frozenset()) -> \
        list[ProcessStatus]:
    """DGRP's explicit tests (--perf-tests N): every process's kth test against the fastest process's kth (but
    the processes in `skip`, whose tests cannot be trusted)."""
    import numpy as np

    paths = runfiles.perf_test_files(Path(run_dir))
    series = {int(p.stem): np.atleast_1d(np.loadtxt(p, ndmin=1)) for p in paths
              if p.stat().st_size and int(p.stem) not in skip}
    n = min((len(v) for v in series.values()), default=0)
    if len(series) < 2 or n == 0:
        return []
    every = int(runfiles.plan_value(Path(run_dir), "perf_tests") or "1")
    times = np.array([series[real][:n] for real in sorted(series)])
    ref = times.min(axis=0)
    judged = ref > 0
    out = []
    for real, t in zip(sorted(series), times, strict=True):
        f = files.get(real)
        changes, slow = judge(np.divide(t, ref, out=np.ones(n), where=judged), judged, params)
        st = ProcessStatus(f.app_rank if f else -1, f.copy if f else 0, f.host if f else "?", int(judged.sum()), slow)
        for k, status in changes:
            call = (k + 1) * every  # the test ran before this call
            st.changes.append((call, since_start(f, min(call, len(f.records)) - 1, origin) if f else 0.0, status))
        out.append(st)
    return out


def host_view(procs: list[ProcessStatus]) -> list[dict]:
    """Per host: how often one of its processes was slow, and its own timeline (slow while any process is)."""
    out = []
    for host in sorted({p.host for p in procs}):
        mine = [p for p in procs if p.host == host]
        events = sorted((t, s) for p in mine for _, t, s in p.changes)
        slow_now, changes = 0, []
        for t, s in events:
            before = slow_now
            slow_now += 1 if s == "non-recommended" else -1
            if (before == 0) != (slow_now == 0):
                changes.append((t, "non-recommended" if slow_now else "recommended"))
        judged = sum(p.judged for p in mine)
        out.append({"host": host, "slow_fraction": round(sum(p.slow for p in mine) / judged, 4) if judged else 0.0,
                    "changes": changes})
    return out


def not_judged_lines(result: dict) -> list[str]:
    """The processes left out of the diagnosis, one line per reason."""
    by_reason: dict[str, list[str]] = {}
    for p in result.get("not_judged", []):
        by_reason.setdefault(p["reason"], []).append(f"rank {p['rank']} copy {p['copy']}")
    return [f"performance: not judged ({len(who)} process{'es' if len(who) > 1 else ''}"
            + (f": {', '.join(who)}" if len(who) <= 4 else "") + f"): {why}" for why, who in by_reason.items()]


def describe(result: dict) -> list[str]:
    """What echorun says after the job."""
    lines = not_judged_lines(result)
    for p in result.get("busy_left_out", []):
        lines.append(f"performance: {p['phases']} of rank {p['rank']}'s {p['of']} compared phases left out: "
                     f"{', '.join(p['hosts'])} was busy with other work during them (its processes took turns)")
    for key, what in (("processes", "compute phases compared between copies"), ("tested", "explicit tests")):
        procs = result.get(key, [])
        judged = max((p["judged"] for p in procs), default=0)
        flagged = [p for p in procs if p["changes"]]
        if judged and not flagged:
            lines.append(f"performance: no process was slow ({judged} {what})")
        for p in flagged:
            spans = ", ".join(f"{status} at call {seq} ({t:.2f} s)" for seq, t, status in p["changes"])
            lines.append(f"performance: rank {p['rank']} copy {p['copy']} on {p['host']} ({what}): {spans}")
    if not lines:
        return []
    often = [h for h in result["hosts"] if h["slow_fraction"] >= 0.1]
    if often:
        lines.append("performance: hosts often slow: " + ", ".join(
            f"{h['host']} ({h['slow_fraction']:.0%} of phases)" for h in often))
    return lines


def parse_slow(spec: str, copies: list[int]) -> str:
    """`slow:rank=R,copy=K,factor=F[,from=N][,to=M]` -> the plan line's value "R K F N M" (M 0: to the end)."""
    item = parse_spec(spec)
    values = item.values
    if item.kind != "slow" or not item.has_settings or not {"rank", "copy", "factor"} <= set(values) or \
            set(values) - {"rank", "copy", "factor", "from", "to"}:
        raise PerfError(f"--inject {spec}: expected slow:rank=R,copy=K,factor=F[,from=N][,to=M] "
                        "(F times slower compute phases, from its Nth MPI call to its Mth)")
    try:
        rank, copy, factor = int(values["rank"]), int(values["copy"]), float(values["factor"])
        start, stop = int(values.get("from", 1)), int(values.get("to", 0))
    except ValueError as e:
        raise PerfError(f"--inject {spec}: {e}") from None
    if not 0 <= rank < len(copies):
        raise PerfError(f"--inject {spec}: rank {rank} does not exist (ranks are 0..{len(copies) - 1})")
    if not 0 <= copy < copies[rank]:
        raise PerfError(f"--inject {spec}: rank {rank} has copies 0..{copies[rank] - 1}")
    if factor <= 1:
        raise PerfError(f"--inject {spec}: factor must be > 1 (2 makes compute phases twice as long)")
    if start < 1 or (stop and stop <= start):
        raise PerfError(f"--inject {spec}: from must be >= 1 and to, if given, after it")
    return f"{rank} {copy} {factor} {start} {stop}"
