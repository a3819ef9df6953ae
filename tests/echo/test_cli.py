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


def test_docs_prints_the_documents_the_messages_name(tmp_path):
    """Messages say docs/NAME.md; `mpiecho docs` takes that name as written, or short, from any directory."""
    repo_doc = (Path(__file__).resolve().parents[2] / "docs" / "replication.md").read_text()
    for name in ("docs/replication.md", "replication.md", "replication"):
        r = subprocess.run([str(BIN / "mpiecho"), "docs", name], capture_output=True, text=True, cwd=tmp_path)
        assert r.returncode == 0 and r.stdout == repo_doc, r.stderr
    listing = run("mpiecho", "docs").stdout.splitlines()
    assert ["replication", "Replication: the rank model and the semantics of each call"] in \
        [line.split(maxsplit=1) for line in listing]
    assert len(listing) == len(list((Path(__file__).resolve().parents[2] / "docs").glob("*.md")))
    assert "mpiecho docs NAME" in run("echorun", "--help").stdout  # where a help's docs/NAME.md is read


def test_docs_refuses_an_unknown_name_in_one_line():
    for name in ("replicaton", "../README", "docs/images/page-run.png"):
        r = run("mpiecho", "docs", name)
        assert r.returncode == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1, r.stderr
        assert r.stderr.startswith(f"mpiecho: no document {name!r}") and "replication, rma" in r.stderr


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


def test_cflags_find_the_reinit_header(tmp_path):
    """`mpiecho --cflags` is all a program needs to include echo_reinit.h."""
    import shlex
    import subprocess
    import sys
    from pathlib import Path

    from echo.build import detect_mpi

    flags = subprocess.run([str(Path(sys.executable).parent / "mpiecho"), "--cflags"], capture_output=True, text=True,
                           check=True).stdout
    src = tmp_path / "uses.c"
    src.write_text('#include <mpi.h>\n#include "echo_reinit.h"\n'
                   "static int body(int c, char **v, MPI_Reinit_state_t s) { (void)c; (void)v; return (int)s; }\n"
                   "int main(int argc, char **argv) { return MPI_Reinit(&argc, &argv, body); }\n")
    subprocess.run([detect_mpi().mpicc, *shlex.split(flags), "-Wall", "-Werror", "-o", str(tmp_path / "uses"),
                    str(src)], check=True)
    # without echorun the program runs resilient_main once, state NEW (0)
    assert subprocess.run([str(tmp_path / "uses")]).returncode == 0
