"""Running a planned job: write the plan, start mpirun, relay output, and say
how the job ended (naming the application rank and copy of a process that died)."""

from __future__ import annotations

import errno
import os
import platform
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from echo import modes
from echo.build import detect_mpi, ensure_library
from echo.collectors import roles
from echo.hostload import LoadSampler
from echo.jobstop import JobStopper
from echo.plan import Machine, Options, Plan, make_plan, tagged_output
from echo.progress import say
from echo.runformat import runfiles
from echo.runformat.constants import EXIT_NOT_FIRED, EXIT_NOT_STORED, EXIT_NOT_UPLOADED
from echo.runformat.procstatus import read_status, wait_final
from echo.uploads import not_uploaded, upload_run

# mpirun itself failing to start, before any process exists: PRRTE's PMIx listener occasionally fails to bind
# (seen about once in a few hundred launches on one host). Nothing ran, so starting again loses nothing.
LAUNCHER_FAILED_TO_START = b"The PMIx server's listener thread failed to start"
LAUNCH_TRIES = 3
# echorun's status for a job that ran without echo (no process called MPI_Init): the run did not do what was
# asked, even if the program itself exited 0
NOT_AN_MPI_RUN = 2
# echorun's status for a job that succeeded but one of the outputs asked (--junit) could not be written after it
NOT_WRITTEN = 2


