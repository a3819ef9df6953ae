"""The reinit options: parsing of injected kills and the plan (no MPI)."""

import pytest

from echo.families import OPEN_MPI_5
from echo.modes.reinit import ReinitError, parse_kills
from echo.plan import Machine, Options, make_plan

MACHINE = Machine(mpirun="mpirun", family=OPEN_MPI_5, cores=8, is_root=False, library="/lib/libecho.so")


def test_kills_become_plan_lines():
    assert parse_kills("kill:rank=3,after=2s;kill:rank=0,after=1500ms;kill:rank=1,repair=2", 4) == [
        "reinit_kill_0 3 2.0", "reinit_kill_1 0 1.5", "reinit_kill_2 1 repair 2"]


def test_kills_at_a_call_or_in_mpi_finalize_become_plan_lines():
    assert parse_kills("kill:rank=1,at=finalize;kill:rank=2,at=MPI_Comm_split", 4) == [
        "reinit_kill_0 1 finalize", "reinit_kill_1 2 at MPI_Comm_split"]


@pytest.mark.parametrize("spec, message", [
    ("kill:rank=4,after=1s", "rank 4 does not exist"),
    ("kill:rank=1", "expected kill:rank=R,after=T"),
    ("bitflip:rank=1,copy=0,call=3", "expected kill:rank=R,after=T"),
    ("kill:rank=x,after=1s", "invalid literal"),
    ("kill:rank=1,after=-1s", "after must be >= 0"),
    ("kill:rank=1,repair=0", "repair >= 1"),
    ("kill:rank=1,after=1s,repair=1", "expected kill:rank=R,after=T"),
    ("kill:rank=1,at=the_end", "kill:rank=R,at=finalize"),
    ("kill:rank=1,at=MPI_Send;x", "expected kill:rank=R,after=T"),
])
def test_bad_kills_are_named(spec, message):
    with pytest.raises(ReinitError, match=message):
        parse_kills(spec, 4)


def test_reinit_plan_runs_ulfm_with_one_process_per_rank():
    plan = make_plan(Options(program=("./app",), nranks=4, mode="reinit", inject="kill:rank=1,after=2s"), MACHINE)
    assert plan.argv[plan.argv.index("--with-ft") + 1] == "ulfm"
    assert plan.argv[plan.argv.index("--mca") + 1: plan.argv.index("--mca") + 3] == ["coll", "^han"]
    assert plan.argv[plan.argv.index("osc") - 1: plan.argv.index("osc") + 2] == ["--mca", "osc", "^sm"]
    assert "reinit_watchdog 60" in plan.text
    assert plan.nprocs == 4
    assert "mode reinit" in plan.text and "reinit_kill_0 1 2.0" in plan.text
    assert "sdc" not in plan.text


def test_a_negative_failure_watchdog_is_refused():
    with pytest.raises(ReinitError, match="--failure-watchdog -1: seconds, >= 0"):
        make_plan(Options(program=("./app",), nranks=2, mode="reinit", failure_watchdog=-1), MACHINE)


@pytest.mark.parametrize("extra", [{"clones": "2"}, {"sdc": "detect"}, {"perturb": "rounding"}])
def test_reinit_does_not_combine_with_clones_or_roles(extra):
    with pytest.raises(ReinitError, match="one process per rank"):
        make_plan(Options(program=("./app",), nranks=2, mode="reinit", **extra), MACHINE)


def test_simulated_hosts_and_hostfile_slots_reach_the_plan(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("n1 slots=4\nn2 slots=2  # spare\nn3\n")
    plan = make_plan(Options(program=("./app",), nranks=3, mode="reinit", reinit_hosts="a,a,b",
                             hostfile=str(hostfile)), MACHINE)
    for line in ("reinit_host_0 a", "reinit_host_2 b", "reinit_slots_n1 4", "reinit_slots_n2 2"):
        assert line in plan.text
    assert "reinit_slots_n3" not in plan.text
    with pytest.raises(ReinitError, match="one host name per rank"):
        make_plan(Options(program=("./app",), nranks=3, mode="reinit", reinit_hosts="a,b"), MACHINE)
