"""How many significant digits survive the perturbation: the copies of each rank compared call by call and
in their printed output (the estimator: this package's docstring)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from echo.runformat.records import RecordFile, read_run
from echo.runformat.runfiles import output_file

if TYPE_CHECKING:  # numpy is imported by the functions that compute: planning a run does not load it
    import numpy as np

LOCKSTEP_OUTPUT = ("in lock-step every copy takes what copy 0 received, so a value that came from MPI is the same "
                   "on every copy by construction; --worlds independent measures it")
FULL_DIGITS = 15.95  # a double's precision: copies that agree exactly
# chi-square 5% quantiles by degrees of freedom (N - 1 copies)
CHI2_05 = {1: 0.00393, 2: 0.103, 3: 0.352, 4: 0.711, 5: 1.145, 6: 1.635, 7: 2.167, 8: 2.733, 9: 3.325, 10: 3.940,
           11: 4.575, 12: 5.226, 13: 5.892, 14: 6.571, 15: 7.261}


def digits(values: np.ndarray) -> tuple[float, float]:
    """Significant digits the samples agree on, and its 95% lower bound (per column if 2-D: copies x sites)."""
    import numpy as np

    values = np.asarray(values, dtype=np.float64)
    n = values.shape[0]
    mu = np.abs(values.mean(axis=0))
    sigma = values.std(axis=0, ddof=1) if n > 1 else np.zeros_like(mu)
    same = values.max(axis=0) == values.min(axis=0)  # exact agreement (std of equal doubles may round to non-0)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.where(same, FULL_DIGITS, -np.log10(sigma / mu))
        hi = sigma * math.sqrt((n - 1) / CHI2_05.get(n - 1, n - 1)) if n > 1 else sigma
        low = np.where(same, FULL_DIGITS, -np.log10(hi / mu))
    s = np.clip(np.nan_to_num(s, nan=0.0, posinf=FULL_DIGITS), 0, FULL_DIGITS)
    low = np.clip(np.nan_to_num(low, nan=0.0, posinf=FULL_DIGITS), 0, FULL_DIGITS)
    return s, low


@dataclass
class RankSensitivity:
    rank: int
    copies: int
    calls: list[tuple[int, str, float, float]] = field(default_factory=list)  # (call, function, digits, low)
    first_parting: tuple[int, str] | None = None  # first call whose data differ between copies
    behaviour: str = "same calls on every copy"
    # (output value, digits); digits None: not measured (lock-step copies that print exactly what copy 0 printed
    # may be printing what copy 0 received, which says nothing of the program's sensitivity)
    outputs: list[tuple[str, float | None]] = field(default_factory=list)

    @property
    def min_digits(self) -> float:
        return min((d for _, _, d, _ in self.calls), default=FULL_DIGITS)


def _data_calls(f: RecordFile) -> np.ndarray:
    import numpy as np

    j = f.slot_names.index("nfloat")
    return np.flatnonzero(f.records["slot"][:, j] > 0)


def analyse_rank(files: list[RecordFile], outputs: list[str], worlds: str = "independent") -> RankSensitivity:
    import numpy as np

    files = sorted(files, key=lambda f: f.copy)
    result = RankSensitivity(files[0].app_rank, len(files))
    # the call sequence, with each call's peer: who a copy talked to is behaviour too
    names = [[f"{n}->{p}" if p >= 0 else n for n, p in zip(f.function_names(), f.records["peer"], strict=True)]
             for f in files]
    first_diff = next((i for i in range(min(map(len, names))) if len({n[i] for n in names}) > 1), None)
    if first_diff is not None or len({len(n) for n in names}) > 1:
        at = first_diff if first_diff is not None else min(map(len, names))
        counts = ", ".join(f"copy {f.copy}: {len(n)} calls" for f, n in zip(files, names, strict=True))
        result.behaviour = f"copies call MPI differently from call #{at} on ({counts})"
    picks = [_data_calls(f) for f in files]
    n = min(len(p) for p in picks)
    if n:
        j = files[0].slot_names.index("fsum")
        stats = []
        for f, p in zip(files, picks, strict=True):
            raw = f.records["slot"][p[:n], j:j + 3].copy()
            stats.append(raw.view(np.float64))  # fsum, fnorm, f0 as doubles
        stats = np.stack(stats)  # copies x calls x 3
        per_stat = [digits(stats[:, :, k]) for k in range(3)]
        d = np.minimum.reduce([ps[0] for ps in per_stat])
        low = np.minimum.reduce([ps[1] for ps in per_stat])
        rec = files[0].records
        fn_names = files[0].function_names()
        result.calls = [(int(rec["seq"][picks[0][i]]), str(fn_names[picks[0][i]]), float(d[i]), float(low[i]))
                        for i in range(n)]
        parted = np.flatnonzero(d < FULL_DIGITS)
        if parted.size:
            i = int(parted[0])
            result.first_parting = (result.calls[i][0], result.calls[i][1])
    result.outputs = output_digits(outputs, worlds)
    return result


NUMBER = re.compile(r"(?<![A-Za-z_\d.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def printed_digits(token: str) -> int:
    """Significant digits a printed number carries ("4.169225956222e+03": 13): copies cannot be seen to agree on
    more."""
    mantissa = re.split("[eE]", token)[0].lstrip("+-").replace(".", "").lstrip("0")
    return max(len(mantissa), 1)


def output_digits(texts: list[str], worlds: str = "independent") -> list[tuple[str, float | None]]:
    """Digits the copies' printed numbers agree on, number by number (same lines on every copy), at most the
    digits printed; None for a number lock-step cannot measure (printed alike by every copy: LOCKSTEP_OUTPUT)."""
    import numpy as np

    per_copy = [[float(x) for x in NUMBER.findall(t)] for t in texts]
    if len(per_copy) < 2 or len({len(p) for p in per_copy}) != 1 or not per_copy[0]:
        return []
    d, _ = digits(np.array(per_copy))
    out: list[tuple[str, float | None]] = []
    for token, agree in zip(NUMBER.findall(texts[0]), d, strict=True):
        same = agree >= FULL_DIGITS
        out.append((token, None if same and worlds == "lockstep" else min(float(agree), printed_digits(token))))
    return out


def worlds_of(run_dir: Path) -> str:
    """lockstep or independent, as the run's plan says."""
    from echo.runformat.runfiles import plan_value

    return plan_value(run_dir, "worlds") or "lockstep"


