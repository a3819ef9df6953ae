"""Every MPI a cluster runs: the battery on each MPI installed besides the primary one (PyPI's Open MPI 5, which
the rest of the suite tests), natively and under `--clones 2 --sdc detect`: the output of every rank's
representative and copy must be what the native run printed, and the copies must agree (SDC clean).

scripts/mpis.sh installs the MPIs (Debian's Open MPI 4.1 and MPICH 4.0 from apt; PyPI's MPICH 5 and Intel MPI
in virtual environments under .mpis/, each with mpi4py built against it). An MPI that is not installed is
skipped, saying so. A fixed subset of programs keeps this module within a few minutes (CI's portability job)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from echo.build import MPI, BuildError, detect_mpi
from echo.families import FAMILIES
from tests.conftest import compile_programs, copy_output, echorun, lines_by_rank, run_group

ROOT = Path(__file__).resolve().parents[2]
MPIS_DIR = ROOT / ".mpis"  # scripts/mpis.sh


@dataclass(frozen=True)
class Target:
    mpicc: Path
    python: Path  # a Python whose mpi4py is built against this MPI (absent: the Python programs are left out)
    installed_by: str


TARGETS = {
    "openmpi4-debian": Target(Path("/usr/bin/mpicc.openmpi"), MPIS_DIR / "openmpi-debian" / "bin" / "python",
                              "apt-get install libopenmpi-dev openmpi-bin (scripts/mpis.sh)"),
    "mpich4-debian": Target(Path("/usr/bin/mpicc.mpich"), MPIS_DIR / "mpich-debian" / "bin" / "python",
                            "apt-get install libmpich-dev mpich (scripts/mpis.sh)"),
    "mpich5-pypi": Target(MPIS_DIR / "mpich-pypi" / "bin" / "mpicc", MPIS_DIR / "mpich-pypi" / "bin" / "python",
                          "pip install mpich in .mpis/mpich-pypi (scripts/mpis.sh)"),
    "mpich5-abi": Target(MPIS_DIR / "mpich-pypi" / "bin" / "mpicc_abi", MPIS_DIR / "none",
                         "pip install mpich in .mpis/mpich-pypi (scripts/mpis.sh): the MPI 5 standard ABI build"),
    "impi-pypi": Target(MPIS_DIR / "impi-pypi" / "bin" / "mpicc", MPIS_DIR / "impi-pypi" / "bin" / "python",
                        "pip install impi-devel impi-rt in .mpis/impi-pypi (scripts/mpis.sh)"),
}
C_PROGRAMS = ["p2p", "coll", "comms", "comm_ctors", "anysource", "nonblocking", "intercomm", "attrs", "pcoll",
              "topo", "rma", "p2pmore", "io", "sdc_loop", "cxx_ring", "bigcount", "spawn", "mpi41", "errh_threads",
              "win_halo"]
# CI's portability job takes this fixed subset (about a minute and a half per MPI here); ECHO_PORTABILITY_FULL=1
# runs every program above
if not os.environ.get("ECHO_PORTABILITY_FULL"):
    C_PROGRAMS = ["p2p", "coll", "comms", "anysource", "nonblocking", "attrs", "topo", "io", "sdc_loop", "cxx_ring",
                  "bigcount", "spawn", "mpi41", "errh_threads", "win_halo"]
# Fortran, in the three interfaces: `use mpi` (f_usempi, f_timers), mpif.h (f_stencil), `use mpi_f08` (f_f08).
# MPICH's mpif.h and `use mpi` call the C MPI_* symbols, which echo wraps; Open MPI's Fortran and MPICH's mpi_f08
# call PMPI_*, so echo gives them Fortran entry points of its own (preload/gen/gen_fortran.py)
# f_mpiio: MPI-IO with strings (file names, 'native'), which Open MPI 4.1's Fortran binding took past echo
F_PROGRAMS = ["f_usempi", "f_stencil", "f_f08", "f_timers", "f_mpiio"]
PY_PROGRAMS = ["py_p2p", "py_coll", "py_bigcount", "py_subprocess"]
# programs whose copies differ by nature, on every MPI (the primary's tests/preload/test_sdc.py leaves them out
# too): they run with clones only.  rma and win_halo exchange the addresses of dynamic windows, io a process id.
SDC_DIFFERS = {"rma", "io", "win_halo"}
# What an MPI itself gets wrong or leaves open, natively: (MPI, program) -> (lines not compared with the native
# run's, why).  Copies are still compared with their representative on every line.
GREQ_POLLS = ("testall mix in ", "calls a complete generalized request's query function at every MPI_Testall poll that "
              "does not complete them all: how often depends on when the other messages arrive (natively 2 to "
              "65683 on MPICH 5.0.2, 2 to 2229 on Intel MPI 2021.18, from run to run; Open MPI 5 calls it once)")
MPI_QUIRKS = {
    ("mpich5-abi", "p2pmore"): (("isendrecv", GREQ_POLLS[0]), "the same MPICH 5.0.2 underneath"),
    ("impi-pypi", "p2pmore"): (("isendrecv", GREQ_POLLS[0]), "Intel MPI 2021.18 leaves the status of MPI_Isendrecv "
                               "unset, and " + GREQ_POLLS[1]),
    ("mpich5-pypi", "p2pmore"): (("isendrecv", GREQ_POLLS[0]), "MPICH 5.0.2 leaves the status of MPI_Isendrecv and "
                                 "MPI_Isendrecv_replace unset: natively tag 14 count 1 for tag 21 count 3; and it "
                                 + GREQ_POLLS[1]),
}
# What echo does not do yet on an MPI: (MPI, program) -> why.  Expected to fail (strictly: a fix shows).
ECHO_GAPS: dict[tuple[str, str], str] = {}
# Programs the MPI itself fails natively: (MPI, program) -> why.  Checked to fail still, then skipped.
NATIVE_FAILS = {
    ("mpich5-pypi", "pcoll"): "MPICH 5.0.2 aborts in MPI_Testall on started persistent collectives "
                              "(MPI_Reduce_init, MPI_Gather_init, MPI_Reduce_scatter_block_init), natively",
    ("mpich5-abi", "pcoll"): "MPICH 5.0.2 (its standard-ABI build too) aborts in MPI_Testall on started "
                             "persistent collectives, natively",
    ("impi-pypi", "pcoll"): "Intel MPI 2021.18 aborts in MPI_Testall on started persistent collectives "
                            "(Invalid MPI_Request), natively",
    ("mpich4-debian", "pcoll"): "MPICH 4.0.2 aborts in MPI_Testall on started persistent collectives, natively",
    ("mpich4-debian", "p2pmore"): "MPICH 4.0.2 aborts in MPI_Parrived (partitioned receive), natively",
    ("mpich4-debian", "spawn"): "MPICH 4.0.2 fails MPI_Comm_spawn natively (MPID_Comm_spawn_multiple: Error in "
                                "spawn call)",
    ("impi-pypi", "spawn"): "Intel MPI 2021.18 dies of SIGSEGV in MPI_Comm_spawn, natively",
}


def has_mpi4py(python: Path) -> bool:
    return python.is_file() and subprocess.run([str(python), "-c", "import mpi4py.MPI, numpy"],
                                               capture_output=True).returncode == 0


@dataclass(frozen=True)
class Built:
    id: str
    mpi: MPI
    programs: dict[str, list[str]]


@pytest.fixture(scope="module", params=list(TARGETS))
def target(request, tmp_path_factory) -> Built:
    """One MPI and the programs built with it: skipped when it is not installed."""
    t = TARGETS[request.param]
    if not t.mpicc.is_file():
        pytest.skip(f"{request.param} is not installed ({t.mpicc} missing): {t.installed_by}")
    try:
        mpi = detect_mpi(str(t.mpicc))
    except BuildError as e:
        pytest.fail(f"{request.param}: {e}")
    python = str(t.python) if has_mpi4py(t.python) else None
    out, programs = tmp_path_factory.mktemp(request.param), {}
    for name in C_PROGRAMS + F_PROGRAMS + ["f_stop", "f_crash"] + PY_PROGRAMS:
        try:
            programs.update(compile_programs(mpi, out, python, [name]))
        except subprocess.CalledProcessError:  # MPI-4 programs on an MPI-3 library
            pass
    return Built(request.param, mpi, programs)


def root_options(mpi) -> list[str]:
    """What the MPI's mpirun needs on this machine (MPICH's hydra runs any number of processes, and as root)."""
    return mpi.family.launcher_options(os.geteuid() == 0, oversubscribe=True)


def pinned(mpi) -> dict[str, str]:
    return {"ECHO_MPICC": mpi.mpicc}


def per_rank_files(mpi, outdir: Path) -> list[str]:
    """mpirun options that write each process's standard output to a file of its own: the mpiruns of MPICH,
    Intel MPI and Open MPI 4 relay output in chunks that may split lines, so lines of two ranks can mix on
    their standard output (natively as under echo)."""
    return mpi.family.output_files(outdir)


def rank_lines(mpi, outdir: Path, n: int) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for rank in range(n):
        out.update(lines_by_rank(mpi.family.rank_output(outdir, rank).read_text()))
    return out


@pytest.mark.parametrize("name", C_PROGRAMS + F_PROGRAMS + PY_PROGRAMS)
def test_battery_identical_to_native_with_clones_and_sdc(target, tmp_path, name, request):
    mpi, programs = target.mpi, target.programs
    if (target.id, name) in ECHO_GAPS:
        request.applymarker(pytest.mark.xfail(reason=ECHO_GAPS[target.id, name], strict=True))
    if name not in programs:
        pytest.skip(f"no mpi4py built against {mpi.name} (scripts/mpis.sh builds it)" if name in PY_PROGRAMS else
                    f"{name} does not compile against {mpi.name} (no Fortran compiler wrapper, or it calls what its "
                    "mpi.h lacks: MPI-4)")
    files = per_rank_files(mpi, tmp_path / "native")
    (tmp_path / "native").mkdir()
    native = run_group([mpi.mpirun, *files, "-n", "2", *root_options(mpi), *programs[name]], 120)
    if (target.id, name) in NATIVE_FAILS:
        assert native.returncode != 0, f"{name} now runs natively on {mpi.name}: compare it (NATIVE_FAILS)"
        pytest.skip(NATIVE_FAILS[target.id, name])
    assert native.returncode == 0, native.stderr
    expected = rank_lines(mpi, tmp_path / "native", 2)
    files = per_rank_files(mpi, tmp_path / "reps")
    (tmp_path / "reps").mkdir()
    sdc = [] if name in SDC_DIFFERS else ["--sdc", "detect"]
    r = echorun(["--no-store", f"--mpirun-args={' '.join(files)}", "-n", "2", "--clones", "2", *sdc,
                 *programs[name]], tmp_path / "run", env=pinned(mpi))
    assert r.returncode == 0, r.stderr
    assert f"mpi: {mpi.name} ({mpi.mpicc})" in r.stderr, "the plan names the MPI the job runs with"
    reps = rank_lines(mpi, tmp_path / "reps", 2)  # real ranks 0 and 1 are the representatives
    # arrival order ("order:") and timings ("timing:") are compared between copies only, as is what the MPI leaves
    # unset or open
    open_lines = ["order:", "timing:", *MPI_QUIRKS.get((target.id, name), ((), ""))[0]]
    for rank in range(2):
        ordered = [line for line in expected[rank] if not any(o in line for o in open_lines)]
        assert [line for line in reps[rank] if not any(o in line for o in open_lines)] == ordered
        assert lines_by_rank(copy_output(r.run_dir, rank, 1)) == {rank: reps[rank]}
    if sdc:
        assert "SDC (detect): clean; exit status 0" in r.stderr


def test_fault_tolerant_modes_need_ulfm(target, tmp_path):
    """SDR and Reinit stop before the job starts on an MPI without ULFM, naming what they need."""
    mpi, programs = target.mpi, target.programs
    if mpi.ulfm:
        pytest.skip(f"{mpi.name} has ULFM")
    for mode in (["--mode", "sdr", "--replicas", "2"], ["--mode", "reinit"]):
        r = echorun(["--no-store", "-n", "2", *mode, *programs["p2p"]], tmp_path / "run", env=pinned(mpi))
        assert r.returncode == 2, r.stderr
        assert "needs an MPI with ULFM (Open MPI >= 5 with ULFM" in r.stderr and mpi.name in r.stderr
        assert "Traceback" not in r.stderr and not (tmp_path / "run").exists()


def test_mpirun_of_the_same_mpi(target):
    """Debian's alternatives: mpicc.mpich goes with mpirun.mpich whatever /usr/bin/mpirun is."""
    mpi = target.mpi
    out = subprocess.run([mpi.mpirun, "--version"], capture_output=True, text=True).stdout
    others = {says for f in FAMILIES for says in f.version_says} - set(mpi.family.version_says)
    assert any(says in out for says in mpi.family.version_says) and not any(says in out for says in others), out
    if mpi.mpicc.startswith("/usr/bin/mpicc."):
        assert mpi.mpirun.endswith("." + mpi.mpicc.rsplit(".", 1)[1]), mpi.mpirun


