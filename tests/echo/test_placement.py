"""Placement of copies (echo/placement.py): the policy's choices, and real jobs on simulated hosts: network
namespaces made here, each with its own host name (UTS namespace) and address on a bridge, which Open MPI's
launcher reaches through an agent that enters the namespace (as ssh would reach a node)."""

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from echo import modes
from echo.placement import PlacementError, default_policy, place, read_hosts
from echo.plan import Options
from tests.conftest import echorun, lines_by_rank, mpirun_native

PROCS = [(0, 0, 0), (1, 1, 0), (2, 0, 1), (3, 1, 1)]  # (real, app, copy): 2 ranks x 2 copies, as echo lays them out


def test_same_host_and_other_host():
    same = place(PROCS, [("a", 2), ("b", 2)], "same-host", "asked")
    assert same.host_of == {0: "a", 2: "a", 1: "b", 3: "b"}
    apart = place(PROCS, [("a", 2), ("b", 2)], "other-host", "asked")
    assert apart.host_of == {0: "a", 2: "b", 1: "a", 3: "b"}
    assert apart.rankfile() == "rank 0=a slot=0\nrank 1=a slot=1\nrank 2=b slot=0\nrank 3=b slot=1\n"
    assert apart.describe({0: [0, 2], 1: [1, 3]}) == "placement: copies other-host (asked): rank 0: a b; rank 1: a b"


def test_placement_errors_name_the_fix():
    with pytest.raises(PlacementError, match="rank 0 has 2 copies and only 1 hosts have room.*--copies same-host"):
        place(PROCS, [("a", 4)], "other-host", "asked")
    # rank 0 and its copy take b (most room), rank 1 starts on a (ties: the first) and its copy finds a full
    with pytest.raises(PlacementError, match="no slot left on a for rank 1 copy 1"):
        place(PROCS, [("a", 1), ("b", 3)], "same-host", "asked")
    with pytest.raises(PlacementError, match="4 processes, and the hosts have 3 slots"):
        place(PROCS, [("a", 1), ("b", 2)], "same-host", "asked")


def opts(**kw) -> Options:
    return Options(program=("./app",), nranks=2, **kw)


def test_default_policy_by_role():
    assert default_policy(modes.of("sdr").apart(opts()), {"replica"}) == ("other-host", "SDR replicas apart")
    assert default_policy(modes.of("clones").apart(opts(sdc="detect")), {"copy"}) == ("other-host", "SDC copies apart")
    assert default_policy(None, {"papi-set-1"}, ("papi-set-",)) == (
        "same-host", "counter sets and tools next to their representative")
    assert default_policy(modes.of("clones").apart(opts()), {"copy"})[0] == "same-host"


def test_hosts_from_hostfile_and_host(tmp_path):
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# nodes\nnode1 slots=4\nnode2 max_slots=2 slots=3\nnode3\n")
    assert read_hosts("x:2,y", str(hostfile)) == [("node1", 4), ("node2", 3), ("node3", 1), ("x", 2), ("y", 1)]
    with pytest.raises(PlacementError, match="slots must be a positive number"):
        read_hosts("x:zero", None)


def test_copies_need_hosts_and_no_mapping_of_the_users(programs, tmp_path):
    r = echorun(["-n", "2", "--clones", "2", "--copies", "other-host", *programs["hostname"]], tmp_path / "run")
    assert r.returncode == 2 and r.stderr.startswith("echorun: --copies needs the hosts to place copies on")
    r = echorun(["-n", "2", "--clones", "2", "--copies", "other-host", "--host", "a:2,b:2", "--mpirun-args",
                 "--map-by node", *programs["hostname"]], tmp_path / "run")
    assert r.returncode == 2
    assert r.stderr == "echorun: --copies and --mpirun-args --map-by both say where processes go: give one\n"


