"""Valgrind on copies, with the real valgrind."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from echo.collectors import valgrind as vg
from echo.collectors.valgrind import outputs
from echo.families import OPEN_MPI_5
from echo.plan import Machine, Options, make_plan
from tests.conftest import echorun, lines_by_rank, mpirun_native


def test_tool_specs():
    assert vg.parse_tools("memcheck", [2, 2], None) == {(0, 1): "memcheck", (1, 1): "memcheck"}
    assert vg.parse_tools("1:memcheck,2:cachegrind", [3, 3], "1") == {(1, 1): "memcheck", (1, 2): "cachegrind"}
    assert vg.parse_slice("callgrind:2", [3, 3], None) == ("callgrind", 2, {(0, 1): 0, (0, 2): 1, (1, 1): 0,
                                                                           (1, 2): 1})


@pytest.mark.parametrize(("call", "message"), [
    (lambda: vg.parse_tools("memchek", [2], None), "unknown tool 'memchek'; Valgrind's tools are memcheck"),
    (lambda: vg.parse_tools("2:memcheck", [2, 2], None), "rank 0 has no copy 2 .* raise --clones to 3"),
    (lambda: vg.parse_tools("memcheck", [2, 2], "0,5"), "rank 5 does not exist"),
    (lambda: vg.parse_slice("callgrind:4", [3, 3], None), "4 slices need 5 copies of rank 0 .* --clones 5"),
    (lambda: vg.parse_slice("memcheck:2", [3], None), "memcheck builds its shadow state from the start"),
    (lambda: vg.parse_slice("callgrind:0", [3], None), "K >= 1"),
])
def test_bad_specs_say_what_to_do(call, message):
    with pytest.raises(vg.ValgrindError, match=message):
        call()


def test_missing_valgrind_is_a_clear_error():
    m = Machine("/x/mpirun", OPEN_MPI_5, 2, True, "/l.so", valgrind=None, exec_wrapper="/e.sh")
    with pytest.raises(vg.ValgrindError, match="valgrind is not installed"):
        make_plan(Options(program=("./a",), nranks=1, clones="2", valgrind="memcheck"), m)


def test_the_representative_stays_native(tmp_path):
    m = Machine("/x/mpirun", OPEN_MPI_5, 2, True, "/l.so", valgrind="/usr/bin/valgrind", exec_wrapper="/e.sh")
    p = make_plan(Options(program=("./a",), nranks=2, clones="2", valgrind="memcheck", run_dir="/r"), m)
    assert [q.role for q in p.procs] == ["representative", "representative", "memcheck", "memcheck"]
    assert p.argv[-2:] == ["/e.sh", "./a"]
    lines = [line for line in p.text.splitlines() if line.startswith("wrap ")]
    assert lines[0].startswith("wrap 2 /usr/bin/valgrind --tool=memcheck")
    assert "tool_dir valgrind .log" in p.text.splitlines()
    assert "--xml-file=/r/valgrind/rank0.copy1.memcheck.xml" in lines[0]


def test_memcheck_copies_catch_the_bad_rank(mpi, programs, tmp_path):
    native = lines_by_rank(mpirun_native(mpi, 2, programs["memerror"]).stdout)
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    r = echorun(["--db", db, "-n", "2", "--clones", "2", "--valgrind", "memcheck", *programs["memerror"]],
                tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert lines_by_rank(r.stdout) == native, "the program's output is unchanged"
    prog = programs["memerror"][0]
    bad = outputs.parse_memcheck(tmp_path / "run" / "valgrind" / "rank1.copy1.memcheck.xml", prog)
    clean = outputs.parse_memcheck(tmp_path / "run" / "valgrind" / "rank0.copy1.memcheck.xml", prog)
    mine = [e for e in bad if e.in_program]
    assert any(e.kind == "InvalidRead" and e.stack[0].startswith("peek (memerror.c:") for e in mine)
    assert any(e.kind == "Leak_DefinitelyLost" and e.bytes == 100 for e in mine)
    assert [e for e in clean if e.in_program] == []
    # the MPI runtime's own errors are suppressed by default (35 of 37 errors here without them)
    xml = (tmp_path / "run" / "valgrind" / "rank1.copy1.memcheck.xml").read_text()
    used = set(re.findall(r"<name>(echo/[^<]+)</name>", xml))
    assert {"echo/opal-leaks", "echo/pmix-leaks"} <= used
    if Path(mpi.mpicc).parent == Path(sys.executable).parent:  # the Open MPI they were written for: none left
        assert [e for e in bad + clean if not e.in_program] == []
    assert not (tmp_path / "run" / "valgrind" / "rank0.copy0.memcheck.xml").exists()
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from echo.store.db import open_store
    from echo.store.models import Event

    with Session(open_store(db)) as s:
        events = s.scalars(select(Event).where(Event.kind == "memcheck")).all()
        assert {(e.app_rank, e.copy) for e in events} == {(1, 1)}
        assert any("Invalid read of size 4 at peek" in e.message for e in events)


def test_only_some_ranks(programs, tmp_path):
    r = echorun(["--no-store", "-n", "2", "--clones", "2", "--valgrind", "memcheck", "--ranks", "1",
                 *programs["memerror"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (tmp_path / "run" / "valgrind").glob("*.xml")) == ["rank1.copy1.memcheck.xml"]


def test_callgrind_slices_merge_to_the_whole_profile(programs, tmp_path):
    """K=2 slices of the run, merged, against one copy instrumenting every epoch of the same window: the
    program's own functions must match exactly (tolerance 0: they execute the same instructions). Code inside
    the MPI library is not compared: its busy polling runs as many instructions as the wait lasts."""
    prog = programs["sdc_loop"][0]
    sliced = echorun(["--db", f"sqlite:///{tmp_path / 'echo.db'}", "-n", "2", "--clones", "3", "--valgrind-slice",
                      "callgrind:2", "--slice-calls", "5", *programs["sdc_loop"]], tmp_path / "sliced")
    whole = echorun(["--no-store", "-n", "2", "--clones", "2", "--valgrind-slice", "callgrind:1", "--slice-calls", "5",
                     *programs["sdc_loop"]], tmp_path / "whole")
    assert sliced.returncode == 0 and whole.returncode == 0, sliced.stderr + whole.stderr

    def profile(path):
        _, costs = outputs.parse_profile(path)
        own = {}
        for (ob, fn), c in costs.items():
            if ob == prog:
                own[fn] = own.get(fn, 0) + c[0]
        return own, sum(c[0] for c in costs.values())

    for rank in (0, 1):
        parts = [profile(tmp_path / "sliced" / "valgrind" / f"rank{rank}.copy{c}.callgrind.out") for c in (1, 2)]
        full_own, full_total = profile(tmp_path / "whole" / "valgrind" / f"rank{rank}.copy1.callgrind.out")
        merged = {}
        for own, _ in parts:
            for fn, v in own.items():
                merged[fn] = merged.get(fn, 0) + v
        assert all(own for own, _ in parts), "each slice instrumented part of the program"
        assert merged == full_own
        assert sum(t for _, t in parts) > sum(merged.values()) and full_total > sum(full_own.values())
        # the merged file, as Valgrind's own reader sees it: its totals and every function's cost are the slices'
        one = tmp_path / "sliced" / "valgrind" / f"callgrind.out.rank{rank}"
        slices = [annotate(tmp_path / "sliced" / "valgrind" / f"rank{rank}.copy{c}.callgrind.out") for c in (1, 2)]
        total, per_fn = annotate(one)
        assert total == sum(t for t, _ in slices) > 0
        summed: dict[str, int] = {}
        for _, fns in slices:
            for fn, v in fns.items():
                summed[fn] = summed.get(fn, 0) + v
        assert per_fn == summed and any(fn.startswith("tests/programs/sdc_loop.c:main") for fn in per_fn)


def annotate(path: Path) -> tuple[int, dict[str, int]]:
    """(program total, cost per "file:function [object]") of a callgrind profile, read by callgrind_annotate."""
    argv = ["callgrind_annotate", "--threshold=100", "--inclusive=no", "--auto=no", str(path)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    total, fns = 0, {}
    for line in out.splitlines():
        m = re.match(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$", line)
        if m:
            value = int(m.group(1).replace(",", ""))
            if m.group(2) == "PROGRAM TOTALS":
                total = value
            else:
                fns[m.group(2)] = fns.get(m.group(2), 0) + value
    return total, fns


def test_python_program_under_a_tool(tmp_path):
    code = "from mpi4py import MPI; c = MPI.COMM_WORLD; print(f'r{c.rank}: sum {c.allreduce(c.rank + 1)}')"
    r = echorun(["--no-store", "-n", "1", "--clones", "2", "--valgrind", "massif", sys.executable, "-c", code],
                tmp_path / "run", timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "r0: sum 1"
    out = tmp_path / "run" / "valgrind" / "rank0.copy1.massif.out"
    assert outputs.parse_massif_peak(Path(out)) > 1_000_000, "Python's heap, seen by massif"
