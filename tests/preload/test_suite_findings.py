"""What MPICH's test suite (tests/conformance/mpich_suite.py) found under copies, each as a small program that
runs natively, under --clones 2 and 3 (and SDR where it covers the calls): every copy prints what the native
rank printed, and the job ends as the native one does."""

from __future__ import annotations

import pytest

from tests.conftest import copy_output, echorun, lines_by_rank, mpirun_native

# program, ranks, whether SDR replicates what it calls
FINDINGS = [
    ("probe_status", 2, True),  # pt2pt/mprobe: probes overwrote the status's MPI_ERROR field
    ("type_free_pending", 3, True),  # pt2pt/dtype_send, datatype/tfree, concurrent_irecv: a freed type's requests
    ("split_unguided", 2, False),  # comm/cmsplit_type: copies' info lacked the level MPI wrote into the rep's
    ("split_guided", 3, True),  # comm/cmsplit_type under SDR: HW_GUIDED without the key split by host
    ("intercomm_self", 3, False),  # comm/ic1: copies made the real call over MPI_COMM_SELF and hung
    ("rma_edges", 3, False),  # rma/win_shared_noncontig_put: empty segments' NULL bases
    # rma/winname, accfence2, transpose3, test3, test3_am, lockcontention3: window memory freed before MPI_Win_free
    ("win_free_early", 3, False),
    # attr/fkeyval, fkeyvalcomm: keyvals freed while in use, then gone; attrt, attric: MPI calls in callbacks
    ("attr_keyvals", 2, True),
]
_native: dict[str, dict[int, list[str]]] = {}


def native(mpi, programs, name: str, n: int) -> dict[int, list[str]]:
    if name not in _native:
        r = mpirun_native(mpi, n, programs[name])
        assert r.returncode == 0, r.stderr
        _native[name] = lines_by_rank(r.stdout)
    return _native[name]


def modes(sdr: bool) -> list[list[str]]:
    return [["--clones", "2"], ["--clones", "3"]] + ([["--mode", "sdr", "--replicas", "2"]] if sdr else [])


@pytest.mark.parametrize(("name", "n", "mode"), [(name, n, mode) for name, n, sdr in FINDINGS for mode in modes(sdr)],
                         ids=lambda x: " ".join(x) if isinstance(x, list) else str(x))
def test_copies_print_what_native_prints(mpi, programs, tmp_path, name, n, mode):
    expected = native(mpi, programs, name, n)
    r = echorun(["--no-store", "-n", str(n), *mode, *programs[name]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert lines_by_rank(r.stdout) == expected
    copies = int(mode[-1])
    for rank in expected:
        for copy in range(1, copies):
            assert lines_by_rank(copy_output(r.run_dir, rank, copy)).get(rank, []) == expected[rank], (rank, copy)


def test_sdr_refuses_an_intercommunicator_over_comm_self(programs, tmp_path):
    """An intercommunicator over MPI_COMM_SELF is outside SDR (each replica's MPI_COMM_SELF is its own: docs/sdr.md);
    the call still reaches the replicated bridge communicator, so it is refused naming the call and the reason
    instead of hanging (MPICH's comm/ic1)."""
    r = echorun(["--no-store", "-n", "3", "--mode", "sdr", "--replicas", "2", *programs["intercomm_self"]],
                tmp_path / "run", timeout=90)
    assert r.returncode != 0
    assert "MPI_Intercomm_create over MPI_COMM_SELF (a communicator SDR does not replicate) is not supported in SDR " \
           "mode" in r.stderr, r.stderr
