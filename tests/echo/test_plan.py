"""The planner is pure: options in, argv/env/plan file out, no MPI needed."""

import pytest

from echo.families import MPICH, OPEN_MPI_4, OPEN_MPI_5
from echo.plan import Machine, Options, make_plan

MACHINE = Machine(mpirun="/x/mpirun", family=OPEN_MPI_5, cores=2, is_root=True, library="/c/libecho.so")


def plan(**kw):
    machine = kw.pop("machine", MACHINE)
    opts = dict(program=("./app", "a1"), nranks=4, run_id="r1", run_dir="/runs/r1")
    opts.update(kw)
    return make_plan(Options(**opts), machine)


def test_layout_puts_representatives_first():
    p = plan(clones="3")
    assert p.nprocs == 12
    assert [(q.app, q.copy) for q in p.procs[:4]] == [(0, 0), (1, 0), (2, 0), (3, 0)]
    assert [(q.app, q.copy) for q in p.procs[4:8]] == [(0, 1), (1, 1), (2, 1), (3, 1)]
    assert all(q.ncopies == 3 for q in p.procs)


def test_per_rank_layout():
    p = plan(clones="0=3,2=2")
    assert [(q.real, q.app, q.copy) for q in p.procs] == [
        (0, 0, 0), (1, 1, 0), (2, 2, 0), (3, 3, 0), (4, 0, 1), (5, 2, 1), (6, 0, 2)]


def test_argv_adds_what_the_machine_needs():
    p = plan(clones="2")
    assert p.argv[:3] == ["/x/mpirun", "-n", "8"]
    assert "--allow-run-as-root" in p.argv and "--oversubscribe" in p.argv
    assert "LD_PRELOAD=/c/libecho.so" in p.argv
    assert "ECHO_PLAN=/runs/r1/plan" in p.argv
    assert p.argv[-2:] == ["./app", "a1"]
    assert "LD_PRELOAD" not in p.env, "mpirun itself must not load the library"


def test_no_oversubscribe_when_cores_suffice_or_hosts_given():
    big = Machine("/x/mpirun", OPEN_MPI_5, cores=64, is_root=False, library="/l.so")
    p = make_plan(Options(program=("./a",), nranks=4, clones="2"), big)
    assert "--oversubscribe" not in p.argv and "--allow-run-as-root" not in p.argv
    p = plan(clones="2", hostfile="hosts")
    assert "--oversubscribe" not in p.argv and p.argv[p.argv.index("--hostfile") + 1] == "hosts"


def test_mpirun_args_pass_through_before_the_program():
    p = plan(mpirun_args=("--bind-to", "core"))
    assert p.argv[-4:] == ["--bind-to", "core", "./app", "a1"]


def test_mpich_gets_genv():
    m = Machine("/x/mpiexec", MPICH, cores=2, is_root=True, library="/l.so")
    p = make_plan(Options(program=("./a",), nranks=2, run_dir="/r"), m)
    assert ["-genv", "ECHO_PLAN", "/r/plan", "-genv", "LD_PRELOAD", "/l.so"] == p.argv[3:9]
    assert "--allow-run-as-root" not in p.argv


def test_plan_file_lists_every_process():
    text = plan(clones="0=2").text.splitlines()
    assert text[0] == "echo-plan 1"
    assert "app_size 4" in text and "real_size 5" in text and "run_dir /runs/r1" in text
    assert "proc 4 0 1 2 copy" in text and "proc 0 0 0 2 representative" in text


def test_output_all_tags_lines():
    assert "--output" in plan(output="all").argv


def test_output_all_tags_lines_as_each_launcher_knows():
    """Open MPI 4's mpirun knows --tag-output (not --output tag: exit 1), hydra -prepend-rank."""
    from dataclasses import replace

    for machine, option in ((replace(MACHINE, family=OPEN_MPI_4), "--tag-output"),
                            (replace(MACHINE, family=OPEN_MPI_5), "--output"),
                            (replace(MACHINE, family=MPICH), "-prepend-rank")):
        argv = plan(output="all", machine=machine).argv
        assert option in argv and not ({"--output", "--tag-output", "-prepend-rank"} - {option}) & set(argv), argv