def new_run_id(program: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", Path(program).name)[:40] or "app"
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{name}-{secrets.token_hex(3)}"


def prepare(opts: Options) -> Plan:
    mpi = detect_mpi()
    lib = ensure_library(mpi)
    tools = {k: v for found in roles.hooks("machine") for k, v in found(mpi.mpirun).items()}  # Valgrind's
    machine = Machine(mpi.mpirun, mpi.family, os.cpu_count() or 1, os.geteuid() == 0, str(lib),
                      exec_wrapper=str(Path(__file__).with_name("exec.sh")), srun=shutil.which("srun"),
                      mpi=f"{mpi.name} ({mpi.mpicc})", ulfm=mpi.ulfm, **tools)
    plan = make_plan(opts, machine)
    why = (None if opts.hosts or opts.hostfile else unstartable(opts.program[0])) or unwritable(opts)
    if why:  # before a run directory or a stored run exists: nothing ran
        raise LaunchError(why)
    run_dir = Path(opts.run_dir)
    runfiles.write_run_dir(run_dir, plan.text, plan.files)
    return plan


def comparing(opts: Options, plan: Plan) -> bool:
    """Whether the run's end compares its records for slow cores (echo/perf.py): copies' compute phases, or tests."""
    return max(plan.copies) > 1 or bool(opts.perf_tests)


def load_for_after_job(store: bool, records: bool) -> None:
    """Import what the run's end needs, in a thread of its own while echorun only waits for mpirun: the store's
    modules (SQLAlchemy, numpy for the records' sums) and the comparison's (numpy). Behaviour is unchanged: the
    same modules are imported after the job, then found loaded. A failure here is left to that import to say."""
    try:
        if store:
            from echo.store import db, ingest  # noqa: F401
        if records:
            import numpy  # noqa: F401

            from echo import perf  # noqa: F401
    except Exception:  # noqa: BLE001, S110 (imported again after the job, which reports it)
        pass


class LaunchError(RuntimeError):
    """The job cannot start as asked; the message says why."""


def program_path(program: str) -> str:
    """The program's absolute path, found here, where the job starts (a name on PATH, or a path relative to this
    directory): whoever reads the run later (the store's ingest, a server it is uploaded to) resolves nothing."""
    found = shutil.which(program) if "/" not in program else program
    return os.path.realpath(found) if found else program


def unstartable(program: str) -> str | None:
    """Why `program` cannot start on this machine, or None. Only asked of jobs on this machine: with --host or
    --hostfile, the program is found on the hosts named, and mpirun says if it is not."""
    if "/" not in program:
        return None if shutil.which(program) else (f"{program}: no such program on PATH (give its path, "
                                                   f"e.g. ./{program})")
    path = Path(program)
    if not path.exists():
        return f"{program}: no such file (give the path of the program to run)"
    if path.is_dir() or not os.access(path, os.X_OK):
        return (f"{program}: not an executable program (compile it with mpicc, or run a script through its "
                f"interpreter, e.g. echorun -n 4 python3 {program})")
    return None


def unwritable(opts: Options) -> str | None:
    """Why the files echorun writes (the run directory, the JUnit report) could not be written, or None: found
    before the job, so that a path that cannot be written never costs a run."""
    run_dir = Path(opts.run_dir)
    default = run_dir.parent == runfiles.runs_root()
    where = (f"the runs directory {run_dir.parent} (set ECHO_RUNS_DIR, or give --run-dir)" if default else
             f"--run-dir {run_dir}")
    if run_dir.exists() and not run_dir.is_dir():
        return f"{where}: {run_dir} is a file, not a folder: name a folder"
    why = runfiles.cannot_create(run_dir / runfiles.PLAN)
    if why:
        return f"{where}: cannot write the run's files there: {why}; name a folder you can write"
    if opts.junit:
        junit = Path(opts.junit)
        why = f"{junit} is a folder" if junit.is_dir() else runfiles.cannot_create(junit)
        if why:
            return f"--junit {junit}: cannot write the report there: {why}; give a file in a folder you can write"
    return None


def run(opts: Options) -> int:
    """Run the job; returns the application's exit status."""
    plan = prepare(opts)
    say(plan.summary().replace("\n", "\necho: "))
    say(f"run {opts.run_id} in {opts.run_dir}")
    env = dict(os.environ, **plan.env)
    meta = {"run_id": opts.run_id, "program": opts.program[0], "argv": list(opts.program), "mode": opts.mode,
            "nranks": opts.nranks, "copies": plan.copies, "started_at": time.time(), "host": platform.node(),
            "program_path": program_path(opts.program[0])}
    for values in roles.hooks("meta"):  # what a role keeps in run.json for the store (PAPI's left-out events)
        meta.update(values(opts))
    # run.json is written three times, each time with what a crash after it would otherwise lose: here, before the
    # job, so that a run whose echorun never ends (killed, the machine down) still names its program, argv and mode
    # for `mpiecho ingest`; after the job, with its duration and status, before the verdicts, which read and compare
    # files for a while; and last with echorun's own status. Each write after the first reuses the room the first
    # held (runfiles.write_meta), so a disk that filled during the job still takes it.
    runfiles.write_meta(Path(opts.run_dir), meta)
    mode = modes.of(opts.mode)
    start = time.monotonic()
    stopper = JobStopper(Path(opts.run_dir))
    load = LoadSampler(Path(opts.run_dir))  # phase times judge cores only where the host was not busy (perf.py)
    deployment = 1
    # what the end of the run will import (the store's SQLAlchemy and numpy, the copies' comparison's numpy), loaded
    # while mpirun runs: most of a trivial job's own time after its end was these imports (bench/run_startup.py)
    loading = threading.Thread(target=load_for_after_job, args=(bool(opts.store), comparing(opts, plan)),
                               daemon=True)
    loading.start()
    while True:
        rc = launch(plan, env, opts, stopper)
        loading.join()  # done before anything else imports: two threads never import at once after the job
        again = None if stopper.signal else mode.relaunch(Path(opts.run_dir), plan.nprocs, deployment, say)
        if again is None:
            break
        deployment += 1
        env = dict(env, **again)
    if deployment > 1:
        meta.update(deployments=deployment)
    stopper.restore()
    load.stop()
    meta.update(duration=time.monotonic() - start, exit_status=stopper.status if stopper.signal else rc)
    if stopper.signal:  # the store says the run was interrupted, and by what (echo itself ended its processes)
        meta.update(interrupted=signal.Signals(stopper.signal).name)
    remove_channels(opts.run_id)
    if not stopper.signal and not runfiles.record_files(Path(opts.run_dir)):
        # no process reached MPI_Init, where echo starts recording: nothing to judge or to store
        for line in (describe_failures(plan, Path(opts.run_dir)) if rc else []) + never_started(rc, opts.run_dir):
            say(line)
        return rc or NOT_AN_MPI_RUN
    keep_meta(Path(opts.run_dir), meta)
    if stopper.signal:  # told to stop: no verdict on a job cut short, but what it did is kept
        say(f"job stopped by {signal.Signals(stopper.signal).name} after {meta['duration']:.1f} s; exit status "
            f"{stopper.status}")
        if opts.store:
            store_run(Path(opts.run_dir), opts.store, meta)
        return stopper.status
    ending = mode.ended(opts, plan, rc, deployment, say)  # mpirun's status, as the mode reads its processes' ends
    rc = ending.status
    for line in describe_failures(plan, Path(opts.run_dir)) if rc != 0 and not ending.explained else []:
        say(line)
    if comparing(opts, plan):  # copies' compute phases, or tests, tell slow cores (docs/perf.md)
        from echo import perf

        try:
            for line in perf.describe(perf.analyse(Path(opts.run_dir))):
                say(line)
        except (OSError, ValueError) as e:
            say(f"performance: the records could not be compared ({e})")
    for line in records_stopped(plan, Path(opts.run_dir)):
        say(line)
    if opts.output == "rep" and max(plan.copies) > 1:
        say(f"output of copies other than copy 0: {Path(opts.run_dir) / 'output'}")
    say(f"application exited with status {rc} after {meta['duration']:.1f} s")
    junit_written = True  # so far: the mode's verdict (SDC's) goes first into the JUnit file, the roles' after it
    try:
        rc = mode.verdict(opts, plan, ending, say)
    except OSError as e:  # its JUnit file: checked before the job, refused since (a full disk)
        say(f"could not write the JUnit report {opts.junit} ({e.strerror or e}); the run is stored all the same")
        rc, junit_written = rc or NOT_WRITTEN, False
    planned = say_injections(Path(opts.run_dir))
    if rc == 0 and not all(i.fired for i in planned):  # a test whose injection never fired did not pass
        say(f"exit status {EXIT_NOT_FIRED}: an injection never fired, so the run tested nothing of it")
        rc = EXIT_NOT_FIRED
    for verdict in roles.hooks("after_job"):  # what a role says of the run (the perturbation's digits)
        for line in verdict(opts, Path(opts.run_dir)):
            say(line)
    if opts.junit and junit_written:  # the roles' verdicts (memcheck's, sensitivity's) beside SDC's
        from echo import injections
        from echo.runformat import junit

        suites = [suite(opts, Path(opts.run_dir), meta["program_path"], meta["duration"])
                  for suite in roles.hooks("junit_suite", "registry")]
        suites.append(injections.junit_suite(planned, meta["duration"]))
        try:
            junit.add_suites(Path(opts.junit), [s for s in suites if s is not None], meta["duration"],
                             after_sdc=bool(opts.sdc))
            if not opts.sdc:
                say(f"JUnit report: {opts.junit}")
        except OSError as e:  # checked before the job; a disk that filled since loses this file, not the run
            say(f"could not write the JUnit report {opts.junit} ({e.strerror or e}); the run is stored all the same")
            rc = rc or NOT_WRITTEN
    meta.update(exit_status=rc)  # the store keeps the status echorun returns (a repaired Reinit job's is 0)
    keep_meta(Path(opts.run_dir), meta)
    if opts.store and not store_run(Path(opts.run_dir), opts.store, meta):
        rc = rc or EXIT_NOT_STORED  # a job that failed keeps its own status
    if opts.server and not upload_run(Path(opts.run_dir), opts.server, opts.token, opts.run_id):
        say(not_uploaded(Path(opts.run_dir), opts.run_id, opts.server))
        rc = rc or EXIT_NOT_UPLOADED  # a job that failed keeps its own status
    return rc


# personality(2): the persona's flag that turns address space randomization off for the programs exec'd after it
ADDR_NO_RANDOMIZE = 0x0040000
PERSONALITY_QUERY = 0xFFFFFFFF


def randomization_off() -> bool:
    """Address space randomization off for every program echorun starts from now on (mpirun, its daemons and the
    ranks they start on this host inherit it, as `setarch -R` gives it), so that they are laid out alike: the
    code addresses a program leaves in memory it never wrote are then the same in a representative and its
    copies (docs/sdc.md).  False where the kernel refuses it (a seccomp filter): the run goes on as before."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    current = libc.personality(PERSONALITY_QUERY)
    return current != -1 and libc.personality(current | ADDR_NO_RANDOMIZE) != -1


def launch(plan: Plan, env: dict[str, str], opts: Options, stopper: JobStopper) -> int:
    """Start mpirun and relay the job's output until it ends (again if mpirun failed to start, which loses
    nothing); returns its exit status once every process's status is final."""
    if plan.same_layout:
        randomization_off()
    for attempt in range(1, LAUNCH_TRIES + 1):
        if opts.output == "all" or tagged_output(opts):
            rc, launcher_failed = _run_relabelled(plan, env, stopper,
                                                  Path(opts.run_dir) if tagged_output(opts) else None,
                                                  opts.output == "all")
        else:
            rc, launcher_failed = _run_plain(plan.argv, env, stopper)
        started = any(read_status(Path(opts.run_dir), real) for real in range(plan.nprocs))
        if rc == 0 or not launcher_failed or started or attempt == LAUNCH_TRIES or stopper.signal:
            break
        say(f"mpirun failed to start its launcher before any process ran (a transient Open MPI failure); "
            f"starting again ({attempt + 1} of {LAUNCH_TRIES})")
    wait_final(Path(opts.run_dir), plan.nprocs)  # every verdict reads how each process ended
    return rc


