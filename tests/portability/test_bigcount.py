"""MPI-4's large-count calls (MPI_X_c) under clones, on an MPI whose mpi.h declares them (PyPI's MPICH 5).

The battery (test_mpis.py: bigcount.c, py_bigcount.py and mpi4py's other programs) checks what copies receive;
this module checks what the generator gives every MPI_X_c, and what a call it cannot replicate does."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROGRAMS, copy_output, echorun, lines_by_rank, run_group

ROOT = Path(__file__).resolve().parents[2]
MPICC = ROOT / ".mpis" / "mpich-pypi" / "bin" / "mpicc"  # scripts/mpis.sh
GEN = ROOT / "preload" / "gen"
HUGE_MEMORY_GB = 14  # bigcount_huge.c: 2 GB per process, 4 processes under --clones 2, and echo's forwarding


def available_gb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 2**20
    return 0.0


@pytest.fixture(scope="module")
def wrappers(tmp_path_factory) -> str:
    if not MPICC.is_file():
        pytest.skip(f"PyPI's MPICH is not installed ({MPICC} missing): scripts/mpis.sh installs it")
    out = tmp_path_factory.mktemp("gen") / "wrappers.c"
    sources = sorted(str(p) for p in (ROOT / "preload").glob("*/*.c"))
    subprocess.run([sys.executable, str(GEN / "gen_wrappers.py"), "--mpicc", str(MPICC), "--out", str(out),
                    *sources], check=True, cwd=GEN)
    return out.read_text()


def mode_entry(text: str, mode: str, name: str) -> str:
    """What `mode`'s dispatch table does for `name`: the expression its generated function returns, or the name of
    the function its table points to."""
    body = re.search(rf"^static int {mode}_{name}\(.*?\n(?:    sdr_tick\(\d\);\n)?    int rc = (.*?);\n", text,
                     re.S | re.M)
    if body:
        return body[1]
    table = re.search(rf"^const struct echo_calls echo_calls_{mode} = {{\n(.*?)^}};", text, re.S | re.M)
    assert table, f"no dispatch table for {mode}"
    entry = re.search(rf"\.{name} = (\w+),", table[1])
    assert entry, f"no {mode} entry for {name}"
    return entry[1]


# MPI-4.1's communicator buffer calls: their _c form takes a size in bytes (narrowing it would lose buffers of 2 GiB
# and more), so preload/clone/echo_buffers.c defines both forms with one macro
SIZED_BY_HAND = {"MPI_Comm_attach_buffer_c", "MPI_Comm_detach_buffer_c"}
BUFFERS_C = (Path(__file__).resolve().parents[2] / "preload" / "clone" / "echo_buffers.c").read_text()


def test_every_large_count_call_has_its_int_forms_semantics(wrappers):
    """No MPI_X_c stops the job with clones; each calls its int form's semantics with its counts narrowed, or (a
    buffer's size) is defined with its int form by one macro."""
    names = sorted(set(re.findall(r"ECHO_PUBLIC int (MPI_\w+_c)\(", wrappers)))
    assert "MPI_Send_c" in names and "MPI_Ineighbor_alltoallw_c" in names
    stopped = []
    for name in names:
        entry = mode_entry(wrappers, "clone", name)
        if f'echo_unsupported("{name}")' in entry:
            stopped.append(name)
            int_form = mode_entry(wrappers, "clone", name.removesuffix("_c"))
            assert f'echo_unsupported("{name.removesuffix("_c")}")' in int_form, f"{name} stops, its int form not"
        elif name in SIZED_BY_HAND:  # a buffer's size, not a count: both forms from one macro, nothing narrowed
            for form in (name, name.removesuffix("_c")):
                assert f"ECHO_DEFINE_BUFFER_CALL({form}," in BUFFERS_C, f"{form} is not defined with its family"
        elif f"echo_{name}" in entry:
            assert re.search(rf"^int echo_{name}\(.*?\n    int rc = echo_{name.removesuffix('_c')}\(", wrappers,
                             re.S | re.M), f"{name}'s semantics are not its int form's"
    assert stopped == []