def test_intel_mpi_with_its_root_already_set(target, tmp_path):
    """Intel MPI's setvars.sh leaves I_MPI_ROOT set; with another MPI's mpiexec.hydra first on PATH (MPICH's in
    /usr/bin), Intel's mpirun, a script, started that one (on a cluster every process died of SIGSEGV before
    MPI_Init; MPICH 4.0.2's hydra happens to start Intel MPI 2021.18's processes here). echo runs Intel MPI's
    own hydra, and the job runs."""
    if target.id != "impi-pypi":
        pytest.skip("Intel MPI only")
    bindir = str(Path(target.mpi.mpicc).parent)
    path = [p for p in os.environ["PATH"].split(os.pathsep) if p != bindir]
    other = shutil.which("mpiexec.hydra", path=os.pathsep.join(path))
    if other is None:
        pytest.skip("no other MPI's mpiexec.hydra on PATH (Debian's MPICH: scripts/mpis.sh)")
    env = {**pinned(target.mpi), "I_MPI_ROOT": str(Path(bindir).parent), "PATH": os.pathsep.join(path)}
    # what Intel's mpirun script will start: the first mpiexec.hydra on the PATH echo gives it
    code = (f"import shutil; from echo.build import detect_mpi; detect_mpi({target.mpi.mpicc!r}); "
            "print(shutil.which('mpiexec.hydra'))")
    found = subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, capture_output=True, text=True)
    assert found.stdout.strip() == str(Path(bindir) / "mpiexec.hydra"), (other, found.stdout, found.stderr)
    r = echorun(["--no-store", "-n", "2", "--clones", "2", *target.programs["p2p"]], tmp_path / "run", env=env)
    assert r.returncode == 0, f"{other} first on PATH:\n{r.stderr}"
    assert "r1: done modes" in r.stdout, r.stdout