def never_started(rc: int, run_dir: str) -> list[str]:
    """What to say of a job in which no process reached MPI_Init (where echo starts recording and cloning)."""
    if rc == 0:
        return ["the program never called MPI_Init: echo cloned, compared and recorded nothing, and the run is not "
                "stored (is it an MPI program, built with this MPI? `mpiecho build` names the library echo uses)",
                f"exit status {NOT_AN_MPI_RUN}: the program's own status was 0; its output files are in {run_dir}"]
    return [f"the job failed (exit status {rc}) before any process reached MPI_Init: echo recorded nothing and the "
            "run is not stored"]


def records_stopped(plan: Plan, run_dir: Path) -> list[str]:
    """Per process whose records stopped (a full disk, a quota, their bound), what it kept and what it lost: its
    calls after are in the store as per-function totals only (docs/records.md)."""
    from echo.runformat.records import RecordsError, read_lost, read_restart_lost

    lines, rings = [], 0
    for real in range(plan.nprocs):
        p = plan.proc(real)
        try:
            lost = read_lost(run_dir, real)
        except (RecordsError, OSError, ValueError) as e:
            lines.append(f"records of application rank {p.app} copy {p.copy}: {e}")
            continue
        if lost is not None and lost.ring:  # the default, not a loss: said once for the run
            rings += 1
        elif lost is not None:
            lines.append(f"application rank {p.app} copy {p.copy} (process {real}): {lost.text()}")
    if rings:
        lines.insert(0, f"records: {rings} of {plan.nprocs} processes kept call 0 and their last calls, the others as "
                     "per-function totals (the call timeline and the chrome and otf2 exports show the calls kept; "
                     "echorun --trace records every call)")
    for rank, pid, restarted in read_restart_lost(run_dir):  # Reinit's restarted processes: records/restarts/
        lines.append(f"records of application rank {rank}'s restarted process (pid {pid}): {restarted}"
                     if isinstance(restarted, RecordsError) else
                     f"application rank {rank}, restarted process (pid {pid}): {restarted.text()}")
    return lines[:8] + ([f"... and {len(lines) - 8} more processes whose records stopped (mpiecho report)"]
                        if len(lines) > 8 else [])


