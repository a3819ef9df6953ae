"""The README's hostfile example, and a launch mpirun refuses named as such (not as a program without MPI)."""

import os

from tests.conftest import echorun


def test_hostfile_as_the_readme_gives_it(programs, tmp_path):
    cores = os.cpu_count() or 1
    hosts = tmp_path / "hosts"
    hosts.write_text(f"localhost slots={cores}\n")  # one line per node, slots: its cores
    n = max(1, cores // 2)  # 2 copies of each rank: a core each
    r = echorun(["-n", str(n), "--clones", "2", "--hostfile", str(hosts), *programs["coll"]], tmp_path / "run")
    assert r.returncode == 0, r.stderr
    assert "--hostfile " + str(hosts) in r.stderr  # passed on to mpirun, as the plan says


def test_a_launch_mpirun_refuses_is_named_as_such(programs, tmp_path):
    n = 4 * (os.cpu_count() or 1)  # bound to a core each: more processes than this machine's cores
    hosts = tmp_path / "hosts"
    hosts.write_text(f"localhost slots={n}\n")
    r = echorun(["-n", str(n), "--hostfile", str(hosts), "--mpirun-args", "--bind-to core", *programs["p2p"]],
                tmp_path / "run")
    assert r.returncode != 0
    assert "binding" in r.stderr  # mpirun's own message, relayed
    assert "job failed: no process reached MPI_Init: mpirun could not start the job" in r.stderr
    assert "MPI program?" not in r.stderr