def test_bad_output_mode():
    with pytest.raises(ValueError, match="--output loud"):
        plan(output="loud")


def test_summary_names_ranks_copies_roles():
    s = plan(clones="0=3").summary()
    assert s.startswith("4 ranks, copies rank 0: 3, others 1: 6 processes")
    assert "roles: copy, representative" in s


def test_papi_sets_give_roles_and_plan_lines():
    p = plan(clones="2", papi_sets=(("perf::TASK-CLOCK", "perf::CS"), ("perf::TASK-CLOCK", "perf::FAULTS")))
    assert [q.role for q in p.procs] == ["papi-set-0"] * 4 + ["papi-set-1"] * 4
    assert "papi_set_1 perf::TASK-CLOCK,perf::FAULTS" in p.text.splitlines()


def test_more_papi_sets_than_copies():
    with pytest.raises(ValueError, match="3 counter sets need 3 copies"):
        plan(clones="2", papi_sets=(("a",), ("b",), ("c",)))


@pytest.mark.parametrize("mode", [{"mode": "sdr", "replicas": 2}, {"mode": "reinit"}])
def test_fault_tolerant_modes_need_ulfm(mode):
    """On an MPI without ULFM, SDR and Reinit stop at planning, naming what they need and the MPI there is."""
    mpich = Machine("/usr/bin/mpirun.mpich", MPICH, cores=2, is_root=False, library="/l.so",
                    mpi="MPICH 4.0.2 (/usr/bin/mpicc.mpich)", ulfm=False)
    with pytest.raises(ValueError, match=r"needs an MPI with ULFM \(Open MPI >= 5 with ULFM.*MPICH 4\.0\.2"):
        plan(machine=mpich, **mode)


def test_summary_names_the_mpi():
    m = Machine("/x/mpirun", OPEN_MPI_5, cores=2, is_root=True, library="/l.so", mpi="Open MPI 5.0.11 (/v/mpicc)")
    assert "mpi: Open MPI 5.0.11 (/v/mpicc)" in plan(machine=m, clones="2").summary()


def test_sdc_turns_malloc_s_unfilled_cache_off_after_the_program_s_tunables(monkeypatch):
    """Bytes a program never wrote must be alike in every copy (docs/sdc.md): the ranks, not mpirun, get it."""
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    assert not any("GLIBC_TUNABLES" in a for a in plan(clones="2").argv)
    assert "GLIBC_TUNABLES=glibc.malloc.tcache_count=0" in plan(clones="2", sdc="detect").argv
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2")
    p = plan(clones="2", sdc="detect")
    assert "GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.malloc.tcache_count=0" in p.argv
    assert "GLIBC_TUNABLES" not in p.env


def test_sdc_lays_every_process_out_alike():
    """Under --sdc the job starts with address space randomization off, and the summary says so (docs/sdc.md):
    return addresses a program leaves in memory it never wrote are then alike in every copy."""
    p = plan(clones="2", sdc="detect")
    assert p.same_layout and "address space randomization off" in p.summary()
    q = plan(clones="2")
    assert not q.same_layout and "randomization" not in q.summary()


def test_sdc_exclude_is_a_plan_line():
    p = plan(clones="2", sdc="stop", sdc_exclude="MPI_Bcast, MPI_Allgather")
    assert "sdc_exclude MPI_Bcast,MPI_Allgather" in p.text.splitlines()


def test_the_time_stamp_counter_is_shared_under_sdc_or_when_asked():
    """Under --sdc a copy reading its own counter is a false alarm in a code that gathers cycle counts: the counter
    is shared there unless --tsc own; without --sdc only with --tsc share (the trap costs microseconds a read);
    never for a rank without copies."""
    assert "tsc share" in plan(clones="2", sdc="detect").text.splitlines()
    assert "tsc share" in plan(clones="3", sdc="vote").text.splitlines()
    assert "tsc share" not in plan(clones="2").text.splitlines()
    assert "tsc share" in plan(clones="2", tsc="share").text.splitlines()
    assert "tsc share" not in plan(clones="2", sdc="detect", tsc="own").text.splitlines()
    assert "tsc share" not in plan(clones="1", sdc=None, tsc="share").text.splitlines()
