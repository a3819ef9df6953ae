"""The MPI families echo runs on, one `Family` each (echo/families/family.py: what echo needs to know of one), and
their registry: a new family is its declaration here and its line in FAMILIES, as on the C side it is its header
in preload/compat/. Nothing outside this package tests which family an MPI is: it reads the family's fields."""

from __future__ import annotations

import re

from echo.families.abi import MPI_ABI
from echo.families.family import Family, macro
from echo.families.intel import INTEL_MPI
from echo.families.mpich import MPICH, MVAPICH, OTHER
from echo.families.openmpi import OPEN_MPI_4, OPEN_MPI_5

__all__ = ["FAMILIES", "Family", "detect", "macro", "mpi_h_probe", "of", "wrapper_settings"]

# In the order they are recognised: the first whose mpi.h marker (and major version) matches is the MPI's, so a
# family made from another (Intel MPI, MVAPICH: their mpi.h defines MPICH_VERSION too) comes before it; OTHER,
# which matches any MPI, is last
FAMILIES: tuple[Family, ...] = (OPEN_MPI_4, OPEN_MPI_5, INTEL_MPI, MVAPICH, MPICH, MPI_ABI, OTHER)


def detect(macros: str) -> Family:
    """The family of the MPI whose mpi.h gives `macros` (`mpicc -E -dM`)."""
    return next(f for f in FAMILIES if f.matches(macros))


def mpi_h_probe() -> str:
    """The C source preprocessed to recognise an MPI (detect): mpi.h, and each family's ULFM header where that
    family's mpi.h was included and the header exists (Open MPI's ULFM is declared in mpi-ext.h)."""
    blocks = [f"#if defined({f.marker}) && defined(__has_include)\n#if __has_include(<{f.ulfm_header}>)\n"
              f"#include <{f.ulfm_header}>\n#endif\n#endif\n" for f in FAMILIES if f.ulfm_header and f.marker]
    return "#include <mpi.h>\n" + "".join(dict.fromkeys(blocks))  # once for the families of one lineage


def of(name: str) -> Family:
    """The family named `name` (Family.name)."""
    for f in FAMILIES:
        if f.name == name:
            return f
    raise KeyError(f"no MPI family {name!r}: expected one of {', '.join(f.name for f in FAMILIES)}")


def wrapper_settings() -> re.Pattern[str]:
    """The environment settings of the families' compiler wrappers that change the compiler or its flags
    (OMPI_CC, MPICH_CFLAGS, I_MPI_LDFLAGS, ...)."""
    prefixes = "|".join(sorted({f.wrapper_prefix for f in FAMILIES if f.wrapper_prefix}))
    return re.compile(rf"^({prefixes})_(CC|CFLAGS|CPPFLAGS|LDFLAGS|LIBS)$")
