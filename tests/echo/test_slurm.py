"""echorun inside a real Slurm allocation, as a user's salloc and sbatch run it: Debian's slurm-wlm (slurmctld and
slurmd started here on localhost with a generated slurm.conf and munge key, one partition of this machine's cores),
Open MPI from PyPI launched by srun through slurmd's PMIx, or by mpirun inside the allocation."""

import getpass
import os
import shutil
import socket
import subprocess
import time
from types import SimpleNamespace

import pytest

from tests.conftest import VENV_BIN, _free_port, run_group

DAEMONS = ("munged", "slurmctld", "slurmd", "salloc", "sbatch", "srun")


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A one-node Slurm cluster of this machine's cores; yields the environment its commands need."""
    missing = [d for d in DAEMONS if not shutil.which(d)]
    if missing:
        pytest.skip(f"Slurm is not installed ({', '.join(missing)} missing: apt-get install slurm-wlm munge "
                    "libpmix-dev; scripts/setup.sh does it as root)")
    base = tmp_path_factory.mktemp("slurm")
    for sub in ("munge", "state", "spool"):
        (base / sub).mkdir()
    key = base / "munge" / "key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    (base / "munge").chmod(0o700)
    sock = base / "munge" / "socket"
    node = socket.gethostname()
    conf = base / "slurm.conf"
    conf.write_text(f"""ClusterName=echotest
SlurmctldHost={node}(127.0.0.1)
SlurmUser={getpass.getuser()}
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
StateSaveLocation={base / 'state'}
SlurmdSpoolDir={base / 'spool'}
SlurmctldPidFile={base / 'slurmctld.pid'}
SlurmdPidFile={base / 'slurmd.pid'}
SlurmctldLogFile={base / 'slurmctld.log'}
SlurmdLogFile={base / 'slurmd.log'}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
NodeName={node} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} State=UNKNOWN
PartitionName=echo Nodes={node} Default=YES MaxTime=INFINITE State=UP
""")
    env = dict(os.environ, SLURM_CONF=str(conf))
    for var in [v for v in env if v.startswith("SLURM_") and v != "SLURM_CONF"]:
        del env[var]  # not inside another allocation
    daemons = [subprocess.Popen(["munged", "-F", "-f", f"--socket={sock}", f"--key-file={key}",
                                 f"--log-file={base / 'munge' / 'log'}", f"--pid-file={base / 'munge' / 'pid'}",
                                 f"--seed-file={base / 'munge' / 'seed'}"], env=env)]
    try:
        for _ in range(100):
            if sock.exists():
                break
            time.sleep(0.1)
        daemons += [subprocess.Popen([d, "-D", "-f", str(conf)], env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL) for d in ("slurmctld", "slurmd")]
        for _ in range(300):
            idle = subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True, text=True).stdout
            if idle.strip() == "idle":
                break
            assert all(d.poll() is None for d in daemons), "a Slurm daemon ended: see " + str(base)
            time.sleep(0.2)
        else:
            pytest.fail(f"the Slurm node never became idle ({idle.strip()}): see the logs in {base}")
        yield env
    finally:
        for d in reversed(daemons):
            d.terminate()
            try:
                d.wait(20)
            except subprocess.TimeoutExpired:
                d.kill()


@pytest.fixture(scope="module")
def pmix(slurm):
    """srun can start Open MPI's processes through PMIx (Slurm's pmix plugin loads the PMIx library)."""
    plugins = subprocess.run(["srun", "--mpi=list"], env=slurm, capture_output=True, text=True)
    if "pmix" not in plugins.stdout + plugins.stderr:
        pytest.skip(f"this Slurm has no PMIx plugin (srun --mpi=list: {plugins.stdout.split()}): Open MPI cannot be "
                    "launched by srun here")
    return slurm


def echorun_in(slurm, allocate: list[str], args: list[str], timeout: float = 240) -> subprocess.CompletedProcess:
    return run_group(["salloc", *allocate, str(VENV_BIN / "echorun"), *args], timeout, slurm)


