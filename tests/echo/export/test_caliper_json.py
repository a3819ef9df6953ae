"""--format thicket, read back by Thicket (llnl-thicket, over Hatchet's Caliper reader)."""

import math
from pathlib import Path

import pytest

from tests.conftest import need_papi_counting
from tests.echo.export.helpers import calls_per_track, export

thicket = pytest.importorskip("thicket", reason="llnl-thicket is in the test extra (pip install -e '.[test]')")


def test_thicket_reads_a_profile_per_copy(exported_run, tmp_path):
    db, run_id, rows = exported_run
    out = tmp_path / "profiles"
    export(db, run_id, "thicket", out)
    files = sorted(str(p) for p in Path(out).glob("*.json"))
    tk = thicket.Thicket.from_caliper(files, disable_tqdm=True)
    meta = tk.metadata.reset_index()
    roles = {(p.app_rank, p.copy): p.role for p in rows["Proc"]}
    assert {(int(m.rank), int(m.copy)): m.role for m in meta.itertuples()} == roles
    assert set(meta["run"]) == {run_id} and set(meta["program"]) == {"sdc_loop"}
    profile_of = {row.profile: (int(row.rank), int(row.copy)) for row in meta.itertuples()}
    df = tk.dataframe.reset_index()
    df["track"] = df["profile"].map(profile_of)
    expected = calls_per_track(rows)
    summaries = {(c.app_rank, c.copy, c.function): c for c in rows["CallSummary"]}
    for track, calls in expected.items():
        mine = df[df["track"] == track]
        for fn, n in calls.items():
            node = mine[mine["name"] == fn].iloc[0]
            assert node["count"] == n
            assert node["time"] == pytest.approx(summaries[(*track, fn)].time_total)
    need_papi_counting()
    sets = {(int(m.rank), int(m.copy)): m.counter_set for m in meta.itertuples()}
    assert sets[0, 1] == "perf::TASK-CLOCK,perf::CONTEXT-SWITCHES"
    assert sets[1, 0] == "perf::TASK-CLOCK,perf::PAGE-FAULTS"
    # counters: each copy has its own set's events; an event a copy did not count is missing (NaN), never 0
    papi = {(m.app_rank, m.copy, m.name): m.value for m in rows["Metric"]}
    allreduce = df[df["name"] == "MPI_Allreduce"].set_index("track")
    faults = papi[0, 0, "papi perf::PAGE-FAULTS in MPI_Allreduce"]
    assert allreduce.loc[[(0, 0)], "papi.perf::PAGE-FAULTS"].iloc[0] == faults
    assert math.isnan(allreduce.loc[[(0, 1)], "papi.perf::PAGE-FAULTS"].iloc[0])
    assert math.isnan(allreduce.loc[[(0, 0)], "papi.perf::CONTEXT-SWITCHES"].iloc[0])
    compute = df[df["name"] == "compute (between MPI calls)"].set_index("track")
    assert compute.loc[[(1, 1)], "papi.perf::TASK-CLOCK"].iloc[0] == papi[1, 1, "papi perf::TASK-CLOCK compute"]
