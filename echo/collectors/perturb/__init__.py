"""Perturbation and sensitivity analysis across copies.

Each copy runs with a slight variation (rounding mode, ulp-scale noise on the
floating-point data it receives, or timing jitter); every copy records a
summary of the floating-point data it hands to MPI at each call (sum, norm,
first value: record slots fsum, fnorm, f0, nfloat). Comparing the copies call by
call says how many significant digits survive the variation.

Estimator: s = -log10(sigma / |mu|) over the N copies (D. S. Parker's Monte
Carlo arithmetic, as Verificarlo uses it), capped at the precision of a double
(15.95 digits: all copies agree). With the few samples copies give, the
estimate is weak; the 95% lower bound uses the chi-square upper bound of sigma:
sigma_hi = sigma * sqrt((N - 1) / chi2_{0.05, N-1}).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from echo.runformat.records import RecordFile, read_run
from echo.runformat.runfiles import output_file
from echo.runformat.spec import parse_spec

if TYPE_CHECKING:  # numpy is imported by the functions that compute: planning a run does not load it
    import numpy as np

LOCKSTEP_OUTPUT = ("in lock-step every copy takes what copy 0 received, so a value that came from MPI is the same "
                   "on every copy by construction; --worlds independent measures it")
FULL_DIGITS = 15.95  # a double's precision: copies that agree exactly
# chi-square 5% quantiles by degrees of freedom (N - 1 copies)
CHI2_05 = {1: 0.00393, 2: 0.103, 3: 0.352, 4: 0.711, 5: 1.145, 6: 1.635, 7: 2.167, 8: 2.733, 9: 3.325, 10: 3.940,
           11: 4.575, 12: 5.226, 13: 5.892, 14: 6.571, 15: 7.261}


class PerturbError(ValueError):
    """A --perturb option that cannot be used; the message says how to fix it."""


def parse(spec: str, worlds: str | None, copies: list[int]) -> tuple[list[str], str]:
    """Plan lines for `--perturb SPEC`, and the worlds mode in force."""
    item = parse_spec(spec)
    kind, params = item.kind, item.values
    if item.not_key_value:
        raise PerturbError(f"--perturb {spec}: {item.not_key_value[0]!r} is not key=value")
    if max(copies) < 2:
        raise PerturbError(f"--perturb {spec} compares copies: give ranks 2 or more (--clones 4)")
    allowed = {"rounding": set(), "noise": {"ulp", "seed"}, "jitter": {"max", "seed"}}
    if kind not in allowed:
        raise PerturbError(f"--perturb {spec}: expected rounding, noise:ulp=1,seed=7 or jitter:max=50us")
    unknown = set(params) - allowed[kind]
    if unknown:
        raise PerturbError(f"--perturb {spec}: unknown setting {sorted(unknown)[0]!r} for {kind}")
    seed = _int(params.get("seed", "1"), "seed", spec)
    if kind == "jitter":
        if worlds == "lockstep":
            raise PerturbError("--perturb jitter needs --worlds independent: in lock-step, copies take what copy 0 "
                               "received, so timing on a copy changes nothing")
        worlds = "independent"
        line = f"perturb jitter {_microseconds(params.get('max', '50us'), spec)} {seed}"
    elif kind == "noise":
        ulp = _number(params.get("ulp", "1"), "ulp", spec)
        if not 0 < ulp < float("inf"):
            raise PerturbError(f"--perturb {spec}: ulp must be a positive number, e.g. noise:ulp=1")
        line = f"perturb noise {ulp} {seed}"
    else:
        line = "perturb rounding 0 0"
    worlds = worlds or "lockstep"
    if worlds == "independent" and len(set(copies)) != 1:
        raise PerturbError("--worlds independent needs the same number of copies for every rank (copy k of every "
                           "rank forms world k): use --clones N")
    return [line, f"worlds {worlds}"], worlds


def given(opts: Any) -> bool:
    """Whether the run is perturbed (it then gives sensitivity's JUnit verdicts and reads mpirun's tagged output,
    which keeps copy 0's output in a file too)."""
    return bool(opts.perturb)


def assign(opts: Any, copies: list[int]) -> dict[tuple[int, int], str]:
    """(rank, copy) -> the role of each perturbed copy ("rounding-upward", "noise-2", ...)."""
    if not opts.perturb:
        return {}
    kind = opts.perturb.split(":")[0]
    out = {}
    for app, n in enumerate(copies):
        for copy in range(n):
            if copy > 0 or opts.perturb_rep:
                out[app, copy] = ("rounding-" + ("nearest", "upward", "downward", "toward-zero")[copy % 4]
                                  if kind == "rounding" else f"{kind}-{copy}")
    return out


def plan_lines(opts: Any, copies: list[int], procs: list[Any], machine: Any) -> list[str]:
    """The plan's perturb, worlds and perturb_rep lines (echo/plan.py's Options, Procs and Machine)."""
    if not opts.perturb:
        if opts.worlds == "independent":
            raise PerturbError("--worlds independent goes with --perturb (copies would just repeat the run)")
        return []
    lines, worlds = parse(opts.perturb, opts.worlds, copies)
    if worlds == "independent" and opts.sdc:
        raise PerturbError("--sdc compares copies that take the same input; independent worlds differ by design")
    return lines + [f"perturb_rep {int(opts.perturb_rep)}"]


def label(plan_value: str, worlds: str) -> str:
    """A plan's "perturb KIND A B" line as users write it, with its worlds: "noise:ulp=1,seed=7 (lockstep)"."""
    kind, a, b = (plan_value.split() + ["0", "0"])[:3]
    args = {"noise": f":ulp={float(a):g},seed={b}", "jitter": f":max={a}us,seed={b}"}.get(kind, "")
    return f"{kind}{args} ({worlds})"


def _int(text: str, key: str, spec: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise PerturbError(f"--perturb {spec}: {key}={text} is not a whole number, e.g. {key}=7") from None


def _number(text: str, key: str, spec: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise PerturbError(f"--perturb {spec}: {key}={text} is not a number, e.g. {key}=1") from None


def _microseconds(text: str, spec: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(us|ms|s)?", text)
    if not m:
        raise PerturbError(f"--perturb {spec}: max={text}: expected a time such as 50us or 2ms")
    return int(float(m.group(1)) * {"us": 1, "ms": 1000, "s": 1_000_000, None: 1}[m.group(2)])


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


def sensitivity_rows(run_dir: Path, sites: int = 200) -> tuple[list[dict], list[dict]]:
    """Digits per rank (copy -1: across copies): the fewest, per call site (up to `sites`, evenly spread over
    the run) and per printed output; an event per rank with where copies part and how they behave."""
    events, metrics = [], []
    for r in analyse(run_dir):
        def metric(name: str, value: float, rank: int = r.rank) -> None:
            metrics.append(dict(app_rank=rank, copy=-1, name=name, value=value, unit="digits"))

        metric("digits fewest", r.min_digits)
        step = max(1, len(r.calls) // sites)
        for seq, fn, d, _low in r.calls[::step]:
            metric(f"digits at call #{seq} {fn}", d)
        for i, (value, d) in enumerate(r.outputs):
            if d is not None:  # an output lock-step could not measure gets no number (LOCKSTEP_OUTPUT)
                metric(f"digits of output {i} ({value})", d)
        parting = f"copies part at call #{r.first_parting[0]} ({r.first_parting[1]})" if r.first_parting \
            else "copies never part"
        unmeasured = sum(d is None for _, d in r.outputs)
        events.append(dict(kind="sensitivity", app_rank=r.rank, copy=None,
                           message=f"fewest digits {r.min_digits:.1f}; {parting}; {r.behaviour}"
                           + (f"; {unmeasured} printed values not measured ({LOCKSTEP_OUTPUT})"
                              if unmeasured else "")))
    return events, metrics


def sensitivity_command(args: Any, run: Any) -> int:
    """Significant digits per call and per output, per rank, of a perturbed run (`mpiecho sensitivity`)."""
    import sys

    from echo.runformat import runfiles

    run_dir = Path(run.run_dir)
    if not runfiles.has_plan(run_dir):  # the digits come from the run's files, which the store does not hold
        print(f"mpiecho: the files of run {run.id} are gone (no plan in {run_dir}): sensitivity reads the copies' "
              "records there; run it where the run's directory is", file=sys.stderr)
        return 2
    if runfiles.plan_value(run_dir, "perturb") is None:
        print(f"mpiecho: run {run.id} was not perturbed (echorun --perturb rounding ...)", file=sys.stderr)
        return 2
    worlds = runfiles.plan_value(run_dir, "worlds") or "lockstep"
    print(f"run {run.id}")
    print(describe(analyse(run_dir), worlds))
    return 0


def sensitivity_suite(run_dir: Path, program: str, seconds: float, min_digits: float) -> Any:
    """A case per rank: its copies' results keep at least `min_digits` significant digits at every call."""
    from echo.runformat import junit
    from echo.runformat.runfiles import plan_procs

    reps = {app: real for real, app, copy, _ in plan_procs(run_dir) if copy == 0}
    suite = junit.suite(f"echo sensitivity {Path(program).name}", seconds)
    for r in analyse(run_dir):
        worst = min(r.calls, key=lambda c: c[2], default=None)
        name = f"rank {r.rank} keeps at least {min_digits:g} significant digits"
        failure = None
        detail = f"fewest digits {r.min_digits:.1f}" + (f" at call #{worst[0]} ({worst[1]})" if worst else "")
        if r.min_digits < min_digits:
            failure = f"{detail}, below {min_digits:g}"
        junit.case(suite, "echo.sensitivity", name, junit.process_seconds(run_dir, reps.get(r.rank, -1)), failure,
                   detail, "" if failure else detail)
    return suite


def junit_suite(opts: Any, run_dir: Path, program: str, seconds: float) -> Any:
    """`echorun --junit`'s sensitivity suite of a perturbed run (None when the run was not perturbed)."""
    return sensitivity_suite(run_dir, program, seconds, opts.min_digits) if opts.perturb else None


def ingest_rows(run_dir: Path, procs: list[tuple[int, int, int, str]], meta: dict) -> tuple[list[dict], list[dict]]:
    """The store's rows of a perturbed run (echo/store/ingest.py): sensitivity's events and digits."""
    from echo.runformat.runfiles import plan_value

    return sensitivity_rows(run_dir) if plan_value(run_dir, "perturb") else ([], [])


def run_values(run_dir: Path) -> dict[str, str | None]:
    """The run's value "perturbation": what varied the copies and how their worlds ran, None if nothing did."""
    from echo.runformat.runfiles import plan_value

    how = plan_value(run_dir, "perturb")
    return {"perturbation": label(how, plan_value(run_dir, "worlds") or "lockstep") if how else None}


def after_job(opts: Any, run_dir: Path) -> list[str]:
    """What echorun says of a perturbed run when it ends (echo/launch.py): the digits the copies agree on."""
    if not opts.perturb:
        return []
    from echo.runformat.runfiles import plan_value

    return describe(analyse(run_dir), plan_value(run_dir, "worlds") or "lockstep").splitlines()


from echo.collectors.perturb import pages  # noqa: E402  (its section reads this module's functions, defined above)
from echo.collectors.role import Command, CPart, Pages, Role, Section  # noqa: E402

ROLE = Role(
    name="perturb",
    description="a variation per copy (rounding, noise, jitter) and significant digits across copies",
    # echorun's options (echo/cli.py adds them); each dest is a field of Options
    group="perturbation and sensitivity (how much the answer depends on rounding, noise, timing)",
    options=(
        {"flags": ["--perturb"], "metavar": "SPEC", "help": "rounding | noise:ulp=1,seed=7 | jitter:max=50us[,seed=S]"},
        {"flags": ["--worlds"], "choices": ("lockstep", "independent"),
         "help": "lockstep (default): copies take what copy 0 received; independent: copy k of every rank forms "
                 "world k and communicates for real (jitter always)"},
        {"flags": ["--perturb-rep"], "action": "store_true", "help": "perturb copy 0 as well"},
        {"flags": ["--min-digits"], "type": float, "default": 3.0, "metavar": "D",
         "help": "with --junit: a rank whose results keep fewer than D significant digits fails (default 3)"},
    ),
    flag="--perturb", listed=2, precedence=2,
    assign=assign, lines=plan_lines, given=given, junit=given, junit_suite=junit_suite,
    junit_says="sensitivity's significant digits (--perturb: a case per rank)",
    tagged_output=given,
    ingest=ingest_rows, run_values=run_values, after_job=after_job,
    events={"sensitivity": {"order": 7}},
    slow_roles=("jitter",),  # a jittered copy is slow by design
    # its run value "perturbation" says the copies differ on purpose (echo/collectors/roles.py's varied)
    varied={"value": "perturbation", "word": "perturbed",
            "verdict": "Copies were perturbed on purpose ({value}): they differ by design and were not compared "
                       "for corruption; the significant digits below say how much they agree",
            "report": "varied on purpose ({value}): not compared for corruption (mpiecho sensitivity)"},
    # `mpiecho sensitivity [RUN]` (echo/cli.py adds it, with the run and --db)
    commands=(Command("sensitivity", "significant digits per call and output of a perturbed run", sensitivity_command,
                      takes_run=True),),
    # the run page: its digits chart (pages.py and run.html beside this file), drawn from the digits per call, which
    # the table of results leaves out; its other digits are rows of that table, under this label
    pages=Pages(run=(Section("run.html", pages.run_context),), results="sensitivity", apart=("digits at call",)),
    # its C part (echo/build.py): needs nothing but libm, so every library has it
    c=CPart(sources=("echo_perturb.c",), init="echo_perturb_init", libs=("-lm",)),
)
