"""--format otf2, read back by OTF2's own reader (the otf2 package's, over the OTF2 C library it carries)."""

import pytest

from tests.conftest import need_papi_counting
from tests.echo.export.helpers import calls_per_track, export, mpiecho

otf2 = pytest.importorskip("otf2", reason="the otf2 package is in the test extra (pip install -e '.[test]')")


def test_otf2_archive_read_by_otf2(exported_run, tmp_path):
    db, run_id, rows = exported_run
    out = tmp_path / "trace"
    export(db, run_id, "otf2", out)
    roles = {(p.app_rank, p.copy): p.role for p in rows["Proc"]}
    expected = calls_per_track(rows)
    with otf2.reader.open(str(out / "traces.otf2")) as trace:
        assert trace.definitions.clock_properties.timer_resolution == 1_000_000_000
        locs = {loc.name: loc for loc in trace.definitions.locations}
        assert set(locs) == {f"rank {r} copy {c}" for r, c in roles}  # locations = rank x copy
        props = {(p.location.name, p.name): p.value for p in trace.definitions.location_properties}
        for (rank, copy), role in roles.items():
            assert props[f"rank {rank} copy {copy}", "echo::role"] == role
        regions = {reg.name: reg for reg in trace.definitions.regions}
        assert regions["MPI_Sendrecv"].paradigm == otf2.Paradigm.MPI
        open_calls: dict[str, list] = {}
        got: dict[tuple[int, int], dict[str, int]] = {}
        last: dict[str, int] = {}
        sendrecv = []
        for loc, ev in trace.events:
            assert ev.time >= last.get(loc.name, 0)  # each location's events in time order
            last[loc.name] = ev.time
            if isinstance(ev, otf2.events.Enter):
                open_calls.setdefault(loc.name, []).append(ev)
            elif isinstance(ev, otf2.events.Leave):
                enter = open_calls[loc.name].pop()
                assert enter.region.name == ev.region.name
                rank, copy = (int(w) for w in loc.name.split()[1::2])
                per = got.setdefault((rank, copy), {})
                per[ev.region.name] = per.get(ev.region.name, 0) + 1
                if ev.region.name == "MPI_Sendrecv" and loc.name == "rank 1 copy 0":
                    sendrecv.append({a.name: v for a, v in enter.attributes.items()})
        assert all(not stack for stack in open_calls.values())  # every enter left
        assert got == expected
        assert sendrecv and all(a["communicator"] == "MPI_COMM_WORLD" and a["peer"] == 0 and a["bytes"] > 0
                                and "tag" in a for a in sendrecv)
        need_papi_counting()
        assert props["rank 0 copy 1", "echo::counter_set"] == "perf::TASK-CLOCK,perf::CONTEXT-SWITCHES"


def test_otf2_needs_a_new_directory(exported_run, tmp_path):
    db, run_id, _ = exported_run
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("mine")
    r = mpiecho("export", run_id, "--db", db, "--format", "otf2", "-o", str(tmp_path / "full"))
    assert r.returncode == 2 and "is not an empty directory" in r.stderr
    r = mpiecho("export", run_id, "--db", db, "--format", "otf2")
    assert r.returncode == 2 and "--output DIR" in r.stderr
