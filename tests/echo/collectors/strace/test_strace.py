"""strace on copies, with the real strace: a role that runs copies under a tool is one folder (echo/collectors/strace/)
and one registry line; the traced copies' system calls are kept with the run, counted in the store, said by echorun
and `mpiecho report`, and uploaded."""

import io
import re
import subprocess
import tarfile

import pytest

from echo.collectors import strace as st
from echo.families import OPEN_MPI_5
from echo.plan import Machine, Options, make_plan
from echo.runformat import runfiles
from tests.conftest import VENV_BIN, echorun, lines_by_rank, mpirun_native


def machine(**tools: str | None) -> Machine:
    return Machine("/x/mpirun", OPEN_MPI_5, 2, True, "/l.so", **{"valgrind": "/usr/bin/valgrind",
                                                                  "strace": "/usr/bin/strace", **tools},
                   exec_wrapper="/e.sh")


def test_the_traced_copies_start_under_strace():
    p = make_plan(Options(program=("./a",), nranks=2, clones="2", strace="1", run_dir="/r"), machine())
    assert [q.role for q in p.procs] == ["representative", "representative", "strace", "strace"]
    assert p.argv[-2:] == ["/e.sh", "./a"]
    wraps = [line for line in p.text.splitlines() if line.startswith("wrap ")]
    assert wraps == [f"wrap {real} env -u LD_PRELOAD /usr/bin/strace -f -o /r/strace/rank{app}.copy1.strace "
                     f"-E LD_PRELOAD=/l.so -E ECHO_RANK_PID" for real, app in ((2, 0), (3, 1))]
    assert "tool_dir strace" in p.text.splitlines()


@pytest.mark.parametrize(("options", "tools", "message"), [
    ({"strace": "2"}, {}, "--strace 2: rank 0 has no copy 2 .*; raise --clones to 3"),
    ({"strace": "one"}, {}, "--strace one: expected copy numbers"),
    ({"strace": "1"}, {"strace": None}, r"strace is not installed \(apt-get install strace\)"),
    ({"strace": "1", "valgrind": "memcheck"}, {},
     "rank 0 copy 1 is given both --valgrind and --strace: a copy runs under one tool"),
])
def test_bad_strace_options_say_what_to_do(options, tools, message):
    with pytest.raises(ValueError, match=message):
        make_plan(Options(program=("./a",), nranks=2, clones="2", run_dir="/r", **options), machine(**tools))


def test_echorun_refuses_a_copy_that_is_not_there(tmp_path):
    r = echorun(["-n", "2", "--clones", "2", "--strace", "3", "./a"], tmp_path / "run")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert re.search(r"--strace 3: rank 0 has no copy 3 .*raise --clones to 4", r.stderr)
    assert not (tmp_path / "run").exists()


def test_traced_copies_keep_their_system_calls(mpi, programs, tmp_path):
    native = lines_by_rank(mpirun_native(mpi, 2, programs["partial_sums"]).stdout)
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    run_dir = tmp_path / "run"
    r = echorun(["--db", db, "-n", "2", "--clones", "2", "--strace", "1", *programs["partial_sums"]], run_dir)
    assert r.returncode == 0, r.stderr
    assert lines_by_rank(r.stdout) == native, "the program's output is unchanged"
    report = subprocess.run([str(VENV_BIN / "mpiecho"), "report", "--db", db], capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    for rank in (0, 1):
        trace = (run_dir / "strace" / f"rank{rank}.copy1.strace").read_text()
        printed = next(line for line in native[rank] if "partial sum" in line)
        # the line copy 1 printed, as the system call that wrote it (its output goes to its own file: fd 1 still)
        assert re.search(rf'^\d+ +write\(1, "{re.escape(printed)}\\n', trace, re.MULTILINE), printed
        # the file it kept its partial sum in, opened to write (echo's file view gives the copy its own path)
        assert re.search(rf'^\d+ +openat\(AT_FDCWD, "[^"]*partial_sums\.{rank}\.txt", O_WRONLY\|O_CREAT', trace,
                         re.MULTILINE)
        assert not (run_dir / "strace" / f"rank{rank}.copy0.strace").exists(), "the representative is not traced"
        writes = len(re.findall(r"^\d+ +write\(", trace, re.MULTILINE))
        calls, failed = st.count_calls(run_dir / "strace" / f"rank{rank}.copy1.strace")
        assert calls["write"] == writes and calls["openat"] > 0
        said = f"rank {rank} copy 1: {sum(calls.values())} system calls ({failed} failed)"
        assert f"strace {said}" in r.stderr  # echorun's words at the end of the run
        assert f"  {said}" in report.stdout  # the store's rows, in the report
    from sqlalchemy import select
    from sqlalchemy.orm import Session

    from echo.store.db import open_store
    from echo.store.models import Metric

    with Session(open_store(db)) as s:
        stored = {(m.app_rank, m.copy): m.value for m in s.scalars(select(Metric).where(
            Metric.name == "strace calls of write"))}
    assert set(stored) == {(0, 1), (1, 1)} and all(v >= 1 for v in stored.values())
    with tarfile.open(fileobj=io.BytesIO(runfiles.pack(run_dir)), mode="r:gz") as tar:
        names = tar.getnames()
    assert {"strace/rank0.copy1.strace", "strace/rank1.copy1.strace"} <= set(names), "uploaded with the run"
