"""Clocks read without a clock call, or with one that carries more than times (preload/core/echo_tsc.c,
echo_clock.c): copies read their representative's, so a clean run of a code that reduces them is clean."""

from __future__ import annotations

import re
from pathlib import Path

from echo.sdc import read_events
from tests.conftest import copy_output, echorun, lines_by_rank, mpirun_native


def run_clean_in_step(cmd: list[str], run: Path, sdc: str, copies: int, printed: str, extra: tuple = ()) -> None:
    """`cmd` under `copies` copies and `--sdc sdc` (and `extra` options): exit 0, SDC clean, no event, and every
    copy printed exactly its representative's lines (the representatives' include one with `printed`)."""
    r = echorun(["--no-store", "--sdc", sdc, *extra, "-n", "2", "--clones", str(copies), *cmd], run)
    assert r.returncode == 0, r.stderr
    assert f"SDC ({sdc}): clean; exit status 0" in r.stderr
    assert read_events(run) == []
    reps = lines_by_rank(r.stdout)
    assert any(printed in line for line in reps[0])
    for rank in (0, 1):
        for copy in range(1, copies):
            assert lines_by_rank(copy_output(run, rank, copy)) == {rank: reps[rank]}


def test_rdtsc_cycle_counts_gathered_are_the_representatives(programs, tmp_path):
    """An MD code's load balancing gathers cycle counts read with rdtsc and redistributes atoms by them: under
    three copies, `--sdc vote` and `--tsc share`, every copy reads its representative's counter, so the vote finds
    nothing and every copy prints its representative's lines (cycle counts and atom shares)."""
    run_clean_in_step(programs["tsc_balance"], tmp_path / "run", "vote", 3, "cycles", ("--tsc", "share"))


def test_reduced_maximum_resident_size_is_not_a_divergence(programs, tmp_path):
    """A proxy app reduces ru_maxrss (getrusage) at its end: a copy's own resident size differs from its
    representative's, so it reads the representative's whole rusage, and the run is clean."""
    run_clean_in_step(programs["maxrss"], tmp_path / "run", "detect", 2, "memory max")


def test_a_real_segfault_in_a_program_reading_the_counter_is_still_sigsegv(programs, tmp_path):
    """The counter's faults are echo's; any other fault is the program's: rank 1's copy dies of a bad pointer
    between two rdtsc and the job says SIGSEGV, naming that rank and copy."""
    r = echorun(["-n", "2", "--clones", "2", "--tsc", "share", *programs["tsc_crash"], "1"], tmp_path / "run")
    assert r.returncode != 0
    assert re.search(r"application rank 1 copy \d \(process \d+, pid \d+\) was killed by SIGSEGV", r.stderr), r.stderr


def test_a_crash_reporter_installed_after_init_still_reports_the_crash(mpi, programs, tmp_path):
    """A SIGSEGV handler the program installs after MPI_Init gets the program's real faults, never the counter's:
    rank 1 reads rdtsc, then dies of a bad pointer, and its own reporter prints and exits as natively."""
    native = mpirun_native(mpi, 2, [*programs["tsc_crash"], "1", "handler"])
    assert "r1: caught signal 11" in native.stdout, native.stdout + native.stderr
    r = echorun(["-n", "2", "--clones", "2", "--tsc", "share", *programs["tsc_crash"], "1", "handler"],
                tmp_path / "run")
    assert r.returncode == 3, r.stderr
    assert "r1: caught signal 11" in r.stdout, r.stdout + r.stderr
    assert "r0: caught" not in r.stdout


def test_gathered_cycle_counts_without_tsc_share_say_how_to_share_it(programs, tmp_path):
    """Without --tsc share each copy reads its own counter (the trap costs microseconds per MPI call), so the MD
    code's gathered cycle counts differ: --sdc detect flags the MPI_Allgather first, and its message names
    --tsc share as the way to give copies their representative's counter (before: --sdc-exclude only)."""
    r = echorun(["--no-store", "--sdc", "detect", "-n", "2", "--clones", "2", *programs["tsc_balance"]],
                tmp_path / "run")
    assert r.returncode == 20, r.stderr
    flagged = [e for e in read_events(tmp_path / "run") if e.kind == "divergence"]
    assert flagged and flagged[0].function == "MPI_Allgather", flagged  # the first: the cycle counts
    assert "--tsc share gives copies their representative's counter" in flagged[0].detail
    assert "--tsc share" in r.stderr


def test_gathered_cycle_counts_outvoted_nowhere_say_how_to_share_the_counter(programs, tmp_path):
    """The same code under three copies and --sdc vote without --tsc share: no two copies' cycle counts agree, the
    vote cannot decide and stops the job (exit 20), saying the bytes could be cycle counts read with rdtsc and that
    --tsc share gives copies their representative's counter (before: a counter value only when it was read less
    than a day after the machine started, and never --tsc share)."""
    r = echorun(["--no-store", "--sdc", "vote", "-n", "2", "--clones", "3", *programs["tsc_balance"]],
                tmp_path / "run")
    assert r.returncode == 20, r.stderr
    stops = [ln for ln in r.stderr.splitlines() if "differs from copy 0 in MPI_Allgather" in ln]
    assert stops, r.stderr
    assert all("--tsc share gives them their representative's" in ln for ln in stops), stops


def test_a_random_number_is_not_called_a_counter_value(programs, tmp_path):
    """A run tag made from a random number differs between copies by nature; --sdc stop describes the differing
    bytes, and must not call them a time-stamp counter value (before: on a host up for less than a day, any
    integer below the counter was)."""
    r = echorun(["--no-store", "--sdc", "stop", "-n", "2", "--clones", "2", *programs["run_tag"]], tmp_path / "run")
    assert r.returncode == 20, r.stderr
    stops = [ln for ln in r.stderr.splitlines() if "differs from copy 0 in MPI_Allreduce" in ln]
    assert stops, r.stderr
    assert all("time-stamp counter" not in ln for ln in stops), stops
