"""What echo needs to know of an MPI family, declared in one place per family (one `Family` each, in this
package; the registry is `echo/families/__init__.py`), as `preload/compat/` holds each family's differences for
the C side: how its mpi.h says it is this family, what its mpirun is called to do (run as root, oversubscribe, give
the processes an environment, tag their lines, place them by a rankfile, run on ULFM) and what its installation
needs before its mpicc runs. Code outside this package never tests which family an MPI is: it reads these fields."""

from __future__ import annotations

import re
import string
from dataclasses import dataclass
from pathlib import Path

ANY_MAJOR = range(0, 10_000)


def macro(macros: str, name: str) -> str | None:
    """The value of `name` in the output of `mpicc -E -dM` (quotes removed), None when it is not defined."""
    m = re.search(rf"^#define {name} (.*)$", macros, re.M)
    return m.group(1).strip().strip('"') if m else None


class _Macros(dict):
    """The macros of mpi.h by name, for the naming templates: one not defined reads "?"."""

    def __init__(self, macros: str) -> None:
        super().__init__()
        self.macros = macros

    def __missing__(self, name: str) -> str:
        return macro(self.macros, name) or "?"


@dataclass(frozen=True)
class Family:
    name: str  # its key ("openmpi5"): what the tests and `mpiecho` name it by
    title: str  # how messages name it: "Open MPI" ("... is not Open MPI's")
    lineage: str  # the code base its library comes from ("MPICH" for Intel MPI, MVAPICH, the standard ABI build)

    # Recognising it, from mpi.h as its mpicc preprocesses it (`mpicc -E -dM`): the first family of the registry
    # whose marker is defined and whose major version (major_macro) is in `majors` is the MPI's
    marker: str  # the macro only its mpi.h defines ("": any MPI, the last family of the registry)
    naming: str  # its name printed in the plan: a template of mpi.h's macros, "Open MPI {OMPI_MAJOR_VERSION}..."
    major_macro: str = ""
    majors: range = ANY_MAJOR
    ulfm_macro: str = ""  # defined when the library has ULFM, the fault-tolerance extensions SDR and Reinit need
    ulfm_header: str = ""  # the header that declares ULFM, included where it exists (preload/compat/ includes it too)
    wrapper_prefix: str = ""  # its compiler wrapper's settings: PREFIX_CC, PREFIX_CFLAGS, ... (in the build's key)

    # Its launcher, mpirun (or mpiexec): what `mpirun --version` prints (one naming another family's launcher and
    # none of these is refused: it would start the processes of another MPI)
    version_says: tuple[str, ...] = ()
    root_options: tuple[str, ...] = ()  # what lets it run as root (Open MPI's refuses unless told)
    oversubscribe_options: tuple[str, ...] = ()  # what lets it start more processes than there are cores
    env_options: tuple[str, ...] = ()  # giving every process NAME=VALUE: a template of {name} and {value}
    tag_options: tuple[str, ...] = ()  # prefixing every line a process writes with its rank
    tagged_line: re.Pattern[bytes] = re.compile(rb"(?!)")  # such a line: the process's rank is group 1
    ulfm_options: tuple[str, ...] = ()  # running on ULFM: survivors are told of failures, not killed
    host_options: tuple[str, ...] = ("--host", "{hosts}")  # the hosts to run on, "a,b:2"
    hostfile_options: tuple[str, ...] = ("--hostfile", "{hostfile}")
    rankfile_options: tuple[str, ...] | None = None  # where each process runs, from a rankfile; None: it cannot
    srun_options: tuple[str, ...] = ()  # srun's (--launcher srun): the plugin its processes reach Slurm's PMI by
    # each process's standard output in a file of its own (the portability tests compare them with native runs)
    output_files_options: tuple[str, ...] = ()  # a template of {dir}
    output_file: str = ""  # the file of a rank: a template of {dir} and {rank}
    tuning_prefix: str = ""  # the library's tuning variables in the environment (MPIR_CVAR_, OMPI_MCA_)

    # Its installation, when it needs setting up before its mpicc runs (Intel MPI's): recognised by a program
    # beside the mpicc; `root_variable` names the installation (set to the mpicc's folder's parent unless set) and
    # `launcher_first` is the program its mpirun starts from PATH, which must be the one beside the mpicc
    beside_mpicc: str = ""
    root_variable: str = ""
    launcher_first: str = ""

    def matches(self, macros: str) -> bool:
        """Whether mpi.h (`mpicc -E -dM`'s output) is of this family."""
        if self.marker and macro(macros, self.marker) is None:
            return False
        major = macro(macros, self.major_macro) if self.major_macro else None
        return major is None or not major.isdigit() or int(major) in self.majors

    def mpi_name(self, macros: str) -> str:
        """"Open MPI 5.0.11", "MPICH 4.0.2", "Intel MPI 2021.18.1": the MPI as the plan names it."""
        return string.Formatter().vformat(self.naming, (), _Macros(macros))

    def has_ulfm(self, macros: str) -> bool:
        return bool(self.ulfm_macro and macro(macros, self.ulfm_macro))

    def launcher_options(self, is_root: bool, oversubscribe: bool) -> list[str]:
        """What its launcher needs to run as root and to start more processes than there are cores."""
        return [*(self.root_options if is_root else ()), *(self.oversubscribe_options if oversubscribe else ())]

    def env(self, env: dict[str, str]) -> list[str]:
        """The launcher's options that give every process of the job `env`."""
        return [a.format(name=name, value=value) for name, value in env.items() for a in self.env_options]

    def hosts(self, hosts: str) -> list[str]:
        return [a.format(hosts=hosts) for a in self.host_options]

    def hostfile(self, hostfile: str) -> list[str]:
        return [a.format(hostfile=hostfile) for a in self.hostfile_options]

    def rankfile(self, path: str) -> list[str]:
        return [a.format(path=path) for a in self.rankfile_options or ()]

    def output_files(self, folder: Path) -> list[str]:
        return [a.format(dir=folder) for a in self.output_files_options]

    def rank_output(self, folder: Path, rank: int) -> Path:
        return Path(self.output_file.format(dir=folder, rank=rank))
