"""JUnit XML of a run for CI dashboards (echorun --junit FILE): one <testsuites> with a suite per check that ran,
each with its time: SDC's (written by echo/sdc.py), then each role's (its Role's junit_suite, made with `suite`
and `case`: memcheck's, a case per copy under memcheck; sensitivity's, a case per rank), put together by
`add_suites` (echo/launch.py)."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

from echo.runformat.records import RecordsError, read
from echo.runformat.runfiles import record_file


def process_seconds(run_dir: Path, real: int) -> float:
    """How long a process ran in MPI's world: first call to last, from its records (0 when it left none)."""
    try:
        f = read(record_file(run_dir, real))
    except (OSError, RecordsError):
        return 0.0
    r = f.records
    return float((r["t_end"][-1] - r["t_start"][0]) * f.seconds_per_tick) if len(r) else 0.0


def suite(name: str, seconds: float) -> ET.Element:
    return ET.Element("testsuite", name=name, tests="0", failures="0", errors="0", time=f"{seconds:.3f}")


def case(suite: ET.Element, classname: str, name: str, seconds: float, failure: str | None = None,
          detail: str = "", out: str = "") -> None:
    case = ET.SubElement(suite, "testcase", classname=classname, name=name, time=f"{seconds:.3f}")
    if failure is not None:
        ET.SubElement(case, "failure", message=failure).text = detail
        suite.set("failures", str(int(suite.get("failures", "0")) + 1))
    if out:
        ET.SubElement(case, "system-out").text = out
    suite.set("tests", str(int(suite.get("tests", "0")) + 1))


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
