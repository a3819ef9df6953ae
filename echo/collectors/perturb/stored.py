"""The perturbation's results after the job: the store's rows, `mpiecho sensitivity`, the JUnit suite and
echorun's words."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from echo.collectors.perturb.sensitivity import LOCKSTEP_OUTPUT, analyse, describe


def label(plan_value: str, worlds: str) -> str:
    """A plan's "perturb KIND A B" line as users write it, with its worlds: "noise:ulp=1,seed=7 (lockstep)"."""
    kind, a, b = (plan_value.split() + ["0", "0"])[:3]
    args = {"noise": f":ulp={float(a):g},seed={b}", "jitter": f":max={a}us,seed={b}"}.get(kind, "")
    return f"{kind}{args} ({worlds})"


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