def test_srun_fills_the_allocation(pmix, programs, tmp_path):
    r = echorun_in(pmix, ["-n", "4", "--overcommit"],
                   ["--run-dir", str(tmp_path / "run"), "--launcher", "srun", "--clones", "2", *programs["coll"]])
    assert r.returncode == 0, r.stderr
    assert "echo: -n 2: the allocation's 4 tasks, 2 copies of each rank" in r.stderr
    assert "echo: 2 ranks, 2 copies each: 4 processes" in r.stderr
    assert f"echo: command: {shutil.which('srun')} -n 4 --mpi=pmix --export=ALL,ECHO_PLAN=" in r.stderr
    ends = [(tmp_path / "run" / "procs" / f"{real}.status").read_text().split()[0] for real in range(4)]
    assert ends == ["finalized"] * 4
    native = run_group([str(VENV_BIN / "mpirun"), "--allow-run-as-root", "--oversubscribe", "-n", "2",
                        *programs["coll"]], 120)
    assert sorted(r.stdout.splitlines()) == sorted(native.stdout.splitlines())  # what copy 0 printed
    assert (tmp_path / "run" / "output" / "rank1.copy1.out").read_text() == \
        "".join(f"{line}\n" for line in r.stdout.splitlines() if line.startswith("r1:"))


def test_sbatch_job_with_mpirun_inside(slurm, programs, tmp_path):
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/sh\nexec {VENV_BIN / 'echorun'} --run-dir {tmp_path / 'run'} --clones 2 "
                      f"{' '.join(programs['coll'])}\n")
    out = tmp_path / "job.out"
    r = run_group(["sbatch", "--wait", "-n", "4", "--overcommit", "-o", str(out), str(script)], 240, slurm)
    text = out.read_text()
    assert r.returncode == 0, r.stderr + text
    assert "echo: -n 2: the allocation's 4 tasks, 2 copies of each rank" in text
    assert f"echo: command: {VENV_BIN / 'mpirun'} -n 4" in text
    assert "application exited with status 0" in text and "r1: " in text


def test_ulfm_modes_say_why_they_launch_with_mpirun(slurm, programs, tmp_path):
    r = echorun_in(slurm, ["-n", "4", "--overcommit"],
                   ["--run-dir", str(tmp_path / "run"), "--launcher", "srun", "--mode", "sdr", *programs["coll"]])
    assert r.returncode == 0, r.stderr
    assert "echo: -n 2: the allocation's 4 tasks, 2 replicas of each rank" in r.stderr
    assert ("echo: launcher: mpirun inside the allocation: --mode sdr runs on Open MPI's ULFM, which srun's direct "
            "launch does not support") in r.stderr
    assert f"echo: command: {VENV_BIN / 'mpirun'} -n 4" in r.stderr and "--with-ft ulfm" in r.stderr


def test_outside_an_allocation_n_is_needed(programs, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    r = run_group([str(VENV_BIN / "echorun"), "--clones", "2", *programs["coll"]], 60, env)
    assert r.returncode == 2
    assert r.stderr == ("echorun: -n (the ranks the application sees) is needed outside a Slurm allocation, "
                        "e.g. echorun -n 4 --clones 2 ./app\n")


def test_ranks_from_the_allocation():
    from echo import modes
    from echo.slurm import default_ranks

    def ranks(clones: str | None, mode: str, replicas: int, env: dict[str, str]) -> tuple[int, str]:
        return default_ranks(lambda: modes.of(mode).per_rank(clones, SimpleNamespace(replicas=replicas)), env)

    assert ranks("3", "clones", 2, {"SLURM_NTASKS": "12"}) == \
        (4, "-n 4: the allocation's 12 tasks, 3 copies of each rank")
    assert ranks(None, "sdr", 3, {"SLURM_NPROCS": "7"})[0] == 2  # 6 of 7 tasks used
    assert ranks(None, "clones", 2, {"SLURM_NTASKS": "5"})[0] == 5
    with pytest.raises(ValueError, match=r"--clones 0=4 gives ranks their own copies: give -n too"):
        ranks("0=4", "clones", 2, {"SLURM_NTASKS": "8"})
    with pytest.raises(ValueError, match=r"the allocation has 2 tasks, fewer than the 3 copies of one rank"):
        ranks("3", "clones", 2, {"SLURM_NTASKS": "2"})
