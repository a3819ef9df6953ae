"""Planning a run: from the user's options to the mpirun command, its
environment and the plan file the preload library reads.

`make_plan` is pure (no files, no processes), so it is tested without MPI.

Process layout: the representatives (copy 0) of application ranks 0..N-1 are
real ranks 0..N-1, so they are placed exactly as a native run would place its
ranks; then come copy 1 of every rank that has one, then copy 2, and so on.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path

from collectors import perturb as pt
from collectors import valgrind as vg
from echo import perf, sdr
from echo.copymap import parse_copies
from echo.reinit import ReinitError, parse_kills
from echo.sdc import SdcError, check_mode, parse_inject

PLAN_FORMAT = 1


@dataclass(frozen=True)
class Proc:
    real: int  # rank in the real MPI_COMM_WORLD
    app: int  # rank the application sees
    copy: int  # 0 = representative
    ncopies: int
    role: str


@dataclass(frozen=True)
class Options:
    program: tuple[str, ...]
    nranks: int
    clones: str | None = None
    hosts: str | None = None
    hostfile: str | None = None
    mpirun_args: tuple[str, ...] = ()
    output: str = "rep"  # "rep": copies' output to files; "all": every copy, prefixed
    run_id: str = "run"
    run_dir: str = "."
    store: str | None = None  # SQLAlchemy URL to ingest the run into after the job; None: do not store
    sdc: str | None = None  # detect, stop or vote
    sdc_every: int = 1  # check every Nth data-carrying call
    sdc_only: str = "all"  # or "collectives"
    inject: str | None = None  # bitflip:... or memflip:...
    junit: str | None = None  # where to write the SDC verdict as JUnit XML
    papi_sets: tuple[tuple[str, ...], ...] = ()  # counter set of copy 0, 1, ... (planned with PAPI)
    papi_unavailable: tuple[tuple[str, str], ...] = ()  # (event, PAPI's reason) the planner had to leave out
    valgrind: str | None = None  # TOOL or COPY:TOOL,...
    valgrind_ranks: str | None = None  # only these application ranks
    valgrind_slice: str | None = None  # callgrind:K
    slice_calls: int = 100  # MPI calls per slice epoch
    perturb: str | None = None  # rounding | noise:ulp=1,seed=7 | jitter:max=50us
    worlds: str | None = None  # lockstep (default) | independent
    perturb_rep: bool = False  # perturb copy 0 too
    records_max_mb: int = 1024  # bound on each process's record file (0: none)
    perf_tests: int = 0  # DGRP's explicit tests: before every Nth MPI call (0: none)
    mode: str = "clones"  # or "reinit" (echo/reinit.py) or "sdr" (echo/sdr.py)
    replicas: int = 2  # sdr: replicas of each rank
    exclude_slow: int | None = None  # sdr: judged rounds slow before a replica is excluded (0 never; None: auto)
    rejoin_after: int = 3  # sdr: judged rounds well (and caught up) before it is taken back
    checkpoint: str = "memory"  # reinit: "memory" or "files:DIR"
    reinit_hosts: str | None = None  # reinit: simulated host of each rank ("a,a,b"), to test placement on one machine
    server: str | None = None  # echo server to upload the run to
    token: str | None = None  # its upload token


@dataclass(frozen=True)
class Machine:
    mpirun: str
    flavor: str  # "openmpi" or "mpich"
    cores: int
    is_root: bool
    library: str  # path of libecho.so
    valgrind: str | None = None  # path of valgrind, if installed
    exec_wrapper: str = ""  # echo/exec.sh: starts a process under the tool its plan line names


@dataclass(frozen=True)
class Plan:
    argv: list[str]
    env: dict[str, str]  # to add to the launcher's environment
    text: str  # the plan file
    procs: list[Proc]
    nranks: int
    copies: list[int] = field(default_factory=list)

    @property
    def nprocs(self) -> int:
        return len(self.procs)

    def proc(self, real: int) -> Proc:
        return self.procs[real]

    def summary(self) -> str:
        """A short description of the run, printed before it starts."""
        kinds = sorted(set(self.copies))
        if kinds == [1]:
            how = "1 copy each (interception only)"
        elif len(kinds) == 1:
            how = f"{kinds[0]} copies each"
        else:
            how = "copies " + ", ".join(f"rank {r}: {c}" for r, c in enumerate(self.copies) if c != 1)
            how += ", others 1" if 1 in self.copies else ""
        roles = sorted({p.role for p in self.procs})
        return (
            f"{self.nranks} ranks, {how}: {self.nprocs} processes\n"
            f"roles: {', '.join(roles)}\n"
            f"command: {shlex.join(self.argv)}"
        )


def valgrind_roles(opts: Options, copies: list[int]) -> dict[tuple[int, int], str]:
    """(rank, copy) -> tool role ("memcheck", "callgrind-slice-0", ...)."""
    roles: dict[tuple[int, int], str] = {}
    if opts.valgrind:
        roles.update(vg.parse_tools(opts.valgrind, copies, opts.valgrind_ranks))
    if opts.valgrind_slice:
        if opts.slice_calls < 1:
            raise vg.ValgrindError(f"--slice-calls {opts.slice_calls}: an epoch is at least 1 MPI call")
        tool, _k, slices = vg.parse_slice(opts.valgrind_slice, copies, opts.valgrind_ranks)
        clash = sorted(set(slices) & set(roles))
        if clash:
            raise vg.ValgrindError(f"rank {clash[0][0]} copy {clash[0][1]} is given both --valgrind and a slice")
        roles.update({key: f"{tool}-slice-{s}" for key, s in slices.items()})
    return roles


def role(app: int, copy: int, opts: Options, tools: dict[tuple[int, int], str]) -> str:
    """One word naming what this copy does besides running the program."""
    if (app, copy) in tools:
        return tools[app, copy]
    if copy < len(opts.papi_sets):
        return f"papi-set-{copy}"
    if opts.perturb and (copy > 0 or opts.perturb_rep):
        kind = opts.perturb.split(":")[0]
        if kind == "rounding":
            return "rounding-" + ("nearest", "upward", "downward", "toward-zero")[copy % 4]
        return f"{kind}-{copy}"
    if opts.mode == "sdr":
        return "replica"
    return "representative" if copy == 0 else "copy"


def layout(copies: list[int], opts: Options, tools: dict[tuple[int, int], str] | None = None) -> list[Proc]:
    procs, real = [], 0
    for copy in range(max(copies)):
        for app, n in enumerate(copies):
            if copy < n:
                procs.append(Proc(real, app, copy, n, role(app, copy, opts, tools or {})))
                real += 1
    return procs


def valgrind_lines(opts: Options, procs: list[Proc], machine: Machine, tools: dict[tuple[int, int], str]) -> list[str]:
    if not tools:
        return []
    if not machine.valgrind:
        raise vg.ValgrindError("valgrind is not installed (apt-get install valgrind)")
    lines = []
    if opts.valgrind_slice:
        tool, k, _ = vg.parse_slice(opts.valgrind_slice, [p.ncopies for p in procs if p.copy == 0],
                                    opts.valgrind_ranks)
        lines.append(f"valgrind_slice {tool} {k} {opts.slice_calls}")
    for p in procs:
        if (p.app, p.copy) in tools:
            tool = tools[p.app, p.copy].split("-slice-")[0]
            cmd = vg.tool_command(machine.valgrind, tool, opts.run_dir, p.app, p.copy, "-slice-" in p.role)
            lines.append(vg.plan_line(p.real, cmd))
    return lines


def sdc_lines(opts: Options, copies: list[int]) -> list[str]:
    if opts.sdc is None:
        if opts.inject or opts.junit:
            raise SdcError("--inject and --junit go with --sdc detect|stop|vote")
        return []
    check_mode(opts.sdc, copies)
    if opts.sdc_every < 1:
        raise SdcError(f"--sdc-every {opts.sdc_every}: check every Nth call, N >= 1")
    if opts.sdc_only not in ("all", "collectives"):
        raise SdcError(f"--sdc-only {opts.sdc_only}: expected all or collectives")
    lines = [f"sdc {opts.sdc}", f"sdc_every {opts.sdc_every}", f"sdc_only {opts.sdc_only}"]
    if opts.inject:
        lines.append(f"inject {parse_inject(opts.inject, copies)}")
    return lines


def papi_lines(opts: Options, copies: list[int]) -> list[str]:
    if not opts.papi_sets:
        return []
    if len(opts.papi_sets) > min(copies):
        raise ValueError(f"{len(opts.papi_sets)} counter sets need {len(opts.papi_sets)} copies of every rank; "
                         f"--clones gives {min(copies)}")
    return ["papi_sets " + str(len(opts.papi_sets))] + [
        f"papi_set_{k} {','.join(events)}" for k, events in enumerate(opts.papi_sets)]


def perturb_lines(opts: Options, copies: list[int]) -> list[str]:
    if not opts.perturb:
        if opts.worlds == "independent":
            raise pt.PerturbError("--worlds independent goes with --perturb (copies would just repeat the run)")
        return []
    lines, worlds = pt.parse(opts.perturb, opts.worlds, copies)
    if worlds == "independent" and opts.sdc:
        raise pt.PerturbError("--sdc compares copies that take the same input; independent worlds differ by design")
    return lines + [f"perturb_rep {int(opts.perturb_rep)}"]


def sdr_copies(opts: Options) -> list[int]:
    """SDR: every rank's replicas, checked against the options it cannot combine with."""
    others = [name for name, given in (("--sdc", opts.sdc), ("--papi-sets", opts.papi_sets),
                                       ("--valgrind", opts.valgrind or opts.valgrind_slice),
                                       ("--perturb", opts.perturb), ("--checkpoint", opts.checkpoint != "memory"),
                                       ("--reinit-hosts", opts.reinit_hosts)) if given]
    sdr.check(opts.replicas, opts.clones, others)
    return [opts.replicas] * opts.nranks


