"""The run directory and its plan file: the one place that knows their names and their format.

A run directory holds what echorun wrote before the job (the plan, run.json, a rankfile), what the processes
write during it (per process: procs/, records/ (a .rec file, and a .lost one if its records stopped), events/,
metrics/, perf/; per rank and copy: output/, and the folder of each tool some copies run under (a role's wrap,
named by the plan's `tool_dir` lines); a Reinit job started again keeps its earlier deployments'
in deployments/<n>/) and what the verdicts after it wrote (perf.json, reinit.done, sdr.*). The preload library
reads the plan (a line "key value..." each; its C reader is preload's plan reader) and writes the per-process files
under the names below. Everything in Python asks this module for a path, a plan value or the upload of a run.
"""

from __future__ import annotations

import io
import json
import os
import shlex
import tarfile
from collections.abc import Iterable
from pathlib import Path

PLAN_FORMAT = 1
PLAN = "plan"
RUN_JSON = "run.json"
RANKFILE = "rankfile"
PERF_JSON = "perf.json"
REINIT_DONE = "reinit.done"
SDR_LOST = "sdr.lost"  # left by the first process that saw every replica of a rank dead
SDR_SLOW = "sdr.slow"  # SDR's slow replicas excluded and taken back
ECHO_STOPPED = "echo.stopped"  # left by the first process echo stopped without MPI_Abort (SDR: a refused call)
HOSTLOAD_JSON = "hostload.json"
FILEVIEW_DIR = "fileview"  # the copies' own files and every process's log of the paths it changed (echo/fileview.py)
# folders made before the job starts (the processes write in them), besides the tools' (tool_dirs)
PROCESS_DIRS = ("procs", "output", "records", "events", "metrics")
# what an upload holds: the files of a run directory the store needs (a folder ends with "/"), besides the tools'
UPLOAD_MEMBERS = (RUN_JSON, PLAN, PERF_JSON, SDR_LOST, SDR_SLOW, "procs/", "records/", "events/", "metrics/",
                  "output/")
RUN_META_KEYS = ("run_id", "program", "argv", "nranks", "copies", "started_at")  # what run.json must hold


def runs_root() -> Path:
    """Where run directories go, and the store's SQLite file beside them, whatever the current directory:
    $ECHO_RUNS_DIR, else the user's data directory ($XDG_DATA_HOME/echo, or ~/.local/share/echo)."""
    if os.environ.get("ECHO_RUNS_DIR"):
        return Path(os.environ["ECHO_RUNS_DIR"]).absolute()
    data_home = os.environ.get("XDG_DATA_HOME", "")
    return (Path(data_home) if os.path.isabs(data_home) else Path.home() / ".local" / "share") / "echo"


def cannot_create(path: Path) -> str | None:
    """Why the file `path` (with the folders it needs) could not be created, found before a job without leaving
    anything: None if it can. A probe file is made and removed at once in the nearest existing folder (as root,
    os.access says yes to /proc and to read-only mounts)."""
    import tempfile

    folder = Path(path).absolute().parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        return f"{folder} is not a folder"
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".echo-check-"):
            pass
    except OSError as e:
        return f"{folder} is not writable ({e.strerror or e})"
    return None


# ---- per-process and per-copy files ----


def records_dir(run_dir: Path) -> Path:
    return Path(run_dir) / "records"


def record_file(run_dir: Path, real: int) -> Path:
    return Path(run_dir, "records", f"{real}.rec")  # one Path made, not three: called per process


def read_if_there(path: str | Path) -> bytes | None:
    """A per-process file's bytes, None when the process left none: one open and no stat before it (a run of
    thousands of processes reads thousands of these; a plain path, no Path made per file)."""
    try:
        fd = os.open(path, os.O_RDONLY)  # no buffered file object: most of these files are a line
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        parts = []
        while part := os.read(fd, 1 << 16):
            parts.append(part)
        return b"".join(parts)
    except IsADirectoryError:
        return None
    finally:
        os.close(fd)


