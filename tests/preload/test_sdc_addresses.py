"""Addresses a program hands to MPI are each process's own, not a divergence (issue 31, part 4): Global Arrays and
ARMCI codes (NWChem) allgather the addresses of their buffers and structs carry pointers beside data, so a copy's
bytes necessarily differ from its representative's there and every such run was flagged (exit 20).  Real runs
under mpirun; a flip in the data beside an address is still caught, and a vote never gives a process another's
address."""

from __future__ import annotations

from pathlib import Path

import pytest

from echo.build import detect_mpi
from echo.runformat.constants import EXIT_CORRECTED, EXIT_DIVERGED
from echo.sdc import read_events
from tests.conftest import compile_programs, copy_output, echorun, lines_by_rank, mpirun_native

OPENMPI4 = Path("/usr/bin/mpicc.openmpi")  # Debian's Open MPI 4.1 (scripts/mpis.sh), NWChem's MPI
# the block descriptor (pointer, length, norm) is the program's first data-carrying call: call=0 is it
FLIP_BESIDE_ADDRESS = "bitflip:rank=0,copy={copy},call=0,byte=8,bit=3"  # bit 3 of the length, next to the pointer


@pytest.fixture(scope="module")
def native(mpi, programs) -> dict[int, list[str]]:
    r = mpirun_native(mpi, 2, programs["published_addresses"])
    assert r.returncode == 0, r.stderr
    out = lines_by_rank(r.stdout)
    assert all(line.endswith("right") for lines in out.values() for line in lines), r.stdout
    return out


def assert_clean_and_native(r, native: dict[int, list[str]], copies: int, mode: str) -> None:
    assert r.returncode == 0, r.stderr
    assert f"SDC ({mode}): clean; exit status 0" in r.stderr, r.stderr
    assert [e for e in read_events(r.run_dir) if e.kind != "injection"] == []
    assert lines_by_rank(r.stdout) == native
    for rank in native:
        for copy in range(1, copies):
            assert lines_by_rank(copy_output(r.run_dir, rank, copy)) == {rank: native[rank]}, (rank, copy)


@pytest.mark.parametrize(("mode", "copies"), [("detect", 2), ("stop", 2), ("vote", 3)])
def test_published_addresses_are_no_divergence(programs, tmp_path, native, mode, copies):
    """Addresses of the heap, of MPI_Alloc_mem's memory, of a buffer malloc maps on its own, of a constant in the
    program's file and of a local on the stack, allgathered beside data: each copy's are its own (exit 20 before)."""
    r = echorun(["--no-store", "-n", "2", "--clones", str(copies), "--sdc", mode, *programs["published_addresses"]],
                tmp_path / "run")
    assert_clean_and_native(r, native, copies, mode)


def test_published_addresses_on_openmpi4(tmp_path):
    """The same on Debian's Open MPI 4.1, the MPI NWChem is built with there."""
    if not OPENMPI4.exists():
        pytest.skip("Debian's Open MPI 4.1 (scripts/mpis.sh) is not installed")
    mpi = detect_mpi(str(OPENMPI4))
    (cmd,) = compile_programs(mpi, tmp_path, None, ["published_addresses"]).values()
    nat = mpirun_native(mpi, 2, cmd)
    assert nat.returncode == 0, nat.stderr
    for mode, copies in (("detect", 2), ("vote", 3)):
        r = echorun(["--no-store", "-n", "2", "--clones", str(copies), "--sdc", mode, *cmd], tmp_path / mode,
                    timeout=300, env={"ECHO_MPICC": mpi.mpicc})
        assert_clean_and_native(r, lines_by_rank(nat.stdout), copies, mode)


def test_a_flip_beside_an_address_is_caught(programs, tmp_path):
    """The length stored next to the pointer, flipped in a copy: detect names its byte (the copy then reads past
    its block and fails its own check, whose status wins), stop names it and stops."""
    flip = FLIP_BESIDE_ADDRESS.format(copy=1)
    r = echorun(["--no-store", "-n", "2", "--clones", "2", "--sdc", "detect", "--inject", flip,
                 *programs["published_addresses"]], tmp_path / "detect")
    assert r.returncode != 0, r.stderr
    first = [e for e in read_events(tmp_path / "detect") if e.kind == "divergence"][0]
    assert (first.function, first.app_rank, first.copy, first.first_byte) == ("MPI_Allgather", 0, 1, 8), first
    r = echorun(["--no-store", "-n", "2", "--clones", "2", "--sdc", "stop", "--inject", flip,
                 *programs["published_addresses"]], tmp_path / "stop")
    assert r.returncode == EXIT_DIVERGED, r.stderr
    assert "copy 1 differs from copy 0 in MPI_Allgather (call #" in r.stderr
    assert "24 bytes), first differing byte 8;" in r.stderr, r.stderr


def test_a_flipped_address_is_named_as_unmatched(programs, tmp_path):
    """A flip in the pointer's low bits: it no longer points to the same place as copy 0's, and the message says
    the bytes look like addresses that could not be matched, and where each points."""
    r = echorun(["--no-store", "-n", "2", "--clones", "2", "--sdc", "stop", "--inject",
                 "bitflip:rank=0,copy=1,call=0,byte=0,bit=3", *programs["published_addresses"]], tmp_path / "run")
    assert r.returncode == EXIT_DIVERGED, r.stderr
    assert "first differing byte 0; the 8 bytes at 0 look like addresses" in r.stderr, r.stderr
    assert "could not be matched as each process's own address of the same place" in r.stderr
    assert "copy 0's points to memory without a file, copy 1's to memory without a file" in r.stderr


@pytest.mark.parametrize("copy", [0, 1])
def test_vote_corrects_the_data_and_keeps_each_address(programs, tmp_path, native, copy):
    """A flip beside the pointer, in a copy or in the representative, outvoted: the data is corrected and the
    pointer stays the process's own, so every process reads its own block right (given the majority's address,
    it would read another process's memory)."""
    r = echorun(["--no-store", "-n", "2", "--clones", "3", "--sdc", "vote", "--inject",
                 FLIP_BESIDE_ADDRESS.format(copy=copy), *programs["published_addresses"]], tmp_path / "run")
    assert r.returncode == EXIT_CORRECTED, r.stderr
    corrected = [e for e in read_events(tmp_path / "run") if e.kind == "corrected"]
    assert [(e.app_rank, e.copy, e.first_byte) for e in corrected] == [(0, copy, 8)], corrected
    assert lines_by_rank(r.stdout) == native
    for rank in native:
        for c in (1, 2):
            assert lines_by_rank(copy_output(r.run_dir, rank, c)) == {rank: native[rank]}, (rank, c)