def sdr_lines(opts: Options, nprocs: int, machine: Machine) -> list[str]:
    kills = sdr.parse_kills(opts.inject, opts.nranks, opts.replicas) if opts.inject else []
    return ["mode sdr", *kills, *sdr.exclusion_lines(opts.exclude_slow, opts.rejoin_after, nprocs, machine.cores)]


def split_slowdown(inject: str | None) -> tuple[str | None, str | None]:
    """--inject's slowdown (`slow:...`, one at most) and the rest (the mode's own kinds, `;`-separated)."""
    parts = [s.strip() for s in (inject or "").split(";") if s.strip()]
    slow = [p for p in parts if p.startswith("slow:")]
    if len(slow) > 1:
        raise perf.PerfError(f"--inject {inject}: one slow: injection at a time")
    return (slow[0] if slow else None), ";".join(p for p in parts if not p.startswith("slow:")) or None


def perf_lines(opts: Options, copies: list[int], slow: str | None) -> list[str]:
    """The slowdown injector and DGRP's explicit tests (echo/perf.py)."""
    if opts.perf_tests < 0:
        raise perf.PerfError(f"--perf-tests {opts.perf_tests}: a test every N MPI calls, N >= 1 (0: none)")
    lines = [f"slow {perf.parse_slow(slow, copies)}"] if slow else []
    return lines + ([f"perf_tests {opts.perf_tests}"] if opts.perf_tests else [])


