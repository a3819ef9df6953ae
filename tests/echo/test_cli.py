import subprocess
import sys
from pathlib import Path

from echo import __version__

BIN = Path(sys.executable).parent


def run(*args):
    return subprocess.run([str(BIN / args[0]), *args[1:]], capture_output=True, text=True)


def test_version_and_help():
    assert run("mpiecho", "--version").stdout.strip() == f"echo {__version__}"
    assert run("echorun", "--version").stdout.strip() == f"echo {__version__}"
    h = run("mpiecho", "--help").stdout
    assert "run" in h and "build" in h
    assert "--clones" in run("echorun", "--help").stdout


def test_python_dash_m():
    r = subprocess.run([sys.executable, "-m", "echo", "--version"], capture_output=True, text=True)
    assert r.stdout.strip() == f"echo {__version__}"


def test_bad_clone_map_exits_2_with_the_reason():
    r = run("echorun", "-n", "4", "--clones", "7=2", "./app")
    assert r.returncode == 2
    assert "rank 7 does not exist with -n 4" in r.stderr


def test_missing_program():
    r = run("echorun", "-n", "2")
    assert r.returncode == 2 and "no program given" in r.stderr


def test_mpiecho_run_is_echorun(tmp_path):
    r = run("mpiecho", "run", "-n", "1", "--run-dir", str(tmp_path / "r"), "true")
    assert "1 ranks, 1 copy each" in r.stderr