def record_sizes(run_dir: Path) -> dict[int, int]:
    """Each record file's size in bytes, by real rank, from one listing of the folder (a stat per process would
    cost more than reading the records of a run of thousands of processes)."""
    return {real: size for real, (_, size) in record_listing(run_dir).items()}


def record_listing(run_dir: Path) -> dict[int, tuple[str, int]]:
    """Each record file's path and size in bytes, by real rank, from one listing of the folder."""
    try:
        entries = list(os.scandir(records_dir(run_dir)))
    except (FileNotFoundError, NotADirectoryError):
        return {}
    return {int(e.name[:-4]): (e.path, e.stat().st_size) for e in entries
            if e.name.endswith(".rec") and e.name[:-4].isdigit() and e.is_file()}


def _listing(run_dir: Path, folder: str, suffix: str) -> dict[int, str]:
    """The per-process files `<real><suffix>` in a folder of the run (procs, metrics, records), by real rank: one
    listing, so that a run of thousands of processes opens only the files there are, by plain paths."""
    try:
        names = os.listdir(os.path.join(run_dir, folder))
    except (FileNotFoundError, NotADirectoryError):
        return {}
    base = os.path.join(run_dir, folder, "")
    return {int(n[:-len(suffix)]): base + n for n in names if n.endswith(suffix) and n[:-len(suffix)].isdigit()}


def has_records(run_dir: Path) -> bool:
    """Whether the run's record folder is there (a run directory moved or deleted has none)."""
    return records_dir(run_dir).is_dir()


def lost_file(run_dir: Path, real: int) -> Path:
    """The summaries of the calls a process made after its records stopped (echo/runformat/records.py reads it)."""
    return Path(run_dir, "records", f"{real}.lost")


def lost_listing(run_dir: Path) -> dict[int, str]:
    """The .lost files there are, by real rank (lost_file's), from one listing."""
    return _listing(run_dir, "records", ".lost")


def record_files(run_dir: Path) -> list[Path]:
    """Every record file of a run, by real rank."""
    return sorted(records_dir(run_dir).glob("*.rec"), key=lambda p: int(p.stem))


def restart_record_files(run_dir: Path) -> dict[int, list[Path]]:
    """The record files of the processes a Reinit repair restarted (records/restarts/<rank>-<pid>.rec), by
    application rank, oldest pid first."""
    out: dict[int, list[Path]] = {}
    for path in (records_dir(run_dir) / "restarts").glob("*-*.rec"):
        rank, _, pid = path.stem.partition("-")
        if rank.isdigit() and pid.isdigit():
            out.setdefault(int(rank), []).append(path)
    return {rank: sorted(paths, key=lambda p: int(p.stem.partition("-")[2])) for rank, paths in sorted(out.items())}


def restart_lost_files(run_dir: Path) -> list[tuple[int, int, Path]]:
    """The lost-call summaries of the processes a Reinit repair restarted (records/restarts/<rank>-<pid>.lost, beside
    their record files), as (application rank, pid, path), by rank, oldest pid first."""
    out = []
    for path in (records_dir(run_dir) / "restarts").glob("*-*.lost"):
        rank, _, pid = path.stem.partition("-")
        if rank.isdigit() and pid.isdigit():
            out.append((int(rank), int(pid), path))
    return sorted(out)


def status_file(run_dir: Path, real: int) -> Path:
    return Path(run_dir, "procs", f"{real}.status")


def status_listing(run_dir: Path) -> dict[int, str]:
    """The status files there are, by real rank (status_file's), from one listing."""
    return _listing(run_dir, "procs", ".status")


def status_files(run_dir: Path) -> list[Path]:
    return list((Path(run_dir) / "procs").glob("*.status"))


def metrics_file(run_dir: Path, real: int) -> Path:
    return Path(run_dir, "metrics", f"{real}.txt")


def metrics_listing(run_dir: Path) -> dict[int, str]:
    """The metrics files there are, by real rank (metrics_file's), from one listing."""
    return _listing(run_dir, "metrics", ".txt")


