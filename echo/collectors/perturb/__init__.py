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

This module: the options, the copies' variations and the plan lines, and the role's declaration; sensitivity.py:
the digits computed from the records and the output; stored.py: the store's rows, `mpiecho sensitivity`, the JUnit
suite; pages.py: the run page's chart.
"""

from __future__ import annotations

import re
from typing import Any

from echo.runformat.spec import parse_spec


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


from echo.collectors.perturb import pages  # noqa: E402  (its section reads this module's functions, defined above)
from echo.collectors.perturb.stored import after_job, ingest_rows, junit_suite, run_values, sensitivity_command  # noqa: E402
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