@pytest.mark.parametrize("policy", ["same-host", "other-host"])
def test_copies_where_the_policy_says(hosts, programs, tmp_path, policy):
    hostfile, agent, net, _ = hosts
    r = echorun(["-n", "2", "--clones", "2", "--copies", policy, "--hostfile", str(hostfile),
                 "--mpirun-args", f"--prtemca plm_ssh_agent {agent}", *programs["hostname"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    second = f"{net}.11" if policy == "same-host" else f"{net}.12"
    assert (f"echo: placement: copies {policy} (asked): rank 0: {net}.11 {second}; rank 1: "
            f"{net}.{11 if policy == 'other-host' else 12} {net}.12") in r.stderr
    reps = {rank: lines[0] for rank, lines in lines_by_rank(r.stdout).items()}
    assert reps == {0: "r0: host sim1 sum 1", 1: f"r1: host {'sim2' if policy == 'same-host' else 'sim1'} sum 1"}
    for rank in (0, 1):
        copy = (tmp_path / "run" / "output" / f"rank{rank}.copy1.out").read_text()
        same = copy == reps[rank] + "\n"
        assert same == (policy == "same-host"), (rank, copy, reps[rank])


def test_sdr_replicas_apart_by_default(hosts, programs, tmp_path):
    hostfile, agent, net, _ = hosts
    r = echorun(["-n", "2", "--mode", "sdr", "--hostfile", str(hostfile), "--mpirun-args",
                 f"--prtemca plm_ssh_agent {agent}", *programs["hostname"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert (f"echo: placement: copies other-host (SDR replicas apart): rank 0: {net}.11 {net}.12; "
            f"rank 1: {net}.11 {net}.12") in r.stderr
    assert (tmp_path / "run" / "output" / "rank0.copy1.out").read_text() == "r0: host sim2 sum 1\n"


def test_sdr_survives_the_death_of_a_hosts_processes(hosts, programs, mpi, tmp_path):
    """Replicas apart: every application process of sim2 killed mid-run, each rank finishes in its replica on sim1
    with the native run's results. (Killing sim2's Open MPI daemon too ends the job: Open MPI 5.0's runtime does not
    survive a lost daemon, docs/clusters.md.)"""
    hostfile, agent, _, names = hosts
    run_dir, steps = tmp_path / "run", "20000"
    program = programs["sdr_stencil"]

    def running() -> bool:  # replica 1 of rank 1 (on sim2) has printed
        out = run_dir / "output" / "rank1.copy1.out"
        return out.exists() and out.stat().st_size > 0

    def kill_sim2() -> None:
        deadline = time.monotonic() + 120
        while not running() and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(0.5)  # into the run, well before its end
        pids = subprocess.run(["ip", "netns", "pids", names[1]], capture_output=True, text=True).stdout.split()
        killed.extend(p for p in pids if Path(f"/proc/{p}/comm").read_text().strip() == Path(program[0]).name)
        for pid in killed:
            os.kill(int(pid), signal.SIGKILL)

    killed: list[str] = []
    killer = threading.Thread(target=kill_sim2)
    killer.start()
    r = echorun(["-n", "2", "--mode", "sdr", "--hostfile", str(hostfile), "--mpirun-args",
                 f"--prtemca plm_ssh_agent {agent}", *program, steps], run_dir, timeout=300)
    killer.join()
    assert len(killed) == 2, killed  # replica 1 of both ranks: all of sim2's application processes
    assert r.returncode == 0, r.stderr
    assert "echo: SDR: rank 0 lost replica 1 and finished in replica 0" in r.stderr
    assert "echo: SDR: rank 1 lost replica 1 and finished in replica 0" in r.stderr
    native = mpirun_native(mpi, 2, [*program, steps])
    assert native.returncode == 0
    finals = [line for line in r.stdout.splitlines() if "final" in line]
    assert len(finals) == 2 and sorted(finals) == sorted(x for x in native.stdout.splitlines() if "final" in x)


def test_reinit_restarts_the_ranks_of_a_hosts_killed_processes(hosts, programs, mpi, tmp_path):
    """Reinit on two simulated hosts, 4 ranks (0, 1 on sim1; 2, 3 on sim2): every application process of sim2
    killed mid-run (its Open MPI daemon stays alive). The survivors restart ranks 2 and 3 on sim1 (sim2 holds no
    live rank: a lost host, docs/reinit.md) and the job ends with the native run's result."""
    hostfile, _, net, names = hosts
    # Reinit places a restarted rank by its host's name (MPI_Get_processor_name), which must be a name Open MPI
    # knows: the hostfile's address, so this agent names each namespace by its address
    agent = tmp_path / "agent.sh"
    agent.write_text(f"""#!/bin/sh
while [ "${{1#-}}" != "$1" ]; do shift; done
n=${{1#{net}.1}}; shift
exec ip netns exec {names[0][:-1]}$n unshare --uts sh -c "hostname {net}.1$n; $*"
""")
    agent.chmod(0o755)
    run_dir, program = tmp_path / "run", [*programs["reinit_iter"], "150", "30"]
    exe = Path(program[0]).name

    def sim2_pids() -> list[str]:
        pids = subprocess.run(["ip", "netns", "pids", names[1]], capture_output=True, text=True).stdout.split()
        return [p for p in pids if Path(f"/proc/{p}").exists() and Path(f"/proc/{p}/comm").read_text().strip() == exe]

    def kill_sim2() -> None:
        deadline = time.monotonic() + 120
        while len(sim2_pids()) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(2)  # into the run (150 iterations of 30 ms and more), well before its end
        killed.extend(sim2_pids())
        for pid in killed:
            os.kill(int(pid), signal.SIGKILL)

    killed: list[str] = []
    killer = threading.Thread(target=kill_sim2)
    killer.start()
    # --oversubscribe: a restarted rank needs a slot on sim1 while the failed one's still counts as taken;
    # --map-by ppr:2:node: two ranks per host (with --oversubscribe alone Open MPI put all four on sim1)
    r = echorun(["--no-store", "-n", "4", "--mode", "reinit", "--hostfile", str(hostfile), "--mpirun-args",
                 f"--oversubscribe --map-by ppr:2:node --prtemca plm_ssh_agent {agent}", *program],
                run_dir, timeout=300)
    killer.join()
    assert len(killed) == 2, (killed, r.stderr)  # ranks 2 and 3: all of sim2's application processes
    assert r.returncode == 0, r.stderr
    assert "echo: Reinit: ranks 2 3 failed; restarted" in r.stderr, r.stderr
    assert f"rank 2 (host lost) restarted on {net}.11" in r.stderr, r.stderr
    assert f"rank 3 (host lost) restarted on {net}.11" in r.stderr, r.stderr
    native = mpirun_native(mpi, 4, program)
    assert native.returncode == 0
    assert r.stdout == native.stdout