def say_injections(run_dir: Path) -> list:
    """Whether each planned injection fired: one that never did is said, never passes silently. Returns them
    (echo/injections.py's Injection, each marked fired or not)."""
    from echo import injections
    from echo.sdc import read_events

    planned = injections.check(run_dir, read_events(run_dir))
    for line in injections.describe(planned):
        say(line)
    return planned


def remove_channels(run_id: str) -> None:
    """The copies' shared-memory channels on this host (preload/core/echo_channel.c) that a job whose processes died
    before all of them started left behind: a finished job has removed its own."""
    for path in Path("/dev/shm").glob(f"echo-{run_id}-r*"):
        path.unlink(missing_ok=True)


def keep_meta(run_dir: Path, meta: dict) -> None:
    """run.json brought up to date after the job; a disk that refuses it is said, and the store still gets the run
    from what echorun holds in memory."""
    try:
        runfiles.write_meta(run_dir, meta)
    except OSError as e:
        say(f"could not update {run_dir / runfiles.RUN_JSON} ({e.strerror or e}); the store gets the run from memory")


def store_run(run_dir: Path, url: str, meta: dict | None = None) -> bool:
    """Ingest the run; a failure to store is reported, never hides the job's status. Whether it was stored."""
    from echo.store.db import describe, open_store
    from echo.store.ingest import ingest

    try:
        run_id = ingest(run_dir, open_store(url), meta)
    except Exception as e:  # noqa: BLE001 (the job's own exit status matters more)
        full = "disk is full" in str(e) or getattr(e, "errno", None) == errno.ENOSPC
        why = "its disk is full" if full else str(e)
        say(f"could not store the run in {describe(url)}: {why}; its files are kept in {run_dir}: store them "
            f"later with `mpiecho ingest {run_dir}`" + (" once there is room" if full else ""))
        return False
    say(f"stored run {run_id} in {describe(url)} (mpiecho report {run_id})")
    return True


