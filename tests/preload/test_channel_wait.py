"""How copies wait for their representative when copies oversubscribe a host (preload/core/echo_channel.c):
they sleep on their channel, instead of turning MPI's progress engine before each sleep, which on an
oversubscribed node yields the core (Open MPI sets mpi_yield_when_idle itself there) and let the representative
write its next message meanwhile: the copy found it and never slept, one yield per message.  Counted by
tests/programs/yields.c, whose sched_yield takes the place of libc's for the MPI library: counts, not times
(bench/run_latency_parts.py measures the times)."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import PROGRAMS, copy_output, echorun

ROUND_TRIPS = 20000
CORES = os.cpu_count() or 1


@pytest.fixture(scope="module")
def yields_exe(mpi, tmp_path_factory) -> str:
    if mpi.family.lineage != "Open MPI":
        pytest.skip("Open MPI's progress engine and its yield when idle")
    exe = tmp_path_factory.mktemp("yields") / "yields"
    subprocess.run([mpi.mpicc, "-O1", "-rdynamic", "-o", str(exe), str(PROGRAMS / "yields.c")], check=True)
    return str(exe)


# 2 ranks of 2 copies oversubscribe the host (so Open MPI yields when idle) only with fewer than 4 cores
@pytest.mark.skipif(CORES >= 4, reason=f"needs fewer than 4 cores, this host has {CORES}")
def test_copies_sleep_instead_of_yielding_per_message(yields_exe, tmp_path):
    r = echorun(["--no-store", "-n", "2", "--clones", "2", yields_exe, str(ROUND_TRIPS)], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    for rank in range(2):
        w = copy_output(tmp_path / "run", rank, 1).split()  # r<rank>: yield_when_idle <0|1>, yields <n> in ...
        idle, yields = int(w[2].rstrip(",")), int(w[4])
        assert idle == 1, "Open MPI yields when idle on this oversubscribed host"
        # its progress calls: one per 64 messages read and one per wake-up (at least every 5 ms); one per message
        # (and no sleep) when the copy turned MPI's progress engine before each sleep
        assert yields < ROUND_TRIPS // 4, f"copy of rank {rank} yielded {yields} times in {ROUND_TRIPS} round trips"
