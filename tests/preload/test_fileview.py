"""The copies' own view of the program's files (docs/fileview.md), under real mpirun: programs that create their
output exclusively, rename checkpoints over the last ones, append to logs and read back what they wrote leave
exactly a native run's files; under --sdc the files each copy wrote are compared with its representative's."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from echo.build import BuildError, detect_mpi
from echo.sdc import EXIT_DIVERGED, read_events
from tests.conftest import VENV_BIN, compile_programs, echorun, lines_by_rank, mpirun_native, run_group

STEPS = 40  # checkpoints renamed, history lines appended: per rank


def tree(root: Path) -> dict[str, bytes | None]:
    """Every file and directory under `root`, by relative name: a file's bytes, None for a directory."""
    out: dict[str, bytes | None] = {}
    for path in sorted(root.rglob("*")):
        out[str(path.relative_to(root))] = None if path.is_dir() else path.read_bytes()
    return out


@pytest.fixture(scope="module")
def native_app(mpi, programs, tmp_path_factory) -> tuple[dict[str, bytes | None], dict[int, list[str]]]:
    where = tmp_path_factory.mktemp("native")
    r = mpirun_native(mpi, 2, [*programs["fileio_app"], str(where), str(STEPS)])
    assert r.returncode == 0, r.stderr
    return tree(where), lines_by_rank(r.stdout)