# Relay threads end when mpirun's pipes close; after a stop, a process outside the job's reach could keep them
# open: echorun waits this long for the rest of the output, no longer.
RELAY_AFTER_STOP = 5.0


def _join_relays(threads: list[threading.Thread], stopper: JobStopper) -> None:
    for t in threads:
        t.join(RELAY_AFTER_STOP if stopper.signal else None)


def launcher_line(line: bytes) -> bytes:
    """PRRTE ends some of its messages (an abort's banner) with a NUL byte, which would start the next line
    written: dropped, and only there, so that the application's own bytes pass untouched. The last bytes of the
    stream may lack a newline (PRRTE's "LAUNCHER JOB OBJECT NOT FOUND" after a job whose processes all died):
    given one, so that echorun's next line starts a line of its own."""
    line = line[1:] if line.startswith(b"\0") else line
    return line if line.endswith(b"\n") else line + b"\n"


def write_out(dst, data: bytes) -> None:  # noqa: ANN001 (a binary stream)
    """Relay a line; once the reader went away (echorun ... | head), the job's output is read and dropped, so
    that the job never blocks on a full pipe and no relay thread dies with a traceback."""
    try:
        dst.write(data)
        dst.flush()
    except (BrokenPipeError, ValueError):  # ValueError: the stream was closed after the pipe broke
        pass


def _run_plain(argv: list[str], env: dict[str, str], stopper: JobStopper) -> tuple[int, bool]:
    """mpirun's exit status, and whether its launcher failed to start (its standard error is watched for it)."""
    # a process group of its own: echorun can end mpirun and whatever it started (jobstop.py)
    proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, start_new_session=True)
    stopper.watch(proc)
    failed = threading.Event()

    def relay() -> None:
        for line in proc.stderr:
            if LAUNCHER_FAILED_TO_START in line:
                failed.set()
            write_out(sys.stderr.buffer, launcher_line(line))

    relayer = threading.Thread(target=relay, daemon=True)
    relayer.start()
    rc = proc.wait()
    _join_relays([relayer], stopper)
    return rc, failed.is_set()