def fortran(target, name: str) -> list[str]:
    """The command of a Fortran program built with this MPI, or skip: no Fortran compiler wrapper."""
    if name not in target.programs:
        pytest.skip(f"{target.mpi.name}: no Fortran compiler wrapper (mpifort) beside {target.mpi.mpicc}")
    return target.programs[name]


@pytest.mark.parametrize("status", [3, 4])
def test_fortran_exit_status_is_the_programs(target, tmp_path, status):
    """`stop 3` on every rank, `error stop 4` on rank 1, after MPI_Finalize: under clones and SDC the job ends
    with the program's own status, naming a process that returned it.  (Once one process returns non-zero,
    mpirun may end the others, natively too: whether every copy got to the end is left open.)"""
    cmd = [*fortran(target, "f_stop"), str(status)]
    mpi = target.mpi
    native = run_group([mpi.mpirun, "-n", "2", *root_options(mpi), *cmd], 120)
    assert native.returncode != 0, native.stderr  # its code is mpirun's: MPICH's may report a signal instead
    r = echorun(["--no-store", "-n", "2", "--clones", "2", "--sdc", "detect", *cmd], tmp_path / "run",
                env=pinned(mpi))
    assert r.returncode == status, r.stderr
    cause = [line for line in r.stderr.splitlines() if line.startswith("echo: job failed: application rank")][0]
    assert cause.endswith(f"exited after MPI_Finalize (exit status {status})"), cause
    assert status == 3 or cause.startswith("echo: job failed: application rank 1 copy"), cause
    assert "SDC divergence" not in r.stderr and "Traceback" not in r.stderr


