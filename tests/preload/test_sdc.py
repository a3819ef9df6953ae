"""SDC end to end: real runs with copies compared, bits flipped on purpose."""

import json

import pytest

from echo.sdc import EXIT_CORRECTED, EXIT_DIVERGED, read_events
from tests.conftest import echorun, lines_by_rank, mpirun_native


def events(run_dir, kind=None):
    return [e for e in read_events(run_dir) if kind is None or e.kind == kind]


@pytest.fixture(scope="module")
def clean_output(mpi, programs):
    r = mpirun_native(mpi, 2, programs["sdc_loop"])
    assert r.returncode == 0
    return lines_by_rank(r.stdout)


@pytest.mark.parametrize(("mode", "copies"), [("detect", 2), ("stop", 2), ("vote", 3), ("detect", 3)])
@pytest.mark.parametrize("name", ["sdc_loop", "p2p", "coll", "nonblocking", "anysource", "py_coll", "py_p2p"])
def test_clean_programs_do_not_diverge(programs, tmp_path, mode, copies, name):
    r = echorun(["--no-store", "--sdc", mode, "-n", "2", "--clones", str(copies), *programs[name]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert events(tmp_path / "run") == []
    assert f"SDC ({mode}): clean; exit status 0" in r.stderr


def test_detect_catches_the_flip_at_its_call(programs, tmp_path, clean_output):
    r = echorun(["--no-store", "--sdc", "detect", "--inject", "bitflip:rank=1,copy=1,call=20", "-n", "2",
                 "--clones", "2", *programs["sdc_loop"]], tmp_path / "run")
    assert r.returncode == EXIT_DIVERGED
    div = events(tmp_path / "run", "divergence")
    inj = events(tmp_path / "run", "injection")
    assert len(inj) == 1 and inj[0].call >= 20
    assert (div[0].app_rank, div[0].copy, div[0].call, div[0].function) == (1, 1, inj[0].call, inj[0].function)
    assert "SDC (detect): diverged; exit status 20" in r.stderr
    assert lines_by_rank(r.stdout) == clean_output, "detect does not change what the representatives compute"


def test_stop_ends_the_job_naming_rank_copy_call_and_byte(programs, tmp_path):
    r = echorun(["--no-store", "--sdc", "stop", "--inject", "bitflip:rank=0,copy=1,call=25,byte=3,bit=5",
                 "-n", "2", "--clones", "2", *programs["sdc_loop"]], tmp_path / "run")
    assert r.returncode == EXIT_DIVERGED
    (div,) = events(tmp_path / "run", "divergence")
    assert (div.app_rank, div.copy, div.first_byte) == (0, 1, 3)
    assert f"application rank 0: copy 1 differs from copy 0 in {div.function} (call #{div.call}" in r.stderr
    assert "first differing byte 3; stopping (--sdc stop)" in r.stderr
    assert "r0: done" not in r.stdout


@pytest.mark.parametrize("copy", [0, 2])
def test_vote_corrects_and_output_equals_the_clean_run(programs, tmp_path, clean_output, copy):
    """Even the representative (copy 0) is outvoted and corrected before its data leaves."""
    r = echorun(["--no-store", "--sdc", "vote", "--inject", f"bitflip:rank=1,copy={copy},call=30,byte=2",
                 "-n", "2", "--clones", "3", *programs["sdc_loop"]], tmp_path / "run")
    assert r.returncode == EXIT_CORRECTED, r.stderr
    assert lines_by_rank(r.stdout) == clean_output
    (fix,) = events(tmp_path / "run", "corrected")
    assert (fix.app_rank, fix.copy) == (1, copy)
    assert events(tmp_path / "run", "divergence") == []
    for c in (1, 2):
        out = (tmp_path / "run" / "output" / f"rank1.copy{c}.out").read_text()
        assert lines_by_rank(out) == {1: clean_output[1]}


def test_holes_of_a_derived_type_are_not_data(programs, tmp_path):
    """A flip in a hole of the vector type (every other double) is not a divergence of that send; one in the
    data is."""
    # calls: Init, Comm_rank, Comm_size, Type_vector, Type_commit (0-4), then 2 a step; the derived-type
    # Sendrecv follows step 4's pair: call 15
    for byte, expect in ((8, 0), (16, 1)):  # byte 8..15: the first hole; 16..23: the second element
        run = tmp_path / f"b{byte}"
        r = echorun(["--no-store", "--sdc", "detect", "--inject", f"bitflip:rank=0,copy=1,call=15,byte={byte}",
                     "-n", "2", "--clones", "2", *programs["sdc_loop"]], run)
        (inj,) = events(run, "injection")
        assert inj.detail.startswith(f"flipped bit 0 of byte {byte}")
        assert (inj.function, inj.call) == ("MPI_Sendrecv", 15)
        at_the_call = [e for e in events(run, "divergence") if e.call == 15]
        assert len(at_the_call) == expect, (byte, r.stderr)
        # the flipped double is the program's data all the same: later sends carry its effect
        assert events(run, "divergence"), "a corrupted value that the program uses shows up later"


def test_junit_for_nightly_runs(programs, tmp_path):
    junit = tmp_path / "sdc.xml"
    r = echorun(["--no-store", "--sdc", "detect", "--junit", str(junit), "--inject", "bitflip:rank=1,copy=1,call=9",
                 "-n", "2", "--clones", "2", *programs["sdc_loop"]], tmp_path / "run")
    assert r.returncode == EXIT_DIVERGED
    text = junit.read_text()
    assert 'failures="1"' in text and "rank 1 copies agree" in text and "<failure" in text


def test_divergence_in_the_store_and_report_first(programs, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    db = f"sqlite:///{tmp_path / 'echo.db'}"
    echorun(["--db", db, "--sdc", "detect", "--inject", "bitflip:rank=0,copy=1,call=9", "-n", "2", "--clones", "2",
             *programs["sdc_loop"]], tmp_path / "run")
    rep = subprocess.run([str(Path(sys.executable).parent / "mpiecho"), "report", "--db", db], capture_output=True,
                         text=True).stdout
    assert "DIVERGED" in rep
    ev_lines = rep[rep.index("events ("):].splitlines()[1:]
    assert ev_lines[0].strip().startswith("divergence: application rank 0 copy 1")
    data = json.loads(subprocess.run([str(Path(sys.executable).parent / "mpiecho"), "export", "--json", "--db", db],
                                     capture_output=True, text=True).stdout)
    assert data["diverged"] is True
    assert any(e["kind"] == "divergence" and e["call_seq"] >= 9 for e in data["events"])


def test_memflip_is_injected_and_reported(programs, tmp_path):
    r = echorun(["--no-store", "--sdc", "detect", "--inject", "memflip:rank=0,copy=1,after=0,seed=4",
                 "-n", "2", "--clones", "2", *programs["sdc_loop"]], tmp_path / "run")
    (inj,) = events(tmp_path / "run", "injection")
    assert inj.function == "memflip" and inj.detail.startswith("flipped bit 0 at address 0x")
    assert r.returncode in (0, EXIT_DIVERGED) or "job failed: application rank 0 copy 1" in r.stderr


# ---- programs written like real codes: timers, time budgets, zero counts with stray pointers ----


@pytest.mark.parametrize("name", ["timers", "timers_cxx", "py_timers", "py_timers_threads"])
def test_timers_reduced_and_printed_are_not_a_divergence(programs, tmp_path, name):
    """Each copy reads its representative's clocks (MPI_Wtime, gettimeofday, clock_gettime, time, clock,
    std::chrono, time.perf_counter ..., Python's clocks while its threads make the interpreter read the clock for
    its own waits): the timers every rank reduces and prints, and the step count a time budget
    decides, are the same on every copy, so a clean run of such a code is clean."""
    run = tmp_path / "run"
    r = echorun(["--no-store", "--sdc", "detect", "-n", "2", "--clones", "2", *programs[name]], run)
    assert r.returncode == 0, r.stderr
    assert events(run) == [], r.stderr
    assert "SDC (detect): clean; exit status 0" in r.stderr
    reps = lines_by_rank(r.stdout)
    assert any("steps" in line for line in reps[0])
    for rank in (0, 1):  # every copy printed exactly its representative's lines, timers and step counts included
        assert lines_by_rank((run / "output" / f"rank{rank}.copy1.out").read_text()) == {rank: reps[rank]}


def test_a_flip_in_a_timed_code_is_still_caught_at_its_call(programs, tmp_path):
    run = tmp_path / "run"
    r = echorun(["--no-store", "--sdc", "detect", "--inject", "bitflip:rank=1,copy=1,call=200", "-n", "2",
                 "--clones", "2", *programs["timers"]], run)
    assert r.returncode == EXIT_DIVERGED, r.stderr
    (inj,) = events(run, "injection")
    div = events(run, "divergence")
    assert (div[0].app_rank, div[0].copy, div[0].call) == (1, 1, inj.call)


@pytest.mark.parametrize(("mode", "copies"), [("detect", 2), ("stop", 2), ("vote", 3)])
def test_zero_counts_with_stray_pointers_stay_in_step(mpi, programs, tmp_path, mode, copies):
    """Alltoallv, Allreduce, Bcast and Send with nothing to move, their buffers NULL on some copies and wild
    addresses on others (legal: MPI reads nothing): the copies compare what MPI would read, nothing, and stay in
    step; the results are the native run's."""
    native = mpirun_native(mpi, 3, programs["sparse_exchange"])
    assert native.returncode == 0, native.stderr
    r = echorun(["--no-store", "--sdc", mode, "-n", "3", "--clones", str(copies), *programs["sparse_exchange"]],
                tmp_path / "run", timeout=90)
    assert r.returncode == 0, r.stderr
    assert f"SDC ({mode}): clean; exit status 0" in r.stderr
    assert lines_by_rank(r.stdout) == lines_by_rank(native.stdout)


@pytest.mark.parametrize("how", ["segv", "abort", "exit"])
def test_a_copy_that_dies_is_never_clean(programs, tmp_path, how):
    r = echorun(["--no-store", "--sdc", "detect", "-n", "2", "--clones", "2", *programs["crash"], "1", "1", how],
                tmp_path / "run")
    assert r.returncode != 0, r.stderr
    verdict = [line for line in r.stderr.splitlines() if line.startswith("echo: SDC (detect):")]
    assert verdict and verdict[0].startswith("echo: SDC (detect): incomplete: rank 1 copy 1"), verdict
    assert f"exit status {r.returncode}" in verdict[0]


def test_a_flip_that_changes_a_copys_path_ends_that_copy_not_the_job(programs, tmp_path):
    """The flip hits the loop's go-on flag that rank 0 broadcasts (call 10: Init, Comm_rank, Comm_size, then
    Sendrecv, Sendrecv, Allreduce, Bcast a step): its copy leaves the loop while its representative goes on. The
    copy cannot follow its representative any more: it ends there, and the job finishes with the divergence
    said, never a hang or a killed job."""
    run = tmp_path / "run"
    r = echorun(["--no-store", "--sdc", "detect", "--inject", "bitflip:rank=0,copy=1,call=10", "-n", "2",
                 "--clones", "2", *programs["timers"]], run, timeout=90)
    assert r.returncode == EXIT_DIVERGED, r.stderr
    assert sorted(lines_by_rank(r.stdout)) == [0, 1]  # the representatives finished the program
    div = events(run, "divergence")
    assert (div[0].app_rank, div[0].copy, div[0].call, div[0].function) == (0, 1, 10, "MPI_Bcast")
    (parted,) = events(run, "copy-parted")
    assert (parted.app_rank, parted.copy) == (0, 1)
    assert "SDC (detect): diverged; exit status 20" in r.stderr


@pytest.mark.parametrize("mode,copies", [("detect", 2), ("vote", 3), ("stop", 2)])
def test_a_copy_whose_path_parts_never_hangs_the_job(mpi, programs, tmp_path, mode, copies):
    """Rank 0's copies draw random tokens of their own, so they skip the step rank 1 names rank 0's process for: their
    paths part from their representative's at a call that carries no data. Under detect the copies end and the
    application finishes; under stop and vote the representative waits for every copy's data at each checked call,
    so the parted copy stops the job (exit 20, said): it waited for ever before."""
    native = mpirun_native(mpi, 2, programs["token_leader"])
    assert native.returncode == 0, native.stderr
    run = tmp_path / "run"
    # the token a copy sends differs by nature: left out, as the divergence's message advises
    r = echorun(["--no-store", "--sdc", mode, "--sdc-exclude", "MPI_Send", "-n", "2", "--clones", str(copies),
                 *programs["token_leader"]], run, timeout=90)
    assert r.returncode == EXIT_DIVERGED, r.stderr
    parted = events(run, "copy-parted")
    assert parted and {e.app_rank for e in parted} == {0}, r.stderr
    if mode == "detect":
        assert lines_by_rank(r.stdout) == lines_by_rank(native.stdout)  # the representatives finished
    else:
        assert "the job stops (--sdc stop and vote wait for every copy)" in r.stderr, r.stderr


@pytest.mark.parametrize("mode", ["detect", "stop"])
def test_a_divergence_in_a_threaded_code_names_its_openmp_threads(programs, tmp_path, mode):
    """CP2K with 2 OpenMP threads a rank wrote 4 different restart files in 4 native runs, so its copies differ
    as its native runs do, which no copy can be given; the divergence said only that the bytes differ.  Now,
    where the bytes look like nothing else, it says how many OpenMP threads the program runs and how to tell (two
    native runs; OMP_NUM_THREADS=1).  The flip is injected here, so that every run diverges; with one thread the
    note is not said."""
    for threads, noted in (("2", True), ("1", False)):
        run = tmp_path / f"run{threads}"
        r = echorun(["--no-store", "--sdc", mode, "--inject", "bitflip:rank=0,copy=1,call=0", "-n", "2", "--clones",
                     "2", *programs["omp_grid"]], run, env={"OMP_NUM_THREADS": threads})
        assert r.returncode == EXIT_DIVERGED, r.stderr
        div = events(run, "divergence")
        assert div and (div[0].app_rank, div[0].copy, div[0].function) == (0, 1, "MPI_Allreduce"), r.stderr
        note = f"the program runs {threads} OpenMP threads a process"
        assert (note in div[0].detail) == noted, div[0].detail
        assert (note in r.stderr) == noted, r.stderr


@pytest.mark.parametrize(("how", "mode", "copies"), [("testany", "detect", 2), ("waitany", "detect", 2),
                                                     ("testsome", "detect", 2), ("waitsome", "detect", 2),
                                                     ("testany", "vote", 3)])
def test_a_copy_that_polls_other_requests_parts_cleanly(mpi, programs, tmp_path, how, mode, copies):
    """Rank 0's copies take the spare process's path (a random token of their own) and poll one request of their
    own where their representative polls four: the index the representative completes (3: the worker sends its
    largest task first) is past the copy's array. A copy that took it died of SIGSEGV in echo's MPI_Testany (as
    CP2K's did once its clocks parted); now its path parts there, said, and the representatives finish (detect)
    or the job stops (vote waits for every copy)."""
    native = mpirun_native(mpi, 2, [*programs["task_farm_poll"], how])
    assert native.returncode == 0, native.stderr
    run = tmp_path / "run"
    # the token rank 0's copies send differs by nature: left out, as the divergence's message advises
    r = echorun(["--no-store", "--sdc", mode, "--sdc-exclude", "MPI_Send", "-n", "2", "--clones", str(copies),
                 *programs["task_farm_poll"], how], run, timeout=90)
    assert r.returncode == EXIT_DIVERGED, r.stderr
    assert "SIGSEGV" not in r.stderr and f"SDC ({mode}): diverged" in r.stderr, r.stderr
    parted = events(run, "copy-parted")
    assert parted and {e.app_rank for e in parted} == {0}, r.stderr
    call = {"testany": "MPI_Testany", "waitany": "MPI_Waitany", "testsome": "MPI_Testsome",
            "waitsome": "MPI_Waitsome"}[how]
    assert all(f"{call}: its representative completed" in e.detail for e in parted), [e.detail for e in parted]
    assert all("this copy's call has 1" in e.detail for e in parted), [e.detail for e in parted]
    if mode == "detect":
        assert lines_by_rank(r.stdout) == lines_by_rank(native.stdout)  # the representatives finished
    else:
        assert "the job stops (--sdc stop and vote wait for every copy)" in r.stderr, r.stderr
