"""Command line: `echorun` launches; `mpiecho` does everything else."""

from __future__ import annotations

import argparse
import difflib
import gc
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from echo import __version__, modes
from echo.build import BuildError, detect_mpi, ensure_library
from echo.collectors import roles
from echo.modes.clones import junit_says
from echo.plan import Options
from echo.runformat import runfiles
from echo.runformat.copymap import CopyMapError


class Parser(argparse.ArgumentParser):
    """argparse, with errors in one line that suggest the option meant (--colnes: did you mean --clones?)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        unknown = message.removeprefix("unrecognized arguments: ") if message.startswith("unrecognized") else ""
        hints = [self.suggest(word) for word in unknown.split() if word.startswith("-")]
        hint = "".join(f" ({h})" for h in hints if h)
        self.exit(2, f"{self.prog}: {message}{hint}; {self.prog} --help lists the options\n")

    def options(self) -> set[str]:
        """Every option string of this parser and of its subcommands."""
        names = set(self._option_string_actions)
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    names |= sub.options() if isinstance(sub, Parser) else set(sub._option_string_actions)
        return names

    def suggest(self, word: str) -> str:
        close = difflib.get_close_matches(word.split("=")[0], sorted(self.options()), n=2, cutoff=0.7)
        return f"did you mean {' or '.join(close)}?" if close else ""


def add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", "-np", dest="nranks", type=int,
                   help="ranks the application sees (default inside a Slurm allocation: as many as fill it with "
                        "their copies, e.g. 2 in salloc -n 4 with --clones 2)")
    p.add_argument("--launcher", choices=("mpirun", "srun"), default="mpirun",
                   help="srun: launch through Slurm's srun (--mpi=pmix) inside or as an allocation; --mode sdr and "
                        "reinit need ULFM and launch with mpirun inside the allocation (docs/clusters.md)")
    p.add_argument("--clones", metavar="SPEC",
                   help="copies per rank: 3 (every rank), or 0=4,2=2 (per rank; others 1). "
                        "Default 1: interception only")
    p.add_argument("--host", dest="hosts", help="as mpirun --host")
    p.add_argument("--hostfile", help="as mpirun --hostfile")
    p.add_argument("--copies", dest="copies_policy", choices=("same-host", "other-host"),
                   help="where copies and replicas run, with --host/--hostfile: next to their representative or on "
                        "other hosts (default by role: SDC copies and SDR replicas apart, the others next to it); "
                        "the plan prints each rank's hosts")
    p.add_argument("--mpirun-args", default="", metavar="ARGS",
                   help="more options for mpirun (or srun, with --launcher srun), as one quoted string")
    p.add_argument("--max-per-core", type=int, default=32, metavar="N",
                   help="refuse before the job more than N processes per core (per slot with --host/--hostfile, per "
                        "task in a Slurm allocation); default 32, 0: no limit (docs/replication.md)")
    p.add_argument("--output", choices=("rep", "all"), default="rep",
                   help="rep: only copy 0 prints, copies' output goes to files in the run directory; "
                        "all: every copy prints, each line prefixed with its rank and copy")
    p.add_argument("--trace", action="store_true",
                   help="record every call (the call timeline, mpiecho export --format chrome|otf2); without it each "
                        "process keeps per-function totals, call 0 and its last 65536 calls (on with copies or "
                        "--perf-tests, whose verdicts read every call; docs/records.md)")
    p.add_argument("--records-max-mb", type=int, default=1024, metavar="MB",
                   help="with the whole trace, stop recording a process's calls when its record file reaches MB "
                        "(default 1024; 0: no bound)")
    p.add_argument("--perf-tests", type=int, default=0, metavar="N",
                   help="every process times a short fixed computation before every Nth MPI call, so slow cores "
                        "and hosts are found in runs without copies too (docs/perf.md)")
    p.add_argument("--run-dir", help="directory of this run's files (default: <runs dir>/<run id>; the runs dir "
                   "is $ECHO_RUNS_DIR, else $XDG_DATA_HOME/echo or ~/.local/share/echo)")
    p.add_argument("--db", metavar="URL", help="store to ingest the run into (default: $ECHO_DB, else "
                   "sqlite:///<runs dir>/echo.db); any SQLAlchemy URL, e.g. postgresql+psycopg://...")
    p.add_argument("--no-store", action="store_true", help="keep the run's files only")
    p.add_argument("--progress", action="store_true", help="say how far storing and uploading the run are, on "
                   "standard error, even when it is not a terminal (on a terminal, work that lasts says so anyway)")
    p.add_argument("--server", metavar="URL", help="also upload the run to an echo server (mpiecho serve) when it ends "
                   "(the server and token are checked before the job starts; exit status 24 if the job succeeded "
                   "but its upload failed: mpiecho upload sends it again)")
    p.add_argument("--token", help="upload token for --server (default: $ECHO_TOKEN)")
    p.add_argument("--file-view", choices=("on", "off"), default="on",
                   help="on (default): each copy reads the program's files and writes its own under the run "
                        "directory, so the representative's are the program's real output (docs/fileview.md); "
                        "off: copies do the program's file I/O in its own files, as before")
    p.add_argument("--tsc", choices=("share", "own"),
                   help="share (the default under --sdc): a copy's rdtsc reads its representative's time-stamp "
                        "counter, so codes that gather cycle counts are no SDC false alarm (the application's rdtsc "
                        "traps: microseconds per read, and per MPI call in which the MPI reads the counter, "
                        "bench/results/tsc_trap.md; processes the program starts read their own); own (the default "
                        "without --sdc): each copy reads its own counter at native cost")
    g = p.add_argument_group("silent data corruption (compare what copies hand to MPI)")
    g.add_argument("--sdc", choices=("detect", "stop", "vote"),
                   help="detect: report divergence and go on; stop: end the job at the first; "
                        "vote (3+ copies): the majority wins, the odd copy is corrected")
    g.add_argument("--sdc-every", type=int, default=1, metavar="N", help="check every Nth data-carrying call")
    g.add_argument("--sdc-only", choices=("all", "collectives"), default="all", help="which calls to check")
    g.add_argument("--sdc-exclude", metavar="MPI_X[,MPI_Y]", default="",
                   help="calls never checked (a divergence's message names the call when what it sends differs by "
                        "nature: an address, a time-stamp counter, memory the program never wrote)")
    g.add_argument("--inject", metavar="SPEC", help="fault injection: bitflip:rank=R,copy=K,call=N[,byte=B,bit=b] "
                   "or memflip:rank=R,copy=K,after=2s[,seed=S,bit=b]; in any mode slow:rank=R,copy=K,factor=F"
                   "[,from=N][,to=M] (F times slower compute phases), with the mode's own kinds after ';'. Calls are "
                   "numbered as mpiecho report numbers them (0: MPI_Init)")
    g.add_argument("--junit", metavar="FILE",
                   help=f"write the verdicts as JUnit XML (for nightly CI): {junit_says(' and ')}")
    roles.add_options(p)  # every role's options, from its Role (echo/collectors/roles.py)
    p.add_argument("--mode", choices=modes.NAMES, default=modes.NAMES[0],
                   help="reinit: on a process failure, restart the failed ranks and return every rank to its "
                        "MPI_Reinit / echo.reinit restart point (Open MPI's ULFM); --inject kill:rank=R,after=T "
                        "kills a process for testing. sdr: every rank runs as --replicas replicas and the job "
                        "survives the death of all but one replica of each rank (send-deterministic programs; "
                        "docs/sdr.md); --inject kill:rank=R,replica=K,call=N|after=T kills one")
    modes.add_options(p)  # every mode's options, from its module (echo/modes/)
    p.add_argument("program", nargs=argparse.REMAINDER, help="the MPI program and its arguments")


def run_command(args: argparse.Namespace) -> int:
    from echo.launch import new_run_id, run
    from echo.placement import read_hosts
    from echo.runformat.runfiles import runs_root

    if not args.program:
        print("echorun: no program given, e.g. echorun -n 4 --clones 2 ./app arg1", file=sys.stderr)
        return 2
    token = args.token or os.environ.get("ECHO_TOKEN")
    if args.server:  # before the job: a wrong token or a server that is down is found now
        from echo.uploads import check_server

        check_server(args.server, token)
    store = None
    if not args.no_store:  # before the job too: a run is stored after it, when a store that
        from echo.store.db import check_store, default_url  # cannot take it would lose it

        store = args.db or default_url()
        check_store(store)
    if args.nranks is None:  # inside a Slurm allocation: fill it, as mpirun's default does
        from echo.slurm import default_ranks

        mode = modes.of(args.mode)
        args.nranks, how = default_ranks(lambda: mode.per_rank(args.clones, args))
        print(f"echo: {how}", file=sys.stderr)
    run_id = new_run_id(args.program[0])
    role_options = roles.option_values(args, args.nranks)  # PAPI plans its sets here, and says them
    opts = Options(
        program=tuple(args.program),
        nranks=args.nranks,
        clones=args.clones,
        hosts=args.hosts,
        hostfile=args.hostfile,
        mpirun_args=tuple(shlex.split(args.mpirun_args)),
        output=args.output,
        run_id=run_id,
        run_dir=str(Path(args.run_dir).absolute() if args.run_dir else runs_root() / run_id),
        store=store,
        sdc=args.sdc,
        sdc_every=args.sdc_every,
        sdc_only=args.sdc_only,
        sdc_exclude=args.sdc_exclude,
        inject=args.inject,
        junit=str(Path(args.junit).absolute()) if args.junit else None,
        records_max_mb=args.records_max_mb,
        trace=args.trace,
        perf_tests=args.perf_tests,
        mode=args.mode,
        server=args.server,
        token=token,
        launcher=args.launcher,
        copies_policy=args.copies_policy,
        host_slots=tuple(read_hosts(args.hosts, args.hostfile)),
        max_per_core=args.max_per_core,
        file_view=args.file_view,
        tsc=args.tsc,
        **role_options,
        **modes.option_values(args),
    )
    return run(opts)


def demo_command(args: argparse.Namespace) -> int:
    """Compile the bundled example and run it with every rank cloned."""
    import subprocess

    from echo.build import cache_root, detect_mpi
    from echo.resources import EXAMPLES_DIR

    mpi = detect_mpi()
    exe = cache_root() / "examples" / "ring"
    exe.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([mpi.mpicc, "-O2", "-o", str(exe), str(EXAMPLES_DIR / "ring.c"), "-lm"], check=True)
    # echorun's own parser: every option at its default, as `echorun -n N --clones C ring` has them
    rc = run_command(run_parser().parse_args(["-n", str(args.nranks), "--clones", str(args.clones), "--output", "rep",
                                              *(["--db", args.db] if args.db else []), str(exe)]))
    if rc == 0:
        print()
        rc = report_command(argparse.Namespace(db=args.db, run=None, html=None))
    return rc


def _engine(args: argparse.Namespace, create: bool = False):  # noqa: ANN202 (an SQLAlchemy Engine)
    """The store named by --db; commands that only read pass create=False, so that they create nothing."""
    from echo.store.db import open_store

    return open_store(args.db, create=create)


def runs_command(args: argparse.Namespace) -> int:
    from echo.report import list_runs
    from echo.store.db import NoStore

    try:
        print(list_runs(_engine(args), args.limit))
    except NoStore as e:
        print(e)
    return 0


def report_command(args: argparse.Namespace) -> int:
    from echo.report import report

    if args.html:
        from sqlalchemy.orm import Session

        from echo.report import find_run
        from echo.server.pages import run_page

        with Session(_engine(args)) as s:
            run = find_run(s, args.run)
            Path(args.html).write_text(run_page(s, run_id=run.id, standalone=True))
        print(f"wrote the page of run {run.id} to {args.html}")
        return 0
    print(report(_engine(args), args.run))
    return 0


def serve_command(args: argparse.Namespace) -> int:
    import socket

    import uvicorn

    from echo.server.app import create_app

    if not 1 <= args.port <= 65535:
        raise ValueError(f"--port {args.port}: a TCP port is 1..65535 (default 8080)")
    # the address is tried before anything is made (the store, the storage): a busy port creates nothing
    try:
        infos = socket.getaddrinfo(args.host, args.port, type=socket.SOCK_STREAM)
        with socket.socket(infos[0][0], socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds it
            probe.bind(infos[0][4])
    except OSError as e:
        raise ValueError(f"--host {args.host} --port {args.port}: cannot listen there ({e.strerror or e}): "
                         "give another --port (or stop what listens there) or another --host") from None
    app = create_app(args.db, storage=args.storage, read_token=args.read_token or None)
    for line in app.state.cleaned:
        print(f"mpiecho serve: storage {app.state.settings.storage}: {line}", file=sys.stderr)
    uvicorn.run(app, host=args.host, port=args.port, log_level="info")
    return 0


def token_command(args: argparse.Namespace) -> int:
    import time

    from sqlalchemy.orm import Session

    from echo.server.tokens import create_token, list_tokens, revoke_token

    if args.token_command == "create":
        with Session(_engine(args, create=True)) as s:
            print(create_token(s, name=args.name))
        return 0
    from echo.store.db import NoStore

    try:
        engine = _engine(args)  # listing and revoking create no store
    except NoStore as e:
        if args.token_command == "list":
            print(e)
            return 0
        raise LookupError(f"{e}: it has no token to revoke") from None
    with Session(engine) as s:
        if args.token_command == "revoke":
            gone = revoke_token(s, which=args.which)
            print(f"revoked token {gone.id} ({gone.name}): it uploads nothing more; the runs it uploaded stay")
            return 0
        def when(t: float | None) -> str:
            return "" if t is None else time.strftime("%Y-%m-%d %H:%M", time.localtime(t))

        rows = [(str(t.id), t.name, when(t.created_at), when(t.revoked_at)) for t in list_tokens(s)]
    from echo.tables import table

    print(table([("id", "name", "created", "revoked"), *rows]) if rows
          else "no upload tokens (mpiecho token create makes one)")
    return 0


def export_command(args: argparse.Namespace) -> int:
    """Write a run in one of the formats of echo/export/ (docs/exports.md)."""
    import importlib

    from sqlalchemy.orm import Session

    from echo.export import DIRECTORY_FORMATS, FORMATS
    from echo.report import find_run

    if args.json and args.format not in (None, "json"):
        raise ValueError(f"--json and --format {args.format} name two formats: give one")
    fmt = args.format or "json"
    output = Path(args.output) if args.output else None
    # one rule for every format: what exists is never overwritten unless --force says so (docs/exports.md)
    if fmt in DIRECTORY_FORMATS:
        if output is None:
            raise ValueError(f"--format {fmt} writes a directory of files: give it with --output DIR")
        if output.exists() and not output.is_dir():
            raise ValueError(f"--output {output} is a file; --format {fmt} writes a directory: name a directory")
        if output.is_dir() and any(output.iterdir()) and not args.force:
            raise ValueError(f"--output {output} already exists and is not an empty directory: name a new one, or add "
                             "--force to write into it")
    elif output is not None:
        if output.is_dir() or not output.parent.is_dir():
            raise ValueError(f"--output {output}: expected a file in an existing directory")
        if output.exists() and not args.force:
            raise ValueError(f"--output {output} already exists: name a new file, or add --force to overwrite it")
    with Session(_engine(args)) as s:
        run = find_run(s, args.run)
        said = importlib.import_module(FORMATS[fmt]).write(s, run, output)
    if said:
        print(said, file=sys.stderr)
    return 0


def upload_command(args: argparse.Namespace) -> int:
    """Send a stored run (by id, or its directory) to an echo server again."""

    from echo.runformat.constants import EXIT_NOT_UPLOADED
    from echo.uploads import check_server, upload_run

    server = args.server or os.environ.get("ECHO_SERVER")
    if not server:
        raise ValueError("which server? --server URL (or ECHO_SERVER)")
    run_dir = Path(args.run)
    if not runfiles.is_run_dir(run_dir):  # not a run directory: a run id (or a prefix) in the store
        from sqlalchemy.orm import Session

        from echo.report import find_run

        with Session(_engine(args)) as s:
            run_dir = Path(find_run(s, args.run).run_dir)
    token = args.token or os.environ.get("ECHO_TOKEN")
    check_server(server, token)
    run_id = runfiles.read_meta(run_dir)["run_id"]
    return 0 if upload_run(run_dir, server, token, run_id) else EXIT_NOT_UPLOADED


def ingest_command(args: argparse.Namespace) -> int:
    """Store a run from its directory: one echorun could not store (its store's disk was full, or down)."""
    from echo.store.db import default_url, describe, open_store
    from echo.store.ingest import ingest

    run_dir = Path(args.run_dir)
    if not runfiles.is_run_dir(run_dir):
        raise ValueError(f"{run_dir} is not a run directory of echorun (no run.json in it)")
    url = args.db or default_url()
    run_id = ingest(run_dir, open_store(url))
    print(f"stored run {run_id} in {describe(url)} (mpiecho report {run_id})")
    return 0


def role_command(args: argparse.Namespace) -> int:
    """A role's subcommand (its Role's commands): with takes_run, on the stored run args.run names."""
    if not args.role_command.takes_run:
        return args.role_fn(args)
    from sqlalchemy.orm import Session

    from echo.report import find_run

    with Session(_engine(args)) as s:
        run = find_run(s, args.run)
    return args.role_fn(args, run)


def plan_command(args: argparse.Namespace) -> int:
    """The reliability plan of an SDR run: P(application lost) per replication degree."""
    import json

    from echo import reliability as rel

    replicas = rel.parse_replicas(args.replicas) if args.replicas else rel.DEFAULT_REPLICAS
    given = rel.load_overheads(args.overhead_from) if args.overhead_from else None
    plan = rel.plan_reliability(
        nranks=args.nranks,
        mtbf=rel.parse_duration(args.mtbf, "--mtbf"),
        runtime=rel.parse_duration(args.runtime, "--runtime"),
        overheads=rel.overheads_for(replicas, args.overhead, given),
        ranks_per_host=args.ranks_per_host,
        weibull_shape=args.weibull_shape,
        target=args.target,
    )
    print(json.dumps(rel.plan_as_dict(plan), indent=2) if args.json else rel.format_table(plan))
    return 0


def docs_command(args: argparse.Namespace) -> int:
    from echo import userdocs

    if args.name is None:
        width = max(map(len, userdocs.names()))
        for name in userdocs.names():
            print(f"{name:<{width}}  {userdocs.title(name)}")
        return 0
    print(userdocs.read(args.name), end="")
    return 0


def build_command(args: argparse.Namespace) -> int:
    print(ensure_library(detect_mpi(fresh=True)))  # the MPI asked afresh: what echorun keeps of it is renewed
    return 0


def _store_errors() -> tuple[type[Exception], ...]:
    """SQLAlchemy's errors, once the command has loaded SQLAlchemy (one that did not has none to catch): asked only
    when something went wrong, so that a command that opens no store never loads it (echorun --no-store)."""
    loaded = sys.modules.get("sqlalchemy.exc")
    return (loaded.SQLAlchemyError,) if loaded else ()


def _guarded(fn: Callable[[argparse.Namespace], int], args: argparse.Namespace, prog: str) -> int:
    """Run a command; what goes wrong reaches the user as one line, never as a traceback."""
    if getattr(args, "progress", False):
        from echo import progress

        progress.FORCED = True
    try:
        status = fn(args)
        sys.stdout.flush()  # here, where a closed pipe is caught, not at exit
        return status
    except BrokenPipeError:  # the reader went away (| head): stop quietly, as other tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nothing more to flush at exit
        return 128 + 13  # as a shell reports a process ended by SIGPIPE
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except (CopyMapError, BuildError, ValueError, LookupError, RuntimeError) as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    except _store_errors() as e:
        from echo.store.db import default_url, failure

        print(f"{prog}: {failure(getattr(args, 'db', None) or default_url(), e)}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"{prog}: {e.strerror or e}" + (f": {e.filename}" if e.filename else ""), file=sys.stderr)
        return 2


def run_parser() -> Parser:
    """echorun's parser (`mpiecho demo` runs the example through it too)."""
    p = Parser(prog="echorun", description="Run an MPI program with every rank transparently cloned. The documents "
               "named docs/NAME.md here and in messages: mpiecho docs NAME.")
    p.add_argument("--version", action="version", version=f"echo {__version__}")
    add_run_options(p)
    return p


def echorun_main(argv: list[str] | None = None) -> int:
    return _guarded(run_command, run_parser().parse_args(argv), "echorun")


def mpiecho_main(argv: list[str] | None = None) -> int:
    p = Parser(prog="mpiecho", description="echo: cloned MPI runs, their records and reports. The documents named "
               "docs/NAME.md here and in messages: mpiecho docs NAME.")
    p.add_argument("--version", action="version", version=f"echo {__version__}")
    p.add_argument("--cflags", action="store_true",
                   help="print the compiler flags for echo's headers (echo_reinit.h: MPI_Reinit and checkpoints)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    r = sub.add_parser("run", help="run a program with cloned ranks (the same as echorun)")
    add_run_options(r)
    r.set_defaults(fn=run_command)
    d = sub.add_parser("demo", help="run the bundled example (examples/ring.c) with every rank cloned, then report")
    d.add_argument("-n", dest="nranks", type=int, default=4)
    d.add_argument("--clones", type=int, default=3)
    d.set_defaults(fn=demo_command)
    db_help = "the store (default: $ECHO_DB, else sqlite:///<runs dir>/echo.db)"
    d.add_argument("--db", metavar="URL", help=db_help)
    for command in roles.commands():  # the roles' own: PAPI's events, the perturbation's sensitivity
        rc = sub.add_parser(command.name, help=command.help)
        if command.takes_run:
            rc.add_argument("run", nargs="?", help="run id, or a unique prefix of it (default: the latest)")
            rc.add_argument("--db", metavar="URL", help=db_help)
        for a in command.arguments:
            roles.add_option(rc, a)
        rc.set_defaults(fn=role_command, role_command=command, role_fn=command.run)
    ls = sub.add_parser("runs", help="list stored runs, newest first")
    ls.add_argument("--db", metavar="URL", help=db_help)
    ls.add_argument("--limit", type=int, default=20)
    ls.set_defaults(fn=runs_command)
    rp = sub.add_parser("report", help="report of a run (the latest when none is named)")
    rp.add_argument("run", nargs="?", help="run id, or a unique prefix of it")
    rp.add_argument("--db", metavar="URL", help=db_help)
    rp.add_argument("--html", metavar="FILE", help="write the run's web page as one static file instead")
    rp.set_defaults(fn=report_command)
    sv = sub.add_parser("serve", help="the echo server: JSON API, web reports (OpenAPI docs at /docs, "
                        "echo's documents at /docs/NAME.md)")
    sv.add_argument("--db", metavar="URL", help=db_help)
    sv.add_argument("--host", default="127.0.0.1")
    sv.add_argument("--port", type=int, default=8080)
    sv.add_argument("--storage", metavar="DIR", help="where uploaded runs' files go")
    sv.add_argument("--read-token", action="store_true", help="reads need a token too")
    sv.set_defaults(fn=serve_command)
    tk = sub.add_parser("token", help="upload tokens of the server")
    tk_sub = tk.add_subparsers(dest="token_command", required=True)
    tc = tk_sub.add_parser("create", help="create a token and print it (only its hash is kept)")
    tc.add_argument("--name", default="uploads")
    tc.add_argument("--db", metavar="URL", help=db_help)
    tc.set_defaults(fn=token_command)
    tl = tk_sub.add_parser("list", help="the tokens: id, name, when each was created and revoked (never the token)")
    tl.add_argument("--db", metavar="URL", help=db_help)
    tl.set_defaults(fn=token_command)
    tr = tk_sub.add_parser("revoke", help="revoke a token at once (the runs it uploaded stay)")
    tr.add_argument("which", metavar="TOKEN", help="its id (mpiecho token list), the token itself, or its name")
    tr.add_argument("--db", metavar="URL", help=db_help)
    tr.set_defaults(fn=token_command)
    up = sub.add_parser("upload", help="send a stored run to an echo server (again)")
    up.add_argument("run", help="run id (or a unique prefix of it), or a run directory")
    up.add_argument("--server", metavar="URL", help="the echo server (default: $ECHO_SERVER)")
    up.add_argument("--token", help="upload token (default: $ECHO_TOKEN)")
    up.add_argument("--db", metavar="URL", help=db_help)
    up.add_argument("--progress", action="store_true", help="say how far the upload is, on standard error, even "
                    "when it is not a terminal (on a terminal, an upload that lasts says so anyway)")
    up.set_defaults(fn=upload_command)
    ig = sub.add_parser("ingest", help="store a run from its run directory (one echorun could not store: its "
                        "store's disk was full or its server down)")
    ig.add_argument("run_dir", help="the run directory echorun named")
    ig.add_argument("--db", metavar="URL", help=db_help)
    ig.set_defaults(fn=ingest_command)
    ex = sub.add_parser("export", help="a run in the format of a tool: chrome, otf2, thicket, csv or json "
                        "(docs/exports.md)")
    ex.add_argument("run", nargs="?", help="run id, or a unique prefix of it (default: the latest)")
    ex.add_argument("--format", choices=("chrome", "otf2", "thicket", "csv", "json"),
                    help="chrome: a Chrome/Perfetto trace of every MPI call (file); otf2: an OTF2 archive for Vampir "
                         "(directory); thicket: Caliper JSON profiles per rank and copy for Thicket (directory); "
                         "csv: calls.csv and counters.csv (directory); json: the store's tables (default)")
    ex.add_argument("--json", action="store_true", help="the same as --format json")
    ex.add_argument("-o", "--output", metavar="PATH",
                    help="file or directory to write (json and chrome: standard output when not given)")
    ex.add_argument("--force", action="store_true", help="overwrite an existing file, or write into a directory "
                    "that is not empty (its files of the same names are replaced)")
    ex.add_argument("--db", metavar="URL", help=db_help)
    ex.add_argument("--progress", action="store_true", help="say how far the export is, on standard error, even "
                    "when it is not a terminal (on a terminal, an export that lasts says so anyway)")
    ex.set_defaults(fn=export_command)
    pl = sub.add_parser("plan", help="plan an SDR run: --reliability gives P(application lost) per replication "
                        "degree (docs/reliability.md)")
    pl.add_argument("--reliability", action="store_true", required=True,
                    help="the probability that the application is lost during its run, per replication degree "
                         "(the one plan for now)")
    pl.add_argument("-n", "-np", dest="nranks", type=int, required=True, help="ranks the application has")
    pl.add_argument("--mtbf", required=True, metavar="DURATION",
                    help="mean time between failures of one host: 6h, 90m, 2d or seconds")
    pl.add_argument("--runtime", required=True, metavar="DURATION", help="the run's length without replication")
    pl.add_argument("--replicas", metavar="R,R,...", help="replication degrees to compare (default 1,2,3,4)")
    pl.add_argument("--ranks-per-host", type=int, default=1, metavar="P",
                    help="ranks whose processes share a host, lost together when it fails (default 1)")
    pl.add_argument("--weibull-shape", type=float, metavar="K",
                    help="Weibull failures of shape K with mean MTBF (default: exponential, i.e. K = 1)")
    ov = pl.add_mutually_exclusive_group()
    ov.add_argument("--overhead", type=float, default=0.05, metavar="F",
                    help="runtime added by replication for every r > 1, as a fraction (default 0.05)")
    ov.add_argument("--overhead-from", metavar="FILE",
                    help='overhead per degree measured by the SDR benchmark, JSON: {"2": 0.03, "3": 0.06}')
    pl.add_argument("--target", type=float, default=1e-3,
                    help="the highest acceptable probability of losing the application (default 1e-3)")
    pl.add_argument("--json", action="store_true", help="print the plan as JSON")
    pl.set_defaults(fn=plan_command)
    dc = sub.add_parser("docs", help="echo's documents, the docs/NAME.md that help and messages name: list them, or "
                        "print one")
    dc.add_argument("name", nargs="?", metavar="NAME", help="the document: as messages name it (docs/sdr.md), or sdr")
    dc.set_defaults(fn=docs_command)
    b = sub.add_parser("build", help="build (or find in the cache) the preload library and print its path")
    b.set_defaults(fn=build_command)
    args, extra = p.parse_known_args(argv)
    if extra:  # said by the subcommand, so that the options suggested are its own
        (sub.choices.get(args.command) or p).error(f"unrecognized arguments: {' '.join(extra)}")
    if args.cflags:
        from echo.resources import PRELOAD_DIR

        print(f"-I{PRELOAD_DIR}")
        return 0
    if not getattr(args, "fn", None):
        p.print_help()
        return 2
    return _guarded(args.fn, args, "mpiecho")


def echorun_entry() -> None:
    status = echorun_main()
    # the process ends here: what it made is left to the kernel, not to the interpreter's last garbage collections,
    # which took 0.2-0.4 s after a stored run (SQLAlchemy's and numpy's objects; bench/run_startup.py). Only the
    # cyclic collector skips them: files and streams are closed and flushed at exit as before
    gc.freeze()
    sys.exit(status)


def mpiecho_entry() -> None:
    sys.exit(mpiecho_main())
