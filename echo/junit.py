"""JUnit XML of a run for CI dashboards (echorun --junit FILE): one <testsuites> with a suite per check that ran,
each with its time: SDC's (written by echo/sdc.py), memcheck's (a case per copy under memcheck: errors in the
program fail it) and sensitivity's (a case per rank: fewer significant digits than --min-digits fail it)."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

from collectors import valgrind as vg
from echo.records import RecordsError, read
from echo.runfiles import plan_procs, record_file, valgrind_file


def process_seconds(run_dir: Path, real: int) -> float:
    """How long a process ran in MPI's world: first call to last, from its records (0 when it left none)."""
    try:
        f = read(record_file(run_dir, real))
    except (OSError, RecordsError):
        return 0.0
    r = f.records
    return float((r["t_end"][-1] - r["t_start"][0]) * f.seconds_per_tick) if len(r) else 0.0


def _suite(name: str, seconds: float) -> ET.Element:
    return ET.Element("testsuite", name=name, tests="0", failures="0", errors="0", time=f"{seconds:.3f}")


def _case(suite: ET.Element, classname: str, name: str, seconds: float, failure: str | None = None,
          detail: str = "", out: str = "") -> None:
    case = ET.SubElement(suite, "testcase", classname=classname, name=name, time=f"{seconds:.3f}")
    if failure is not None:
        ET.SubElement(case, "failure", message=failure).text = detail
        suite.set("failures", str(int(suite.get("failures", "0")) + 1))
    if out:
        ET.SubElement(case, "system-out").text = out
    suite.set("tests", str(int(suite.get("tests", "0")) + 1))


def memcheck_suite(run_dir: Path, program: str, seconds: float) -> ET.Element | None:
    """A case per copy that ran under memcheck: failed by errors in the program itself; the errors left in
    libraries (after the suppressions) are counted in its output."""
    procs = [(real, app, copy) for real, app, copy, role in plan_procs(run_dir) if role == "memcheck"]
    if not procs:
        return None
    suite = _suite(f"echo memcheck {Path(program).name}", seconds)
    for real, app, copy in procs:
        xml = valgrind_file(run_dir, app, copy, "memcheck.xml")
        name = f"rank {app} copy {copy}: no memcheck errors in the program"
        took = process_seconds(run_dir, real)
        if not xml.is_file():
            _case(suite, "echo.memcheck", name, took, "memcheck wrote no report (the process did not start under "
                  "Valgrind, or was killed)")
            continue
        errors = vg.parse_memcheck(xml, program)
        mine = [e for e in errors if e.in_program]
        others = len(errors) - len(mine)
        out = f"{others} more in libraries (not the program's)" if others else ""
        detail = "\n".join(f"{e.kind}: {e.what} at {' < '.join(e.stack[:4])}" for e in mine)
        _case(suite, "echo.memcheck", name, took,
              f"{len(mine)} memcheck error{'s' if len(mine) != 1 else ''} in the program" if mine else None,
              detail, out)
    return suite


def sensitivity_suite(run_dir: Path, program: str, seconds: float, min_digits: float) -> ET.Element:
    """A case per rank: its copies' results keep at least `min_digits` significant digits at every call."""
    from collectors import perturb

    reps = {app: real for real, app, copy, _ in plan_procs(run_dir) if copy == 0}
    suite = _suite(f"echo sensitivity {Path(program).name}", seconds)
    for r in perturb.analyse(run_dir):
        worst = min(r.calls, key=lambda c: c[2], default=None)
        name = f"rank {r.rank} keeps at least {min_digits:g} significant digits"
        failure = None
        detail = f"fewest digits {r.min_digits:.1f}" + (f" at call #{worst[0]} ({worst[1]})" if worst else "")
        if r.min_digits < min_digits:
            failure = f"{detail}, below {min_digits:g}"
        _case(suite, "echo.sensitivity", name, process_seconds(run_dir, reps.get(r.rank, -1)), failure, detail,
              "" if failure else detail)
    return suite


def add_suites(path: Path, suites: list[ET.Element], seconds: float, after_sdc: bool) -> None:
    """Write `suites` into the JUnit file at `path` under one <testsuites> with the totals and the job's time;
    `after_sdc`: after the suite SDC's verdict wrote there for this run."""
    root = ET.Element("testsuites", name="echo", time=f"{seconds:.3f}")
    if after_sdc and path.is_file():  # SDC's verdict, written first: kept as the first suite, with the job's time
        old = ET.parse(path).getroot()
        for s in ([old] if old.tag == "testsuite" else list(old)):
            s.set("time", s.get("time") or f"{seconds:.3f}")
            root.append(s)
    for s in suites:
        root.append(s)
    for key in ("tests", "failures", "errors"):
        root.set(key, str(sum(int(s.get(key, "0")) for s in root)))
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def write_run(path: Path, run_dir: Path, program: str, seconds: float, *, sdc: bool, perturbed: bool,
              min_digits: float) -> None:
    """The JUnit file of a finished run: SDC's suite (when --sdc wrote one), memcheck's and sensitivity's."""
    suites = [s for s in (memcheck_suite(run_dir, program, seconds),
                          sensitivity_suite(run_dir, program, seconds, min_digits) if perturbed else None)
              if s is not None]
    add_suites(path, suites, seconds, after_sdc=sdc)