def _run_relabelled(plan: Plan, env: dict[str, str], stopper: JobStopper, save: Path | None = None,
                    label: bool = True) -> tuple[int, bool]:
    """Output tagged by mpirun: each line prefixed with its application rank and copy (`label`), or as the
    program wrote it; with `save` (the run directory), copy 0's standard output is also kept in its output file
    there (runfiles.output_file)."""
    proc = subprocess.Popen(plan.argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    stopper.watch(proc)
    files: dict[int, object] = {}
    failed = threading.Event()
    tagged = plan.family.tagged_line

    def relay(src, dst, keep: bool) -> None:  # noqa: ANN001 (binary streams)
        for line in src:
            if LAUNCHER_FAILED_TO_START in line:
                failed.set()
            m = tagged.match(line)
            if m and int(m.group(1)) < plan.nprocs:
                p = plan.proc(int(m.group(1)))
                body = line[m.end():]
                if keep and save is not None and p.copy == 0:
                    if p.app not in files:
                        files[p.app] = open(runfiles.output_file(save, p.app, 0), "ab")  # noqa: SIM115 (closed below)
                    files[p.app].write(body)
                line = f"[rank {p.app} copy {p.copy}] ".encode() + body if label else body
            write_out(dst, line if m else launcher_line(line))

    threads = [threading.Thread(target=relay, args=(proc.stdout, sys.stdout.buffer, True), daemon=True),
               threading.Thread(target=relay, args=(proc.stderr, sys.stderr.buffer, False), daemon=True)]
    for t in threads:
        t.start()
    rc = proc.wait()
    _join_relays(threads, stopper)
    for f in files.values():
        f.close()
    return rc, failed.is_set()


def describe_failures(plan: Plan, run_dir: Path) -> list[str]:
    """Which processes caused a failed job, by application rank and copy.

    Processes the MPI runtime killed to end the job (SIGTERM) are named only when
    nothing else explains the failure."""
    statuses = {real: end for real in range(plan.nprocs) if (end := read_status(run_dir, real))}
    signalled, exited, aborted, unfinished, terminated = [], [], [], [], []
    for real, end in sorted(statuses.items()):
        p = plan.proc(real)
        who = f"application rank {p.app} copy {p.copy} (process {real}"
        who += f", pid {end.pid})" if end.pid else ")"
        where = " in MPI_Finalize" if end.state == "finalizing" else ""
        if end.state == "aborted":  # a copy's own MPI_Abort or exit (echo_copy_aborts, _exits): it ended with the job
            aborted.append(f"{who} {end.text()} (its own output says why)")
        elif end.signal and end.state != "finalized":
            line = f"{who} was killed by {end.signal_name} ({signal.strsignal(end.signal)}){where}"
            (terminated if end.signal == signal.SIGTERM else signalled).append(line)
        elif end.state in ("started", "finalizing") and end.exit_status is None:
            unfinished.append(f"{who} ended without MPI_Finalize (it exited early or was killed)" if not where else
                              f"{who} ended in MPI_Finalize (it was killed)")
        elif end.state == "started" or end.exit_status:  # mpirun ends the others once one exits non-zero
            how = "ended without MPI_Finalize" if end.state == "started" else "exited after MPI_Finalize"
            exited.append((end.time, f"{who} {how} (exit status {end.exit_status})"))
    never = [r for r in range(plan.nprocs) if r not in statuses]
    exited = [line for _, line in sorted(exited)]  # the first to exit is the one mpirun reports
    if len(exited) > 1:
        exited[1:] = [f"... and {len(exited) - 1} more that exited (mpirun reports the first)"]
    lines = signalled or exited or aborted or unfinished or terminated
    if never and not lines:
        lines = [f"processes {never} never reached MPI_Init (they ended before it)"] if len(never) < plan.nprocs else [
            "no process reached MPI_Init: mpirun could not start the job (its message above says why, e.g. more "
            "processes bound than cores, a host it cannot reach), or the program ends before MPI_Init"]
    return ["job failed: " + line for line in lines[:8]] + (
        [f"... and {len(lines) - 8} more"] if len(lines) > 8 else []
    )