def analyse(run_dir: Path) -> list[RankSensitivity]:
    run_dir = Path(run_dir)
    worlds = worlds_of(run_dir)
    files = [f for f in read_run(run_dir) if "nfloat" in f.slot_names]
    out = []
    for rank in sorted({f.app_rank for f in files}):
        mine = [f for f in files if f.app_rank == rank]
        texts = []
        for f in sorted(mine, key=lambda f: f.copy):
            path = output_file(run_dir, rank, f.copy)
            texts.append(path.read_text() if path.is_file() else "")
        out.append(analyse_rank(mine, texts, worlds))
    return out


def output_text(d: float | None, printed: int, worlds: str) -> str:
    """How many digits copies agree on in one printed number, and what that measured."""
    if d is None:
        return f"not measured ({LOCKSTEP_OUTPUT})"
    text = f"{d:.1f} digits" + (" (every digit printed)" if d >= printed else "")
    return text + (" (its last compute phase alone)" if worlds == "lockstep" else "")


def describe(results: list[RankSensitivity], worlds: str) -> str:
    if not results:
        return "no perturbed copies recorded data (was the run started with --perturb?)"
    n = results[0].copies
    lines = [
        f"significant digits the copies agree on (s = -log10(sigma/|mu|) over {n} copies, Parker/Verificarlo; "
        f"95% lower bound by the chi-square bound of sigma); worlds: {worlds}"
        + (" (copies took what copy 0 received: each call measures one compute phase, not how errors propagate "
           "through the run; --worlds independent measures that)" if worlds == "lockstep"
           else " (each copy's world ran the whole communication: effects propagate)"),
    ]
    if n < 4:
        lines.append(f"  with {n} copies this is a weak statement: sigma from {n} samples can be off by a factor "
                     "of several; use --clones 8 or more for a firmer one")
    for r in results:
        lines.append(f"rank {r.rank}: fewest digits {r.min_digits:.1f} over {len(r.calls)} calls with floating-point "
                     "data; " + (f"copies part at call #{r.first_parting[0]} ({r.first_parting[1]})"
                                 if r.first_parting else "copies never part"))
        lines.append(f"  behaviour: {r.behaviour}")
        worst = sorted(r.calls, key=lambda c: c[2])[:3]
        for seq, fn, d, low in worst:
            lines.append(f"  call #{seq} {fn}: {d:.1f} digits (95% at least {low:.1f})")
        for value, d in r.outputs[:8]:
            lines.append(f"  output {value}: " + output_text(d, printed_digits(value), worlds))
    return "\n".join(lines)