def event_files(run_dir: Path) -> list[Path]:
    """Every process's events, those of a Reinit job's earlier deployments first (injections fired, repairs)."""
    earlier = sorted(Path(run_dir, "deployments").glob("*/events/*.jsonl"), key=lambda p: int(p.parts[-3]))
    return earlier + sorted(Path(run_dir, "events").glob("*.jsonl"))


def file_events(run_dir: Path) -> Path:
    """The comparison of the copies' files with their representatives' (echo/fileview.py), beside the processes'."""
    return Path(run_dir, "events", "files.jsonl")


def perf_test_files(run_dir: Path) -> list[Path]:
    """DGRP's explicit tests, a file per process (by real rank)."""
    return sorted(Path(run_dir, "perf").glob("*.tests"), key=lambda p: int(p.stem))


def perf_json_file(run_dir: Path) -> Path:
    """echo/perf.py's status timelines (written after the job)."""
    return Path(run_dir) / PERF_JSON


def output_file(run_dir: Path, rank: int, copy: int) -> Path:
    """A copy's standard output (copy 0's is kept there too when the run is perturbed)."""
    return Path(run_dir) / "output" / f"rank{rank}.copy{copy}.out"


def copy_file(run_dir: str | Path, folder: str, rank: int, copy: int, what: str) -> Path:
    """A file a tool wrote for one copy in its folder of the run directory: what = "memcheck.xml", "strace", ..."""
    return Path(run_dir) / folder / f"rank{rank}.copy{copy}.{what}"


# ---- the plan file ----


def plan_text(header: Iterable[tuple[str, object]], extra: Iterable[str],
              procs: Iterable[tuple[int, int, int, int, str]]) -> str:
    """The plan file: its format line, the `header` pairs, the roles' and modes' own lines (`extra`, already
    "key value" each) and a line per process (real, app, copy, ncopies, role)."""
    lines = [f"echo-plan {PLAN_FORMAT}", *(f"{key} {value}" for key, value in header), *extra]
    lines += [f"proc {real} {app} {copy} {ncopies} {role}" for real, app, copy, ncopies, role in procs]
    return "\n".join(lines) + "\n"


def parse_plan(text: str) -> list[tuple[str, str]]:
    """(key, value) of every line of a plan file's text, in its order."""
    return [(key, value) for key, _, value in (line.partition(" ") for line in text.splitlines())]


def plan_lines(run_dir: Path) -> list[tuple[str, str]]:
    """(key, value) of every line of the run's plan file, in its order."""
    return parse_plan((Path(run_dir) / PLAN).read_text())


def plan_procs(run_dir: Path) -> list[tuple[int, int, int, str]]:
    """(real, app, copy, role) of every process in the run's plan file."""
    out = []
    for key, value in plan_lines(run_dir):
        parts = value.split()
        if key == "proc":
            out.append((int(parts[0]), int(parts[1]), int(parts[2]), parts[4] if len(parts) > 4 else ""))
    return out


def plan_value(run_dir: Path, key: str) -> str | None:
    """The value of a plan line ("key value..."), None if the plan has none."""
    return next((value for name, value in plan_lines(run_dir) if name == key), None)


def has_plan(run_dir: Path) -> bool:
    return (Path(run_dir) / PLAN).is_file()


def wrap_lines(folders: dict[str, tuple[str, ...]], commands: dict[int, list[str]]) -> list[str]:
    """The plan's lines for the copies that run under a tool: a `tool_dir FOLDER [ENDING...]` per tool's folder (made
    before the job, uploaded but for its files with these endings) and a `wrap REAL COMMAND...` per such process
    (echo/exec.sh reads it: the command, shell-quoted, goes before the program's)."""
    return [" ".join(["tool_dir", folder, *kept_back]) for folder, kept_back in folders.items()] + \
        [f"wrap {real} {shlex.join(cmd)}" for real, cmd in sorted(commands.items())]