@pytest.mark.parametrize("copies", [2, 3])
def test_exclusive_create_and_renamed_checkpoints_leave_a_native_runs_files(programs, tmp_path, native_app,
                                                                           copies):
    """O_CREAT|O_EXCL results, a lock file made and removed, a checkpoint renamed over the last one every step and
    read back, a per-rank history counted at the end, rank 0's log: the job succeeds and its files are byte for
    byte a native run's (the log has no doubled line); each copy's files are its own, and the same."""
    files, output = native_app
    work = tmp_path / "work"
    work.mkdir()
    r = echorun(["--no-store", "-n", "2", "--clones", str(copies), *programs["fileio_app"], str(work), str(STEPS)],
                tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert lines_by_rank(r.stdout) == output
    assert tree(work) == files
    assert files["run.log"].decode().count("final energy") == 1
    assert "file view: libc interposition" in r.stderr
    for rank in (0, 1):
        for copy in range(1, copies):  # what the copy wrote, under the run directory, where the real files' are
            own = r.run_dir / "fileview" / f"rank{rank}.copy{copy}" / str(work).lstrip("/")
            assert (own / f"history.{rank}.txt").read_bytes() == files[f"history.{rank}.txt"]
            assert (own / f"state.{rank}.cpt").read_bytes() == files[f"state.{rank}.cpt"]
            assert not (own / f"running.{rank}.lock").exists()


def test_cxx_streams(mpi, programs, tmp_path):
    """std::ofstream rewritten and read back with std::ifstream, rank 0's std::ios::app history: as natively."""
    native, work = tmp_path / "native", tmp_path / "work"
    native.mkdir()
    work.mkdir()
    n = mpirun_native(mpi, 2, [*programs["fileio_cxx"], str(native)])
    assert n.returncode == 0, n.stderr
    r = echorun(["--no-store", "-n", "2", "--clones", "2", "--sdc", "detect", *programs["fileio_cxx"], str(work)],
                tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert lines_by_rank(r.stdout) == lines_by_rank(n.stdout)
    assert tree(work) == tree(native)
    assert "SDC (detect): clean; exit status 0" in r.stderr


def first_difference(a: bytes, b: bytes) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def test_detect_names_the_file_and_its_first_differing_offset(programs, tmp_path):
    """A bit flipped in what rank 1's copy hands to MPI_Allreduce (its local sum, which it also writes to its
    history): the copy's history differs from its representative's, and the verdict names the file and the
    offset; exit status 20."""
    work = tmp_path / "work"
    work.mkdir()
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    r = echorun(["--db", db, "--sdc", "detect", "--inject", "bitflip:rank=1,copy=1,call=8,byte=5,bit=2", "-n", "2",
                 "--clones", "2", *programs["fileio_app"], str(work), str(STEPS)], tmp_path / "run")
    assert r.returncode == EXIT_DIVERGED, r.stderr
    history = work / "history.1.txt"
    (div,) = [e for e in read_events(r.run_dir) if e.function == "file"]
    assert (div.kind, div.app_rank, div.copy) == ("divergence", 1, 1)
    own = r.run_dir / "fileview" / "rank1.copy1" / str(history).lstrip("/")
    at = first_difference(history.read_bytes(), own.read_bytes())
    assert div.first_byte == at and at < len(history.read_bytes())
    assert f"SDC divergence: application rank 1 copy 1: file {history}: first differing offset {at}" in r.stderr
    assert "SDC (detect): diverged; exit status 20" in r.stderr
    report = subprocess.run([str(VENV_BIN / "mpiecho"), "report", "--db", db], capture_output=True, text=True)
    assert "file view libc interposition" in report.stdout, report.stderr
    assert f"divergence: application rank 1 copy 1: file {history}: first differing offset {at}" in report.stdout


def test_vote_on_a_clean_program_leaves_a_native_runs_files(programs, tmp_path, native_app):
    """Three copies that agree: --sdc vote changes nothing, reports nothing and the files are a native run's."""
    files, _ = native_app
    work = tmp_path / "work"
    work.mkdir()
    r = echorun(["--no-store", "--sdc", "vote", "-n", "2", "--clones", "3", *programs["fileio_app"], str(work),
                 str(STEPS)], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert tree(work) == files
    assert "SDC (vote): clean; exit status 0" in r.stderr


def test_vote_without_a_majority_is_a_divergence(programs, tmp_path):
    """A log whose first line holds a random id of the run: each of three copies drew another one, no majority
    agrees, so the vote names the file and the offset of the id and keeps the representative's; exit 20."""
    work = tmp_path / "work"
    work.mkdir()
    r = echorun(["--no-store", "--sdc", "vote", "-n", "1", "--clones", "3", *programs["fileio_runid"], str(work)],
                tmp_path / "run")
    assert r.returncode == EXIT_DIVERGED, r.stderr
    log = work / "md.0.log"
    at = len("log of rank 0, run ")
    events = sorted((e.copy, e.kind, e.first_byte, e.detail) for e in read_events(r.run_dir) if e.function == "file")
    assert [e[:2] for e in events] == [(1, "divergence"), (2, "divergence")]
    ids = [(r.run_dir / "fileview" / f"rank0.copy{c}" / str(log).lstrip("/")).read_text().split()[5] for c in (1, 2)]
    for (_, _, offset, detail), run_id in zip(events, ids, strict=True):
        rep_id = log.read_text().split()[5]
        assert offset == at + first_difference(rep_id.encode(), run_id.encode()), detail
        assert detail == f"file {log}: first differing offset {offset}"
    assert log.read_text().startswith("log of rank 0, run ")


def test_vote_replaces_an_outvoted_representatives_file(programs, tmp_path, native_app):
    """The representative's file outvoted by its two copies (a byte of it corrupted on disk after a real run of
    three copies): the vote puts the majority's file in its place and reports it as corrected."""
    from echo import fileview

    files, _ = native_app
    work = tmp_path / "work"
    work.mkdir()
    r = echorun(["--no-store", "-n", "2", "--clones", "3", *programs["fileio_app"], str(work), str(STEPS)],
                tmp_path / "run")
    assert r.returncode == 0, r.stderr
    history = work / "history.1.txt"
    data = bytearray(history.read_bytes())
    data[30] ^= 0x04
    history.write_bytes(bytes(data))
    (fix,), _ = fileview.compare(r.run_dir, [3, 3], vote=True)
    assert (fix.kind, fix.app_rank, fix.copy, fix.first_byte) == ("corrected", 1, 0, 30)
    assert fix.detail.endswith("the representative's file is replaced by copy 1's")
    assert tree(work) == files


OPENMPI4 = Path("/usr/bin/mpicc.openmpi")


def openmpi4_fortran(tmp_path: Path, name: str):
    """Debian's Open MPI 4.1 (skipped where scripts/mpis.sh did not install it) and the Fortran program `name`
    built with its mpifort."""
    if not OPENMPI4.exists() or not shutil.which("mpifort.openmpi"):
        pytest.skip("Debian's Open MPI 4.1 with mpifort (scripts/mpis.sh) is not installed")
    try:
        mpi = detect_mpi(str(OPENMPI4))
    except BuildError as e:
        pytest.fail(str(e))
    (cmd,) = compile_programs(mpi, tmp_path, None, [name]).values()
    return mpi, cmd


def test_fortran_status_new_on_open_mpi_4(tmp_path):
    """gfortran's open(..., status='new') on Debian's Open MPI 4.1, under --clones 2 and 3: no 'File exists',
    and the file is a native run's."""
    mpi, cmd = openmpi4_fortran(tmp_path, "f_status_new")
    native = tmp_path / "native"
    native.mkdir()
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    n = run_group([mpi.mpirun, "-n", "2", "--oversubscribe", *root, *cmd, str(native)], 120)
    assert n.returncode == 0, n.stderr
    for copies in (2, 3):
        work = tmp_path / f"work{copies}"
        work.mkdir()
        r = echorun(["--no-store", "-n", "2", "--clones", str(copies), *cmd, str(work)], tmp_path / f"run{copies}",
                    timeout=300, env={"ECHO_MPICC": mpi.mpicc})
        assert r.returncode == 0, r.stderr
        assert "File exists" not in r.stderr
        assert tree(work) == tree(native)


def test_a_log_every_rank_appends_to_is_no_divergence(mpi, programs, tmp_path):
    """A run log all ranks append to holds every rank's lines in the real file and a copy's own rank's only in its
    view: it is left out of the comparison (said), while rank 0's own result file is compared; the files are a
    native run's."""
    native = tmp_path / "native"
    native.mkdir()
    n = mpirun_native(mpi, 2, [*programs["shared_log"], str(native)])
    assert n.returncode == 0, n.stderr
    work = tmp_path / "work"
    work.mkdir()
    r = echorun(["--no-store", "-n", "2", "--clones", "2", "--sdc", "detect", *programs["shared_log"], str(work)],
                tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert "SDC (detect): clean" in r.stderr
    assert "1 files written by several ranks not compared" in r.stderr and str(work / "run.log") in r.stderr
    assert tree(work) == tree(native)
    assert lines_by_rank(r.stdout) == lines_by_rank(n.stdout)


# ---- files made under a random name (mkstemp, mkdtemp, gfortran's scratch units) ----

def program_temporaries(tmpdir: Path) -> list[tuple[str, bytes | None]]:
    """What the program left in its $TMPDIR (MPI's session directories aside), without the random part of the
    names: (name's fixed part, bytes or None for a directory), and what is under its directories."""
    out = []
    for entry in sorted(tmpdir.iterdir()):
        if entry.name.startswith(("work.", "run.", "gfortrantmp")):
            fixed = entry.name.rsplit(".", 1)[0] if "." in entry.name else entry.name[:len("gfortrantmp")]
            out.append((fixed, None if entry.is_dir() else entry.read_bytes()))
            if entry.is_dir():
                out.extend((f"{fixed}/{k}", v) for k, v in tree(entry).items())
    return sorted(out, key=lambda e: (e[0], e[1] or b""))


@pytest.mark.parametrize("copies,sdc", [(2, "detect"), (3, "vote")])
def test_mkstemp_and_mkdtemp_files_are_compared_by_order_not_name(programs, tmp_path, monkeypatch, mpi, copies,
                                                                  sdc):
    """A scratch file made with mkstemp, written and read back, and a directory made with mkdtemp with a summary in
    it, both left in $TMPDIR: every process draws its own names, yet the run is SDC-clean (a copy's k-th such file
    is its representative's k-th), and $TMPDIR holds exactly what a native run leaves: the copies' are in their
    own trees, and the vote wrote nothing there."""
    native_tmp, tmp = tmp_path / "native_tmp", tmp_path / "tmp"
    native_tmp.mkdir()
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(native_tmp))
    n = mpirun_native(mpi, 2, programs["scratch_c"])
    assert n.returncode == 0, n.stderr
    monkeypatch.setenv("TMPDIR", str(tmp))
    r = echorun(["--no-store", "-n", "2", "--clones", str(copies), "--sdc", sdc, *programs["scratch_c"]],
                tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert f"SDC ({sdc}): clean; exit status 0" in r.stderr
    assert lines_by_rank(r.stdout) == lines_by_rank(n.stdout)
    assert program_temporaries(tmp) == program_temporaries(native_tmp)
    assert len(program_temporaries(tmp)) == 6  # per rank: the scratch file, the directory, its summary
    for rank in (0, 1):
        for copy in range(1, copies):
            own = r.run_dir / "fileview" / f"rank{rank}.copy{copy}" / str(tmp).lstrip("/")
            assert [p.name.rsplit(".", 1)[0] for p in sorted(own.iterdir())] == [f"run.{rank}", f"work.{rank}"]


def scratch_run(programs, tmp_path: Path, monkeypatch, copies: int, sdc: str, mode: str):
    """scratch_c MODE on one rank under --clones COPIES --sdc SDC, with a $TMPDIR of its own: (result, $TMPDIR)."""
    tmp = tmp_path / f"tmp{copies}"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    r = echorun(["--no-store", "-n", "1", "--clones", str(copies), "--sdc", sdc, *programs["scratch_c"], mode],
                tmp_path / f"run{copies}")
    return r, tmp


def left_in(tmp: Path) -> list[str]:
    """The program's files and directories in its $TMPDIR, without the random part of their names."""
    return sorted(p.name.rsplit(".", 1)[0] for p in tmp.iterdir() if p.name.startswith(("work.", "run.")))


def test_a_difference_in_a_mkstemp_file_is_found_under_the_representatives_name(programs, tmp_path, monkeypatch):
    """Each process heads its scratch file with its own random id: the comparison still pairs the
    copy's scratch file with its representative's and names the representative's file at offset 0; with three
    copies no majority agrees, and the vote writes nothing."""
    r, tmp = scratch_run(programs, tmp_path, monkeypatch, 2, "detect", "stamp")
    assert r.returncode == EXIT_DIVERGED, r.stderr
    (scratch,) = tmp.glob("work.0.*")
    (div,) = [e for e in read_events(r.run_dir) if e.function == "file"]
    assert (div.kind, div.app_rank, div.copy, div.first_byte) == ("divergence", 0, 1, 0)
    assert f"file {scratch}: first differing offset 0" in r.stderr
    r, tmp = scratch_run(programs, tmp_path, monkeypatch, 3, "vote", "stamp")
    assert r.returncode == EXIT_DIVERGED, r.stderr
    (scratch,) = tmp.glob("work.0.*")
    events = [(e.kind, e.copy, e.first_byte, e.detail) for e in read_events(r.run_dir) if e.function == "file"]
    assert events == [("divergence", c, 0, f"file {scratch}: first differing offset 0") for c in (1, 2)]
    assert left_in(tmp) == ["run.0", "work.0"]


def test_fortran_scratch_units_on_open_mpi_4(tmp_path, monkeypatch):
    """gfortran's OPEN(STATUS='SCRATCH', FORM='UNFORMATTED') written, rewound, read back, its sum broadcast, on
    Debian's Open MPI 4.1 (as Quantum ESPRESSO's pw.x): clean under --clones 2 --sdc detect and --clones 3 --sdc
    vote, the output a native run's, and nothing left in $TMPDIR (no vote 'corrects' a scratch file into it)."""
    mpi, cmd = openmpi4_fortran(tmp_path, "f_scratch")
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    native_tmp = tmp_path / "native_tmp"
    native_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(native_tmp))
    n = run_group([mpi.mpirun, "-n", "2", "--oversubscribe", *root, *cmd], 120)
    assert n.returncode == 0, n.stderr
    for copies, sdc in ((2, "detect"), (3, "vote")):
        tmp = tmp_path / f"tmp{copies}"
        tmp.mkdir()
        monkeypatch.setenv("TMPDIR", str(tmp))
        r = echorun(["--no-store", "-n", "2", "--clones", str(copies), "--sdc", sdc, *cmd], tmp_path / f"run{copies}",
                    timeout=300, env={"ECHO_MPICC": mpi.mpicc})
        assert r.returncode == 0, r.stderr
        assert f"SDC ({sdc}): clean; exit status 0" in r.stderr
        assert lines_by_rank(r.stdout) == lines_by_rank(n.stdout)
        assert program_temporaries(tmp) == program_temporaries(native_tmp) == []


def test_vote_never_creates_or_deletes_a_name_each_process_drew_itself(programs, tmp_path, monkeypatch):
    """A summary named by a random id each process draws from the kernel (as codes name a run's files by a UUID),
    under --clones 3 --sdc vote: the representative's name is in none of its copies' views, and theirs in none of
    its, so the two copies 'outvote' its file by not having it.  The vote must not delete it (nor create theirs): the
    difference is reported as a divergence and $TMPDIR holds what a native run leaves, the representative's file."""
    r, tmp = scratch_run(programs, tmp_path, monkeypatch, 3, "vote", "named")
    assert r.returncode == EXIT_DIVERGED, r.stderr
    (rundir,) = tmp.glob("run.0.*")
    (summary,) = rundir.iterdir()
    assert summary.name.startswith("summary.") and summary.read_text().startswith("rank 0 local ")
    assert left_in(tmp) == ["run.0", "work.0"]
    events = [(e.kind, e.copy, e.detail) for e in read_events(r.run_dir) if e.function == "file"]
    for copy in (1, 2):
        assert ("divergence", copy, f"file {summary}: the representative's is a file, the copy's no such file") \
            in events
    assert "SDC (vote): diverged; exit status 20" in r.stderr