def test_fortran_crash_names_the_signal(target, tmp_path):
    """A gfortran program that dies of SIGSEGV on rank 1 (gfortran's runtime catches the signal, prints its
    backtrace and raises it again): echorun names the signal, as for a C program, and the backtrace still shows."""
    cmd = fortran(target, "f_crash")
    r = echorun(["--no-store", "-n", "2", "--clones", "2", *cmd], tmp_path / "run", env=pinned(target.mpi))
    assert r.returncode != 0, r.stderr
    assert "Program received signal SIGSEGV" in r.stderr, r.stderr  # gfortran's own handler still ran
    causes = [line for line in r.stderr.splitlines() if line.startswith("echo: job failed: application rank")]
    assert causes and all(line.startswith("echo: job failed: application rank 1 copy") for line in causes), r.stderr
    assert "was killed by SIGSEGV (Segmentation fault)" in causes[0], r.stderr


# Each Fortran interface's calls that `mpiecho report` must show: on Open MPI 4.1, f_f08's MPI_Test, MPI_Iprobe
# come through mpi_test_f08_ (its mpi_f08 calls pmpi_test_ for them), the others through ompi_x_f; on MPICH, all
# through mpi_x_f08_ and mpi_x_f08ts_
F_REPORTED = {
    "f_usempi": ("MPI_Waitany", "MPI_Testsome", "MPI_Allreduce", "MPI_Comm_split", "MPI_Sendrecv", "MPI_Gather"),
    "f_stencil": ("MPI_Cart_create", "MPI_Cart_shift", "MPI_Type_vector", "MPI_Waitall", "MPI_Sendrecv"),
    "f_f08": ("MPI_Test", "MPI_Iprobe", "MPI_Testsome", "MPI_Waitany", "MPI_Get_count", "MPI_Alltoall"),
    "f_mpiio": ("MPI_File_open", "MPI_File_delete", "MPI_File_set_view", "MPI_Comm_set_name", "MPI_Comm_get_name"),
}
# Every call f_mpiio's rank 1 makes, and how many times: the report shows what the program called, no more (echo's
# own handle conversions in its Fortran entry points are not the program's) and no less
F_MPIIO_RANK1 = {"MPI_Init": 1, "MPI_Comm_rank": 1, "MPI_Comm_size": 1, "MPI_Comm_set_name": 1,
                 "MPI_Comm_get_name": 1, "MPI_Barrier": 3, "MPI_File_open": 3, "MPI_File_set_view": 2,
                 "MPI_File_write_all": 1, "MPI_File_read_all": 1, "MPI_File_close": 2, "MPI_Allreduce": 1,
                 "MPI_Reduce": 1}