def reinit_lines(opts: Options, copies: list[int]) -> list[str]:
    if opts.mode in ("clones", "sdr"):
        return []
    if opts.mode != "reinit":
        raise ReinitError(f"--mode {opts.mode}: expected clones, reinit or sdr")
    if max(copies) > 1 or opts.sdc or opts.papi_sets or opts.valgrind or opts.valgrind_slice or opts.perturb:
        raise ReinitError("--mode reinit runs one process per rank: it does not combine with --clones, --sdc, "
                          "--papi-sets, --valgrind or --perturb")
    if opts.checkpoint != "memory" and not (opts.checkpoint.startswith("files:") and len(opts.checkpoint) > 6):
        raise ReinitError(f"--checkpoint {opts.checkpoint}: expected memory or files:DIR")
    lines = ["mode reinit", f"checkpoint {opts.checkpoint}"]
    if opts.inject:
        lines += parse_kills(opts.inject, opts.nranks)
    if opts.reinit_hosts:
        hosts = opts.reinit_hosts.split(",")
        if len(hosts) != opts.nranks or not all(hosts):
            raise ReinitError(f"--reinit-hosts {opts.reinit_hosts}: give one host name per rank ({opts.nranks})")
        lines += [f"reinit_host_{r} {h}" for r, h in enumerate(hosts)]
    if opts.hostfile:
        lines += [f"reinit_slots_{host} {slots}" for host, slots in hostfile_slots(opts.hostfile)]
    return lines


def hostfile_slots(path: str) -> list[tuple[str, int]]:
    """(host, slots) of an Open MPI hostfile's lines that give slots."""
    out = []
    for line in Path(path).read_text().splitlines():
        words = line.split("#")[0].split()
        slots = [w.split("=", 1)[1] for w in words[1:] if w.startswith("slots=")]
        if words and slots and slots[0].isdigit():
            out.append((words[0], int(slots[0])))
    return out