def test_sdr_refuses_large_count_calls_on_replicated_communicators(wrappers):
    """SDR (Open MPI's ULFM only, whose 5.0 mpi.h declares no MPI_X_c) has no large-count semantics: on a
    replicated communicator the call stops naming itself, never passes through to one replica."""
    for name in ("MPI_Send_c", "MPI_Recv_c", "MPI_Isend_c", "MPI_Bcast_c", "MPI_Allreduce_c", "MPI_Alltoallv_c"):
        assert mode_entry(wrappers, "sdr", name).startswith(f'sdr_comm_of(comm) ? (echo_unsupported("{name}")'), name


def test_a_reduction_beyond_an_int_stops_naming_the_call(tmp_path):
    """A count beyond an int travels as one element of a contiguous type (bigcount_huge.c), which an MPI_Op does
    not apply to: a reduction of so many elements stops the job, naming the call and why."""
    if not MPICC.is_file():
        pytest.skip(f"PyPI's MPICH is not installed ({MPICC} missing): scripts/mpis.sh installs it")
    src = tmp_path / "over.c"
    src.write_text("#include <mpi.h>\n#include <limits.h>\nint main(int argc, char **argv) {\n"
                   "    char b[1];\n    MPI_Init(&argc, &argv);\n"
                   "    MPI_Allreduce_c(MPI_IN_PLACE, b, (MPI_Count)INT_MAX + 1, MPI_BYTE, MPI_SUM, MPI_COMM_WORLD);\n"
                   "    MPI_Finalize();\n    return 0;\n}\n")
    subprocess.run([str(MPICC), "-o", str(tmp_path / "over"), str(src)], check=True)
    r = echorun(["--no-store", "-n", "2", "--clones", "2", str(tmp_path / "over")], tmp_path / "run",
                env={"ECHO_MPICC": str(MPICC)})
    assert r.returncode != 0
    assert "MPI_Allreduce_c is not supported with clones for count 2147483648, beyond an int" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_messages_beyond_an_int_reach_every_copy(tmp_path):
    """INT_MAX + 9 bytes by MPI_Send_c/MPI_Recv_c, MPI_Bcast_c and MPI_Isend_c/MPI_Irecv_c: every representative
    prints what the native run printed (the bytes at both ends, the count its status gives), every copy what its
    representative printed."""
    if not MPICC.is_file():
        pytest.skip(f"PyPI's MPICH is not installed ({MPICC} missing): scripts/mpis.sh installs it")
    if available_gb() < HUGE_MEMORY_GB:
        pytest.skip(f"needs {HUGE_MEMORY_GB} GB of available memory ({available_gb():.1f} GB here)")
    exe = tmp_path / "bigcount_huge"
    subprocess.run([str(MPICC), "-O1", f"-I{PROGRAMS}", "-o", str(exe), str(PROGRAMS / "bigcount_huge.c")],
                   check=True)
    mpirun = MPICC.with_name("mpirun")
    (tmp_path / "native").mkdir()
    native = run_group([str(mpirun), "-outfile-pattern", f"{tmp_path}/native/out.%r", "-n", "2", str(exe)], 300)
    assert native.returncode == 0, native.stderr
    (tmp_path / "reps").mkdir()
    r = echorun(["--no-store", f"--mpirun-args=-outfile-pattern {tmp_path}/reps/out.%r", "-n", "2", "--clones", "2",
                 str(exe)], tmp_path / "run", timeout=600, env={"ECHO_MPICC": str(MPICC)})
    assert r.returncode == 0, r.stderr
    for rank in range(2):
        expected = (tmp_path / "native" / f"out.{rank}").read_text()
        assert f"count {2**31 + 8}" in expected, expected  # the status counts every byte
        assert (tmp_path / "reps" / f"out.{rank}").read_text() == expected
        assert lines_by_rank(copy_output(r.run_dir, rank, 1)) == lines_by_rank(expected)