@pytest.mark.parametrize("name", list(F_REPORTED))
def test_fortran_calls_are_intercepted(target, tmp_path, name, request):
    """A Fortran program's calls reach echo's wrappers (MPICH: its Fortran layer calls the C MPI_* symbols; Open
    MPI: echo's Fortran entry points): `mpiecho report` shows them."""
    mpi = target.mpi
    cmd = fortran(target, name)
    if (target.id, name) in ECHO_GAPS:
        request.applymarker(pytest.mark.xfail(reason=ECHO_GAPS[target.id, name], strict=True))
    db = f"sqlite:///{tmp_path}/echo.db"
    r = echorun(["--db", db, "-n", "2", "--clones", "2", *cmd], tmp_path / "run", env=pinned(mpi))
    assert r.returncode == 0, r.stderr
    run_id = json.loads((tmp_path / "run" / "run.json").read_text())["run_id"]
    from sqlalchemy import create_engine

    from echo.report import report

    text = report(create_engine(db), run_id, top=50)  # what `mpiecho report` prints, every function listed
    for call in F_REPORTED[name]:  # a whole name: MPI_Test is not MPI_Testsome
        assert re.search(rf"\b{call}\b", text), f"{call} is not in the report:\n{text}"
    conversions = re.findall(r"\bMPI_\w+_(?:c2f|f2c)\b", text)
    assert not conversions, f"echo's own handle conversions reported as the program's calls: {set(conversions)}"
    if name == "f_mpiio":
        rows = re.findall(r"^1\s+(MPI_\w+)\s+(\d+)\s", text.split("per rank (representatives):")[1], re.M)
        assert {call: int(n) for call, n in rows} == F_MPIIO_RANK1, text


def test_output_all_prefixes_every_copy(target, tmp_path):
    """--output all on every MPI: the job runs (Open MPI 4.1's mpirun knows --tag-output, not --output tag) and
    every copy's lines carry the `[rank R copy C]` prefix (hydra tags lines its own way)."""
    mpi = target.mpi
    r = echorun(["--no-store", "-n", "2", "--clones", "2", "--output", "all", *target.programs["cxx_ring"]],
                tmp_path / "run", env=pinned(mpi))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    for rank in range(2):
        for copy in range(2):
            assert f"[rank {rank} copy {copy}] r{rank}: done" in lines, r.stdout