def tool_dirs(lines: Iterable[tuple[str, str]]) -> dict[str, tuple[str, ...]]:
    """The tools' folders a plan names (its `tool_dir` lines), with the endings of their files the upload leaves out."""
    return {parts[0]: tuple(parts[1:]) for key, value in lines if key == "tool_dir" for parts in [value.split()]}


def run_tool_dirs(run_dir: Path) -> dict[str, tuple[str, ...]]:
    """tool_dirs of a run directory's plan (none without a plan)."""
    return tool_dirs(plan_lines(run_dir)) if has_plan(run_dir) else {}


def plan_path(run_dir: str | Path) -> str:
    """The plan's path as the processes are told it (ECHO_PLAN)."""
    return f"{run_dir}/{PLAN}"


def write_run_dir(run_dir: Path, plan: str, files: dict[str, str]) -> None:
    """Before the job: the folders the processes write in, the plan and the plan's other files (a rankfile)."""
    for sub in (*PROCESS_DIRS, *tool_dirs(parse_plan(plan))):
        (run_dir / sub).mkdir(parents=True, exist_ok=True)
    (run_dir / PLAN).write_text(plan)
    for name, text in files.items():
        (run_dir / name).write_text(text)


# ---- run.json ----


def set_aside_deployment(run_dir: Path, deployment: int) -> Path:
    """Before a job is started again in the same run directory (Reinit, when every process failed): what the
    processes of deployment `deployment` wrote moves to deployments/<deployment>/, and the next one starts with
    empty folders. Returns where it went."""
    kept = Path(run_dir) / "deployments" / str(deployment)
    kept.mkdir(parents=True, exist_ok=True)
    for sub in (*PROCESS_DIRS, *run_tool_dirs(run_dir)):
        if (Path(run_dir) / sub).exists():
            (Path(run_dir) / sub).rename(kept / sub)
        (Path(run_dir) / sub).mkdir()
    return kept


def is_run_dir(run_dir: Path) -> bool:
    return (Path(run_dir) / RUN_JSON).is_file()


def read_meta(run_dir: Path) -> dict:
    return json.loads((Path(run_dir) / RUN_JSON).read_text())


META_ROOM = 4096  # run.json is padded (with spaces) to a multiple of this


def write_meta(run_dir: Path, meta: dict) -> None:
    """run.json. Written before the job with room to spare, so that what is added after it (duration, status) is
    written in place, into the space the file already holds, which a disk that filled up during the job cannot
    refuse; larger, it is replaced whole (a disk that refuses the new one leaves the old one, never half a file)."""
    path = Path(run_dir) / RUN_JSON
    text = json.dumps(meta).encode()
    size = path.stat().st_size if path.is_file() else 0
    if len(text) <= size:
        with open(path, "r+b") as f:
            f.write(text.ljust(size))
        return
    new = path.with_name(RUN_JSON + ".new")
    try:
        new.write_bytes(text.ljust(-(-len(text) // META_ROOM) * META_ROOM))
        os.replace(new, path)
    except OSError:
        new.unlink(missing_ok=True)
        raise


# ---- uploads ----


def pack(run_dir: Path) -> bytes:
    """The upload of a run directory (what `echorun --server` sends): a gzip'd tar of UPLOAD_MEMBERS and the tools'
    folders but the files the plan's tool_dir lines leave out (Valgrind's logs)."""
    buf = io.BytesIO()
    tools = run_tool_dirs(run_dir)
    folders = tuple(m for m in UPLOAD_MEMBERS if m.endswith("/")) + tuple(f"{folder}/" for folder in tools)
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:  # fast: records are large, not precious
        for path in sorted(run_dir.rglob("*")):
            rel = path.relative_to(run_dir).as_posix()
            if path.is_file() and (rel in UPLOAD_MEMBERS or rel.startswith(folders)):
                folder, _, name = rel.partition("/")
                if tools.get(folder) and name.endswith(tools[folder]):
                    continue
                tar.add(path, arcname=rel)
    return buf.getvalue()
