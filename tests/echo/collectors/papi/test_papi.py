"""PAPI collector with the real system PAPI. In a VM without a hardware PMU the
perf:: software events count for real and hardware presets must fail with PAPI's
own reason; where PAPI counts nothing at all (its perf_event component disabled,
e.g. by a libpfm4 that does not know the CPU), echo must say so with PAPI's reason,
and the tests of counted values skip saying why."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from echo.collectors.papi import probe
from echo.collectors.papi.stored import merged_counters
from echo.runformat.records import read_run
from echo.store.db import open_store
from tests.conftest import PAPI_SETS as SETS
from tests.conftest import echorun, need_papi_counting, papi_cannot_count

BIN = Path(sys.executable).parent


def test_events_lists_what_counts_and_why_not():
    need_papi_counting()
    events = {name: status for _, name, status, _ in probe.available_events()}
    assert events["perf::TASK-CLOCK"] == "ok"
    presets = [s for k, _, s, _ in probe.available_events() if k == "preset"]
    assert presets and all(s for s in presets), "every preset is either ok or has PAPI's reason"
    r = subprocess.run([str(BIN / "mpiecho"), "events"], capture_output=True, text=True)
    assert r.returncode == 0 and "perf::TASK-CLOCK" in r.stdout and "one run counts them all with --clones" in r.stdout


def test_packing_with_an_anchor_in_every_set():
    need_papi_counting()
    p = probe.plan(SETS)
    assert p.sets == [["perf::TASK-CLOCK", "perf::PAGE-FAULTS"], ["perf::TASK-CLOCK", "perf::CONTEXT-SWITCHES"]]
    assert p.anchor == "perf::TASK-CLOCK"
    # a name PAPI does not know is a mistake to mend, not an event to leave out: named, with close names
    with pytest.raises(probe.PapiError, match=r"PAPI knows no event perf::TASK-CLOK here \(did you mean "
                                             r"perf::TASK-CLOCK.*mpiecho events"):
        probe.plan("perf::PAGE-FAULTS,perf::TASK-CLOK")


def test_a_preset_that_cannot_be_added_is_named_with_papis_reason():
    need_papi_counting()
    status = {name: s for _, name, s, _ in probe.available_events()}
    if status.get("PAPI_TOT_INS") == "ok":
        pytest.skip("this machine has a hardware PMU: PAPI_TOT_INS counts here")
    p = probe.plan("PAPI_TOT_INS,perf::TASK-CLOCK")
    assert p.unavailable == [("PAPI_TOT_INS", status["PAPI_TOT_INS"])]
    assert p.sets == [["perf::TASK-CLOCK"]], "the run goes on with what can be counted"
    with pytest.raises(probe.PapiError, match=r"no event asked for can be counted here \(PAPI_TOT_INS: .*"
                                             r"mpiecho events"):
        probe.check_copies(probe.plan("PAPI_TOT_INS"), [2, 2])


def test_more_sets_than_copies_says_how_to_get_them_all():
    need_papi_counting()
    with pytest.raises(probe.PapiError, match=r"2 counter sets need 2 copies .*\(--clones 2\).*--papi-sets "
                                             r"'perf::TASK-CLOCK,perf::CONTEXT-SWITCHES'"):
        probe.check_copies(probe.plan(SETS), [1, 1])


def test_each_copy_counts_its_set_and_the_report_merges_them(programs, tmp_path):
    need_papi_counting()
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    r = echorun(["--db", db, "--papi-sets", SETS + ";PAPI_TOT_INS", "-n", "2", "--clones", "2",
                 *programs["sdc_loop"]], tmp_path / "run")
    if "PAPI_TOT_INS" not in r.stderr:  # a machine with a PMU makes 3 sets of this: not this test's case
        pytest.skip("PAPI_TOT_INS is countable here")
    assert r.returncode == 0, r.stderr
    files = {(f.app_rank, f.copy): f for f in read_run(tmp_path / "run")}
    assert files[0, 0].slot_names == ["perf::TASK-CLOCK>", "perf::TASK-CLOCK@", "perf::PAGE-FAULTS>",
                                      "perf::PAGE-FAULTS@"]
    assert files[1, 1].slot_names[2:] == ["perf::CONTEXT-SWITCHES>", "perf::CONTEXT-SWITCHES@"]
    assert files[0, 1].role == "papi-set-1"
    clock = files[0, 0].records["slot"][:, 1]
    assert np.count_nonzero(clock) > len(clock) // 2, "task clock advances inside MPI calls"
    with Session(open_store(db)) as s:
        from echo.store.models import Event, Metric, Run

        run = s.scalars(select(Run)).one()
        counters = merged_counters(s, run.id)
        assert sorted(counters) == [0, 1]
        c = counters[1]
        assert set(c["events"]) == {"perf::TASK-CLOCK", "perf::PAGE-FAULTS", "perf::CONTEXT-SWITCHES"}
        assert c["events"]["perf::CONTEXT-SWITCHES"]["copy"] == 1 and c["events"]["perf::PAGE-FAULTS"]["copy"] == 0
        tc = c["events"]["perf::TASK-CLOCK"]
        assert tc["total"] > 0 and tc["compute"] + tc["mpi"] <= tc["total"] * 1.01
        assert "perf::TASK-CLOCK" in c["anchors"] and c["anchors"]["perf::TASK-CLOCK"] >= 0
        assert c["read_ns"] and all(v > 0 for v in c["read_ns"])
        # the perf software clocks count nanoseconds, the other events occurrences: every stored number keeps its unit
        units = {(m.name.split()[1], m.unit) for m in s.scalars(select(Metric).where(Metric.name.startswith("papi ")))
                 if m.name != "papi read"}
        assert units == {("perf::TASK-CLOCK", "ns"), ("perf::PAGE-FAULTS", "count"),
                         ("perf::CONTEXT-SWITCHES", "count")}
        assert {ev: v["unit"] for ev, v in c["events"].items()} == {
            "perf::TASK-CLOCK": "ns", "perf::PAGE-FAULTS": "count", "perf::CONTEXT-SWITCHES": "count"}
        missing = s.scalars(select(Event).where(Event.kind == "papi-unavailable")).all()
        assert any("PAPI_TOT_INS" in e.message for e in missing)
    rep = subprocess.run([str(BIN / "mpiecho"), "report", "--db", db], capture_output=True, text=True).stdout
    assert "counters (each event from the copy that counted it" in rep
    assert "anchor perf::TASK-CLOCK: counted by copies [0, 1]" in rep
    rows = [line.split() for line in rep.splitlines() if line.startswith(("0  ", "1  ")) and "perf::" in line]
    assert {(row[1], row[2], row[3]) for row in rows} == {
        ("perf::TASK-CLOCK", "0", "ns"), ("perf::PAGE-FAULTS", "0", "count"), ("perf::CONTEXT-SWITCHES", "1", "count")}
    assert "papi-unavailable: PAPI cannot count PAPI_TOT_INS" in rep


def test_papi_sets_beyond_the_copies_stop_before_the_run(programs, tmp_path):
    need_papi_counting()
    r = echorun(["--papi-sets", SETS, "-n", "1", "--clones", "1", *programs["coll"]], tmp_path / "run")
    assert r.returncode == 2 and "2 counter sets need 2 copies" in r.stderr
    assert not (tmp_path / "run").exists()


def test_a_machine_where_papi_counts_nothing_is_told_why(programs, tmp_path):
    """Where PAPI disabled the component that counts (here: libpfm4 knows no PMU of this CPU), every way of asking
    for counters ends before the run in one line with PAPI's own reason, and creates nothing."""
    why = papi_cannot_count()
    if why is None:
        pytest.skip("PAPI counts perf:: events on this machine")
    assert dict(probe.disabled_components()).get("perf_event"), "PAPI's reason for the disabled component is read"
    for spec in ("all", "presets", "perf::TASK-CLOCK"):
        r = echorun(["--papi-sets", spec, "-n", "1", "--clones", "2", *programs["coll"]], tmp_path / spec)
        assert r.returncode == 2 and "perf_event" in r.stderr and why in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
        assert not (tmp_path / spec).exists()
    r = subprocess.run([str(BIN / "mpiecho"), "events"], capture_output=True, text=True)
    assert r.returncode == 2 and why in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
