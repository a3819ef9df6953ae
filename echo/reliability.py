"""The SDR reliability planner: which replication degree r keeps the chance of
losing the application during its run under a target.

The model is the one of P2P-MPI (Genaud, Jeannot & Rattanapoka, "Fault-management
in P2P-MPI", IJPP 2009); docs/reliability.md states it with its assumptions.
Every function here but `load_overheads` is pure, and every bad value raises
`ReliabilityError` with a message naming the `mpiecho plan` option and the fix.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_REPLICAS = (1, 2, 3, 4)
DEFAULT_OVERHEAD = 0.05
DEFAULT_TARGET = 1e-3

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]*)")


class ReliabilityError(ValueError):
    """An option of `mpiecho plan --reliability` that cannot be used; the message says how to fix it."""


def parse_duration(text: str, option: str) -> float:
    """Seconds from `6h`, `90m`, `2d`, `30s` or a plain number of seconds; positive and finite."""
    m = _DURATION.fullmatch(text.strip())
    if not m:
        raise ReliabilityError(f"{option} {text!r}: not a duration; expected e.g. 6h, 90m, 2d "
                               "or a plain number of seconds")
    number, unit = m.group(1), m.group(2).lower() or "s"
    if unit not in _UNITS:
        raise ReliabilityError(f"{option} {text!r}: unknown unit {m.group(2)!r}; use s, m, h or d "
                               "(e.g. 6h, 90m, 2d; a plain number is seconds)")
    value = float(number) * _UNITS[unit]
    if not math.isfinite(value) or value <= 0:
        raise ReliabilityError(f"{option} {text!r}: a duration must be positive, e.g. 6h")
    return value


def format_duration(seconds: float) -> str:
    """The largest unit that keeps the number at least 1 (2 for days: 36h reads better than 1.5d)."""
    for unit, size, least in (("d", 86400.0, 2.0), ("h", 3600.0, 1.0), ("m", 60.0, 1.0)):
        if seconds >= least * size:
            return f"{seconds / size:.4g}{unit}"
    return f"{seconds:.4g}s"


def parse_replicas(text: str) -> tuple[int, ...]:
    """Replication degrees from `1,2,3`: positive integers, each once, in increasing order."""
    items = [item.strip() for item in text.split(",")]
    try:
        degrees = [int(item) for item in items]
    except ValueError:
        raise ReliabilityError(f"--replicas {text!r}: expected positive integers separated by commas, "
                               "e.g. --replicas 1,2,3") from None
    if any(r < 1 for r in degrees):
        raise ReliabilityError(f"--replicas {text!r}: a degree is at least 1 (1 = no replication)")
    if len(set(degrees)) != len(degrees):
        raise ReliabilityError(f"--replicas {text!r}: a degree is given twice")
    return tuple(sorted(degrees))


def load_overheads(path: str | Path) -> dict[int, float]:
    """Overheads per degree from a JSON object such as {"2": 0.03, "3": 0.06} (the SDR benchmark's)."""
    option = f"--overhead-from {path}"
    try:
        data = json.loads(Path(path).read_text())
    except OSError as e:
        raise ReliabilityError(f"{option}: cannot read it ({e.strerror})") from None
    except ValueError as e:
        raise ReliabilityError(f"{option}: not JSON ({e}); expected e.g. {{\"2\": 0.03, \"3\": 0.06}}") from None
    if not isinstance(data, dict):
        raise ReliabilityError(f"{option}: expected a JSON object of degree to overhead, "
                               "e.g. {\"2\": 0.03, \"3\": 0.06}")
    overheads: dict[int, float] = {}
    for key, value in data.items():
        try:
            r = int(key)
        except ValueError:
            raise ReliabilityError(f"{option}: key {key!r} is not a replication degree (\"2\", \"3\", ...)") from None
        # bool is an int to Python, but true/false in the file is a mistake, not an overhead
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ReliabilityError(f"{option}: the overhead of r={key} is {value!r}; expected a number "
                                   "such as 0.03 (3% longer)")
        overheads[r] = float(value)
    return overheads


def overheads_for(replicas: Sequence[int], overhead: float = DEFAULT_OVERHEAD,
                  given: Mapping[int, float] | None = None) -> dict[int, float]:
    """The overhead of each degree: r=1 none, the others `overhead`, or what `given` (a file) says."""
    if given is None:
        if not math.isfinite(overhead) or overhead < 0:
            raise ReliabilityError(f"--overhead {overhead}: a fraction of the runtime, 0 or more "
                                   "(0.05 = 5% longer)")
        return {r: 0.0 if r == 1 else overhead for r in replicas}
    if given.get(1, 0.0) != 0.0:
        raise ReliabilityError(f"--overhead-from: r=1 has overhead {given[1]}; r=1 is the unreplicated run the "
                               "overheads are measured against, so it has none (drop the \"1\" entry)")
    bad = [r for r, value in given.items() if not math.isfinite(value) or value < 0]
    if bad:
        raise ReliabilityError(f"--overhead-from: the overhead of r={bad[0]} is {given[bad[0]]}; it is a fraction "
                               "of the runtime, 0 or more (0.05 = 5% longer)")
    missing = [r for r in replicas if r > 1 and r not in given]
    if missing:
        have = ",".join(str(r) for r in sorted({1, *given}))
        raise ReliabilityError(f"--overhead-from: no overhead for r={','.join(map(str, missing))}; add it to the "
                               f"file or plan the degrees it has (--replicas {have})")
    return {r: 0.0 if r == 1 else given[r] for r in replicas}


def failure_probability(t: float, mtbf: float, weibull_shape: float | None = None) -> float:
    """F(t): the probability that one host fails before t (seconds).

    Exponential with mean `mtbf`, or Weibull of shape K with the scale that gives
    the same mean: eta = mtbf / Gamma(1 + 1/K).
    """
    if weibull_shape is None:
        return -math.expm1(-t / mtbf)
    # (t/eta)^K in logarithms: Gamma(1 + 1/K) and the power overflow a float for extreme shapes
    k = weibull_shape
    log_hazard = k * (math.log(t) - math.log(mtbf) + math.lgamma(1.0 + 1.0 / k))
    return 1.0 if log_hazard > 700 else -math.expm1(-math.exp(log_hazard))


def loss_probability(groups: int, replicas: int, host_failure: float) -> float:
    """P_lost = 1 - (1 - F^r)^groups: some group of ranks loses all r hosts holding its replicas.

    Computed with log1p/expm1 so that small probabilities (1e-12) keep their digits.
    """
    all_replicas = host_failure**replicas
    if all_replicas >= 1.0:
        return 1.0
    return -math.expm1(groups * math.log1p(-all_replicas))


def degree_needed(groups: int, host_failure: float, target: float) -> int | None:
    """The smallest r with P_lost <= target for this F, or None when a host surely fails (F = 1).

    From (1 - F^r)^groups >= 1 - target: F^r <= 1 - (1 - target)^(1/groups).
    """
    if host_failure >= 1.0:
        return None
    if host_failure <= 0.0:
        return 1
    per_group = -math.expm1(math.log1p(-target) / groups)
    r = max(1, math.ceil(math.log(per_group) / math.log(host_failure)))
    # the logarithms may round r to one below the boundary
    return r if loss_probability(groups, r, host_failure) <= target else r + 1


@dataclass(frozen=True)
class Row:
    replicas: int
    overhead: float  # fraction of the runtime added by replication
    runtime: float  # stretched runtime, seconds
    hosts: int
    p_lost: float
    meets_target: bool


@dataclass(frozen=True)
class ReliabilityPlan:
    nranks: int
    ranks_per_host: int
    mtbf: float  # seconds, per host
    runtime: float  # seconds, unreplicated
    weibull_shape: float | None  # None: exponential
    target: float
    rows: tuple[Row, ...]
    # when no row meets the target: the degree that would at the overhead of the highest row
    # (a lower bound, since overhead grows with r); None when a host surely fails during the run
    needed: int | None

    @property
    def smallest_meeting_target(self) -> int | None:
        return next((row.replicas for row in self.rows if row.meets_target), None)


def plan_reliability(nranks: int, mtbf: float, runtime: float, overheads: Mapping[int, float],
                     ranks_per_host: int = 1, weibull_shape: float | None = None,
                     target: float = DEFAULT_TARGET) -> ReliabilityPlan:
    """One row per degree of `overheads` (degree -> overhead, from `overheads_for`)."""
    if nranks < 1:
        raise ReliabilityError(f"-n {nranks}: the application needs at least one rank")
    if ranks_per_host < 1:
        raise ReliabilityError(f"--ranks-per-host {ranks_per_host}: a host holds at least one rank")
    for option, value in (("--mtbf", mtbf), ("--runtime", runtime)):
        if not math.isfinite(value) or value <= 0:
            raise ReliabilityError(f"{option} {value}: must be a positive duration, e.g. 6h")
    if weibull_shape is not None and not (math.isfinite(weibull_shape) and weibull_shape > 0):
        raise ReliabilityError(f"--weibull-shape {weibull_shape}: the shape must be positive "
                               "(1 = exponential, below 1 = early failures, above 1 = wear-out)")
    if not 0 < target < 1:
        raise ReliabilityError(f"--target {target}: a probability strictly between 0 and 1, e.g. 1e-3")
    if not overheads:
        raise ReliabilityError("--replicas: no replication degree to plan, e.g. --replicas 1,2,3")
    # Ranks sharing a host share its fate, and replicas of a rank sit on distinct hosts: the
    # unit is a group of P ranks (the last may be smaller) spread over r hosts.
    groups = math.ceil(nranks / ranks_per_host)
    rows = []
    for r, overhead in sorted(overheads.items()):
        stretched = runtime * (1.0 + overhead)
        p = loss_probability(groups, r, failure_probability(stretched, mtbf, weibull_shape))
        rows.append(Row(replicas=r, overhead=overhead, runtime=stretched, hosts=groups * r, p_lost=p,
                        meets_target=p <= target))
    last = rows[-1]
    needed = None if any(row.meets_target for row in rows) else degree_needed(
        groups, failure_probability(last.runtime, mtbf, weibull_shape), target)
    return ReliabilityPlan(nranks=nranks, ranks_per_host=ranks_per_host, mtbf=mtbf, runtime=runtime,
                           weibull_shape=weibull_shape, target=target, rows=tuple(rows), needed=needed)


def _probability(p: float) -> str:
    if p == 0.0 or p >= 1e-3:
        text = f"{p:.4f}"
        # never round a chance of survival away
        return "> 0.9999" if text == "1.0000" and p < 1.0 else text
    return f"{p:.2e}"


def format_table(plan: ReliabilityPlan) -> str:
    """The plan as text: the model in one line, one row per degree, the verdict."""
    law = "exponential" if plan.weibull_shape is None else f"Weibull shape {plan.weibull_shape:g}"
    lines = [f"{plan.nranks} ranks, {plan.ranks_per_host} per host; host MTBF {format_duration(plan.mtbf)} "
             f"({law}); runtime {format_duration(plan.runtime)} unreplicated; target P(lost) <= {plan.target:g}",
             f"{'r':>3}  {'overhead':>8}  {'runtime':>9}  {'hosts':>7}  {'P(lost)':>10}  meets target"]
    for row in plan.rows:
        lines.append(f"{row.replicas:>3}  {row.overhead:>8.1%}  {format_duration(row.runtime):>9}  {row.hosts:>7}  "
                     f"{_probability(row.p_lost):>10}  {'yes' if row.meets_target else 'no'}")
    best = plan.smallest_meeting_target
    if best is not None:
        lines.append(f"smallest r meeting the target: {best}")
    else:
        last = plan.rows[-1]
        lines.append(f"no r in {','.join(str(row.replicas) for row in plan.rows)} meets the target; "
                     + (f"with r={last.replicas}'s runtime ({format_duration(last.runtime)}) it would take "
                        f"r >= {plan.needed} (a lower bound: the overhead grows with r)"
                        if plan.needed is not None else "a host almost surely fails during the run: shorten it"))
    return "\n".join(lines)


def plan_as_dict(plan: ReliabilityPlan) -> dict[str, Any]:
    """The plan as plain data for `--json`: seconds and fractions, no formatting."""
    return {
        "nranks": plan.nranks,
        "ranks_per_host": plan.ranks_per_host,
        "mtbf_s": plan.mtbf,
        "runtime_s": plan.runtime,
        "distribution": "exponential" if plan.weibull_shape is None else "weibull",
        "weibull_shape": plan.weibull_shape,
        "target": plan.target,
        "rows": [{"replicas": row.replicas, "overhead": row.overhead, "runtime_s": row.runtime, "hosts": row.hosts,
                  "p_lost": row.p_lost, "meets_target": row.meets_target} for row in plan.rows],
        "smallest_meeting_target": plan.smallest_meeting_target,
        "needed_at_highest_overhead": plan.needed,
    }
