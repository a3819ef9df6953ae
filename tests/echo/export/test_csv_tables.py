"""--format csv, read back by Python's csv module as a spreadsheet would: a header row, then the values."""

import csv

import pytest

from tests.conftest import need_papi_counting
from tests.echo.export.helpers import export


def test_csv_calls_and_counters(exported_run, tmp_path):
    db, run_id, rows = exported_run
    out = tmp_path / "csv"
    export(db, run_id, "csv", out)
    with open(out / "calls.csv", newline="") as f:
        calls = list(csv.DictReader(f))
    assert len(calls) == len(rows["CallSummary"])
    want = {(c.app_rank, c.copy, c.function): c for c in rows["CallSummary"]}
    roles = {(p.app_rank, p.copy): p.role for p in rows["Proc"]}
    for row in calls:
        c = want[int(row["rank"]), int(row["copy"]), row["function"]]
        assert row["run"] == run_id and row["role"] == roles[c.app_rank, c.copy]
        assert int(row["calls"]) == c.calls and int(row["bytes"]) == c.bytes
        assert float(row["time_total_s"]) == c.time_total
        assert float(row["time_mean_s"]) == pytest.approx(c.time_total / c.calls)
    with open(out / "counters.csv", newline="") as f:
        counters = list(csv.DictReader(f))
    papi = {(m.app_rank, m.copy, m.name): (m.value, m.unit) for m in rows["Metric"] if m.name.startswith("papi ")
            and m.name != "papi read"}
    assert len(counters) == len(papi)
    need_papi_counting()
    for row in counters:
        suffix = {"total": "", "function": f" in {row['function']}"}.get(row["scope"], f" {row['scope']}")
        value, unit = papi[int(row["rank"]), int(row["copy"]), f"papi {row['event']}{suffix}"]
        assert float(row["value"]) == value and row["unit"] == (unit or "count")
    assert {r["event"] for r in counters if r["copy"] == "1"} == {"perf::TASK-CLOCK", "perf::CONTEXT-SWITCHES"}
