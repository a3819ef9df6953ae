"""The replication semantics, end to end: every program of the battery runs
natively and under echorun with 1, 2 and 3 copies at -n 1, 2 and 4 (SHAPES); each copy
of each rank must print exactly what its representative printed, and that must
be what the native run printed (lines marked "order:" depend on message arrival
order, which MPI leaves open, so they are compared between copies only)."""

from __future__ import annotations

import os

import pytest

from tests.conftest import copy_output, echorun, lines_by_rank, mpirun_native

BATTERY = ["p2p", "coll", "comms", "comm_ctors", "anysource", "nonblocking", "cxx_ring", "py_p2p", "py_coll", "py_comm",
           "intercomm", "attrs", "pcoll", "session", "topo", "rma", "p2pmore", "io",
           "bigcount", "py_bigcount", "py_subprocess"]
_native_cache: dict[tuple[str, int], dict[int, list[str]]] = {}


def deterministic(lines: list[str]) -> list[str]:
    return [line for line in lines if "order:" not in line]


def native(mpi, programs, name: str, n: int) -> dict[int, list[str]]:
    if (name, n) not in _native_cache:
        r = mpirun_native(mpi, n, programs[name])
        assert r.returncode == 0, r.stderr
        _native_cache[name, n] = lines_by_rank(r.stdout)
    return _native_cache[name, n]


# (ranks, copies per rank): CI takes four that cover each rank count and each copy count once at least (every
# program in each, about four minutes here); ECHO_REPLICATION_FULL=1 runs all nine
SHAPES = [(n, c) for n in (1, 2, 4) for c in (1, 2, 3)] if os.environ.get("ECHO_REPLICATION_FULL") else \
    [(1, 2), (2, 1), (2, 3), (4, 2)]


@pytest.mark.parametrize(("n", "copies"), SHAPES)
@pytest.mark.parametrize("name", BATTERY)
def test_battery_under_copies(mpi, programs, tmp_path, name, n, copies):
    expected = native(mpi, programs, name, n)
    r = echorun(["-n", str(n), "--clones", str(copies), *programs[name]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    reps = lines_by_rank(r.stdout)
    assert sorted(reps) == list(range(n)), "every rank's representative prints"
    for rank in range(n):
        assert deterministic(reps[rank]) == deterministic(expected[rank])
        assert reps[rank][-1] == f"r{rank}: done" or reps[rank][-1].startswith(f"r{rank}: done")
        for copy in range(1, copies):
            assert lines_by_rank(copy_output(r.run_dir, rank, copy)) == {rank: reps[rank]}
    assert "application exited with status 0" in r.stderr


def test_copies_receive_padding_of_long_doubles_as_a_native_send_delivers_it(mpi, programs, tmp_path):
    """A copy receives its representative's data through the channel: a strided MPI_LONG_DOUBLE went there packed,
    and Open MPI's MPI_Pack and MPI_Unpack copy only the 10 value bytes of each 16, so the copy of rank 0 found 96
    of 256 bytes of its gathered columns different where natively none are."""
    expected = native(mpi, programs, "padded_types", 2)
    r = echorun(["-n", "2", "--clones", "2", *programs["padded_types"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    for rank in range(2):
        assert lines_by_rank(r.stdout)[rank] == expected[rank]
        assert lines_by_rank(copy_output(r.run_dir, rank, 1)) == {rank: expected[rank]}
    assert "r0: gathered columns: 0 of 256 bytes differ" in expected[0]


def test_a_struct_type_over_an_unmapped_page_reaches_copies_whole(mpi, programs, tmp_path):
    """Two arrays sent as one struct type with an unmapped page between them: the channel carries a type with holes
    as the memory span it covers, and copying that span killed the representative with SIGSEGV; a span on pages
    never mapped is packed instead."""
    expected = native(mpi, programs, "split_arrays", 2)
    r = echorun(["-n", "2", "--clones", "2", *programs["split_arrays"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert lines_by_rank(r.stdout)[0] == expected[0]
    assert lines_by_rank(copy_output(r.run_dir, 0, 1)) == {0: expected[0]}


def test_per_rank_copy_map(programs, tmp_path):
    """--clones 0=3,2=2: rank 0 has three copies, rank 2 two, the others one."""
    r = echorun(["-n", "4", "--clones", "0=3,2=2", *programs["coll"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    reps = lines_by_rank(r.stdout)
    outputs = sorted(p.name for p in (tmp_path / "run" / "output").glob("*.out"))
    assert outputs == ["rank0.copy1.out", "rank0.copy2.out", "rank2.copy1.out"]
    for rank, copy in [(0, 1), (0, 2), (2, 1)]:
        assert lines_by_rank(copy_output(r.run_dir, rank, copy)) == {rank: reps[rank]}
    assert "7 processes" in r.stderr


def test_all_output_prefixed(programs, tmp_path):
    """--output all: every copy prints, each line labelled with its rank and copy."""
    r = echorun(["-n", "2", "--clones", "2", "--output", "all", *programs["cxx_ring"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    for rank in range(2):
        for copy in range(2):
            assert f"[rank {rank} copy {copy}] r{rank}: done" in lines
    assert not list((tmp_path / "run" / "output").glob("*.out"))


@pytest.mark.parametrize("copies", [2, 3])
def test_a_copy_sleeps_while_it_waits(programs, tmp_path, copies):
    """Rank 0 waits 2 s for rank 1 in MPI_Recv: its representative polls inside MPI as MPI does, but its copies,
    on the same host, sleep until their representative forwards (preload/core/echo_channel.c): a copy that polled
    would burn CPU the representatives need for those 2 s."""
    r = echorun(["--no-store", "-n", "2", "--clones", str(copies), *programs["waits"], "2"], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    for copy in range(1, copies):
        (line,) = copy_output(tmp_path / "run", 0, copy).splitlines()
        assert line.startswith("r0: got 42, cpu ")
        assert float(line.split()[-1]) < 0.3, f"copy {copy} of rank 0 used {line.split()[-1]} s of CPU waiting"