def plan_text(opts: Options, procs: list[Proc], extra: list[str] = ()) -> str:
    lines = [
        f"echo-plan {PLAN_FORMAT}",
        f"run_id {opts.run_id}",
        f"run_dir {opts.run_dir}",
        f"app_size {opts.nranks}",
        f"real_size {len(procs)}",
        f"output {opts.output}",
        f"records_max_mb {opts.records_max_mb}",
        *extra,
    ]
    lines += [f"proc {p.real} {p.app} {p.copy} {p.ncopies} {p.role}" for p in procs]
    return "\n".join(lines) + "\n"


def make_plan(opts: Options, machine: Machine) -> Plan:
    if opts.output not in ("rep", "all"):
        raise ValueError(f"--output {opts.output}: expected 'rep' (copies' output to files) or 'all'")
    if not opts.program:
        raise ValueError("no program given: echorun -n 4 --clones 2 ./app [args]")
    copies = sdr_copies(opts) if opts.mode == "sdr" else parse_copies(opts.clones, opts.nranks)
    slow, others = split_slowdown(opts.inject)  # a slowdown goes with the other modes' --inject kinds
    timing = perf_lines(opts, copies, slow)
    opts = replace(opts, inject=others)
    tools = valgrind_roles(opts, copies)
    procs = layout(copies, opts, tools)
    reinit = sdr_lines(opts, len(procs), machine) if opts.mode == "sdr" else reinit_lines(opts, copies)
    sdc = [] if reinit else sdc_lines(opts, copies)  # --inject means kills in reinit and sdr modes
    extra = (timing + sdc + papi_lines(opts, copies) + valgrind_lines(opts, procs, machine, tools)
             + perturb_lines(opts, copies) + reinit)
    plan_path = f"{opts.run_dir}/plan"
    env = {"ECHO_PLAN": plan_path, "LD_PRELOAD": machine.library}
    argv = [machine.mpirun, "-n", str(len(procs))]
    if machine.flavor == "openmpi":
        if machine.is_root:
            argv.append("--allow-run-as-root")
        # Reinit respawns a failed rank while its slot still counts as taken
        if (len(procs) > machine.cores or opts.mode == "reinit") and not (opts.hosts or opts.hostfile):
            argv.append("--oversubscribe")
        if opts.mode in ("reinit", "sdr"):  # ULFM: survivors are told of failures instead of being killed
            argv += ["--with-ft", "ulfm"]
        if opts.mode == "reinit":  # coll/han decides per process whether it takes a communicator merged with
            argv += ["--mca", "coll", "^han"]  # restarted processes: their collectives then never match (a hang)
        if opts.output == "all" or opts.perturb:  # perturbation keeps copy 0's output in a file too
            argv += ["--output", "tag"]
        for name, value in env.items():
            argv += ["-x", f"{name}={value}"]
    else:  # MPICH's hydra: environment per job
        for name, value in env.items():
            argv += ["-genv", name, value]
    if opts.hosts:
        argv += ["--host", opts.hosts]
    if opts.hostfile:
        argv += ["--hostfile", opts.hostfile]
    argv += list(opts.mpirun_args)
    if tools:  # every process starts through the launcher, which puts the chosen ones under their tool
        argv.append(machine.exec_wrapper)
    argv += list(opts.program)
    # LD_PRELOAD goes to the application through mpirun's options only, so
    # mpirun and its daemons do not load the library themselves.
    return Plan(argv, {"ECHO_PLAN": plan_path}, plan_text(opts, procs, extra), procs, opts.nranks, copies)


# ---- reading a run directory's plan file back (ingest, diagnosis, injections) ----


def plan_procs(run_dir: Path) -> list[tuple[int, int, int, str]]:
    """(real, app, copy, role) of every process in the run's plan file."""
    out = []
    for line in (run_dir / "plan").read_text().splitlines():
        parts = line.split()
        if parts[:1] == ["proc"]:
            out.append((int(parts[1]), int(parts[2]), int(parts[3]), parts[5] if len(parts) > 5 else ""))
    return out


def plan_value(run_dir: Path, key: str) -> str | None:
    """The value of a plan line ("key value..."), None if the plan has none."""
    for line in (run_dir / "plan").read_text().splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return value
    return None
