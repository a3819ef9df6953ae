"""The copies' own view of the program's files (docs/fileview.md): its plan line, and under --sdc the comparison
of the files each copy wrote with its representative's when the job ends.

The preload library (preload/core/echo_fileview.c) keeps, per rank A, in the run directory's fileview/ folder:
- rankA.copy0.log: each path the representative changed, before its first change ("A path": absent before the
  run; "S path": set aside in rankA.base/ first; "E path": existed, a directory);
- rankA.copyK.log (K >= 1): each path copy K changed ("W" written or created, "D" deleted, "M" a directory made),
  and its files in rankA.copyK/ under their absolute names;
- in every log, "T path" for each file or directory the process made under a name it drew at random (mkstemp,
  mkdtemp: gfortran's scratch files), in the order it made them: a copy's k-th is its representative's k-th.
The comparison reads only the files someone wrote, so its cost is bounded by the bytes written.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections import Counter
from pathlib import Path

from echo.runformat import runfiles
from echo.sdc import SdcEvent

MECHANISM = "libc interposition"  # preload/core/echo_fileview.c says why not a mount namespace
CHUNK = 1 << 20


class FileViewError(ValueError):
    """A --file-view option that cannot be used; the message says how to fix it."""


def check(file_view: str) -> None:
    """--file-view, an option of every run (the modes with copies plan its line: echo/modes/clones.py)."""
    if file_view not in ("on", "off"):
        raise FileViewError(f"--file-view {file_view}: expected on or off")


def plan_lines(copies: list[int], file_view: str) -> list[str]:
    """The plan's `fileview on|off` line: on for copies of a rank, unless --file-view off."""
    check(file_view)
    if max(copies) < 2:
        return []
    return [f"fileview {file_view}"]


def describe(copies: list[int], file_view: str, run_dir: str) -> str | None:
    """What the plan's summary says of the copies' files."""
    if max(copies) < 2:
        return None
    if file_view == "off":
        return "file view: off (copies do the program's file I/O in its own files, as the representative does)"
    return (f"file view: {MECHANISM} (copies read the program's files and write their own under "
            f"{Path(run_dir) / runfiles.FILEVIEW_DIR})")


def run_values(run_dir: Path) -> dict[str, str]:
    """What the store keeps of the run (a row of its run values, shown by `mpiecho report` and the run page):
    the mechanism that kept the copies' files apart, "off", or nothing for a run without copies."""
    value = runfiles.plan_value(Path(run_dir), "fileview") if runfiles.has_plan(Path(run_dir)) else None
    return {} if value is None else {"file-view": MECHANISM if value == "on" else "off"}


# ---- after the job: what each copy wrote, against its representative ----

def _lines(path: Path) -> list[tuple[str, str]]:
    """A log's lines: (code, path)."""
    if not path.exists():
        return []
    return [(line[0], line[2:]) for line in path.read_text(errors="surrogateescape").splitlines()
            if len(line) > 2 and line[1] == " "]


def _log(path: Path) -> dict[str, str]:
    """A log's paths and each one's last code."""
    return {name: code for code, name in _lines(path) if code != "T"}


def _random_names(path: Path) -> list[str]:
    """The paths a process made under a name it drew at random, in the order it made them."""
    return [name for code, name in _lines(path) if code == "T"]


def _within(path: str, top: str) -> bool:
    """`path` is `top` or under it."""
    return path == top or path.startswith(top + "/")


def _as_representatives(path: str, names: dict[str, str]) -> str:
    """A copy's path under its representative's names: the copy's k-th randomly named file or directory (and what
    is under such a directory) is the representative's k-th."""
    for mine, theirs in names.items():
        if _within(path, mine):
            return theirs + path[len(mine):]
    return path


def _state(path: Path) -> tuple[str, Path | str | None]:
    """('absent'|'dir'|'link'|'file', what to compare)."""
    try:
        if path.is_symlink():
            return "link", os.readlink(path)
        if path.is_dir():
            return "dir", None
        if path.exists():
            return "file", path
    except OSError:
        pass
    return "absent", None


def _first_difference(a: Path, b: Path) -> int:
    """The first offset at which two files differ, -1 if they do not."""
    offset = 0
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            ca, cb = fa.read(CHUNK), fb.read(CHUNK)
            if ca != cb:
                n = min(len(ca), len(cb))
                return offset + next((i for i in range(n) if ca[i] != cb[i]), n)
            if not ca:
                return -1
            offset += len(ca)


def _digest(state: tuple[str, Path | str | None]) -> tuple[str, str]:
    kind, what = state
    if kind == "file":
        h = hashlib.blake2b(digest_size=16)
        with open(what, "rb") as f:  # type: ignore[arg-type]
            while chunk := f.read(CHUNK):
                h.update(chunk)
        return kind, h.hexdigest()
    return kind, str(what or "")


def _differs(rep: tuple[str, Path | str | None], copy: tuple[str, Path | str | None]) -> str | None:
    """How the copy's final state of a path differs from the representative's, or None."""
    (rk, rw), (ck, cw) = rep, copy
    if rk != ck:
        say = {"absent": "no such file", "dir": "a directory", "link": "a symbolic link", "file": "a file"}
        return f"the representative's is {say[rk]}, the copy's {say[ck]}"
    if rk == "link" and rw != cw:
        return f"a link to {rw} in the representative, to {cw} in the copy"
    if rk == "file":
        at = _first_difference(rw, cw)  # type: ignore[arg-type]
        if at >= 0:
            return f"first differing offset {at}"
    return None


def _under_any(path: str, dirs: list[str]) -> bool:
    return any(_within(path, d) for d in dirs)


def _copy_states(fv: Path, rank: int, copy: int, rep_log: dict[str, str], names: dict[str, str],
                 unmatched: list[str]) -> dict[str, tuple[str, object]]:
    """Each path copy `copy` changed, or its representative did: its final state in the copy's view, by the
    representative's name of it (`names`: the copy's randomly named paths, the representative's; paths under
    `unmatched`, randomly named ones the representative has no counterpart of, are left out)."""
    tree = fv / f"rank{rank}.copy{copy}"
    mine = {_as_representatives(path, names): path
            for path in _log(fv / f"rank{rank}.copy{copy}.log") if not _under_any(path, unmatched)}
    out = {}
    for path in set(mine) | set(rep_log):
        if path in mine:
            out[path] = _state(tree / mine[path].lstrip("/"))
        else:  # the copy left it as it was before the run, which its representative changed
            code = rep_log[path]
            out[path] = (_state(fv / f"rank{rank}.base" / path.lstrip("/")) if code == "S"
                         else ("dir", None) if code == "E" else ("absent", None))
    return out


def _event(kind: str, rank: int, copy: int, path: str, size: int, offset: int, detail: str) -> SdcEvent:
    return SdcEvent(kind=kind, app_rank=rank, copy=copy, function="file", call=-1, comm=-1, peer=-1, bytes=size,
                    first_byte=offset, detail=f"file {path}: {detail}")


def _size(state: tuple[str, object]) -> int:
    return Path(state[1]).stat().st_size if state[0] == "file" else 0  # type: ignore[arg-type]


def _offset(detail: str) -> int:
    return int(detail.rsplit(" ", 1)[1]) if detail.startswith("first differing offset") else -1


def _replace(real: Path, winner: tuple[str, object]) -> None:
    """The representative's file becomes the majority's."""
    kind, what = winner
    if real.is_dir() and not real.is_symlink() and kind != "dir":
        shutil.rmtree(real)
    elif (real.exists() or real.is_symlink()) and kind != "dir":
        real.unlink()
    if kind == "file":
        real.parent.mkdir(parents=True, exist_ok=True)
        tmp = real.with_name(f".{real.name}.echo-vote")
        shutil.copy2(what, tmp)  # type: ignore[arg-type]
        os.replace(tmp, real)
    elif kind == "link":
        real.symlink_to(str(what))
    elif kind == "dir":
        real.mkdir(parents=True, exist_ok=True)


def shared_paths(fv: Path, copies: list[int]) -> set[str]:
    """The paths that processes of more than one rank changed (a log every rank appends to, an output file rank 0
    writes and the others open): the real file holds several ranks' writes and a copy's view its own rank's only,
    so no copy can be compared against it."""
    ranks_of: Counter[str] = Counter()
    for rank, n in enumerate(copies):
        ranks_of.update(set().union(*(_log(fv / f"rank{rank}.copy{k}.log") for k in range(n))))
    return {path for path, nranks in ranks_of.items() if nranks > 1}


def compare(run_dir: Path, copies: list[int], vote: bool) -> tuple[list[SdcEvent], set[str]]:
    """Every difference between the files a copy wrote and its representative's, as SDC events (also written to
    the run's events, so that the store and `mpiecho report` keep them), and the paths left out: a path that
    several ranks changed is not compared (shared_paths).  With `vote`, a path where the representative is
    outvoted by a majority of the copies gets the majority's file, reported as corrected."""
    fv = Path(run_dir) / runfiles.FILEVIEW_DIR
    events: list[SdcEvent] = []
    shared = shared_paths(fv, copies)
    for rank, n in enumerate(copies):
        if n < 2 or not (fv / f"rank{rank}.copy0.log").exists():
            continue
        rep_log = _log(fv / f"rank{rank}.copy0.log")
        rep_random = _random_names(fv / f"rank{rank}.copy0.log")
        views = {}
        for k in range(1, n):
            # a file made under a random name is its representative's file of the same rank in order, never by name
            mine = _random_names(fv / f"rank{rank}.copy{k}.log")
            unmatched = mine[len(rep_random):]
            views[k] = _copy_states(fv, rank, k, rep_log, dict(zip(mine, rep_random, strict=False)), unmatched)
            for i, path in enumerate(unmatched, start=len(rep_random) + 1):
                events.append(_event("divergence", rank, k, path, 0, -1,
                                     f"the copy's file number {i} made under a random name; its "
                                     f"representative made {len(rep_random)} such files"))
        paths = sorted(set(rep_log).union(*views.values()) - shared)
        for path in paths:
            rep = _state(Path(path))
            states = {0: rep} | {k: views[k].get(path, rep) for k in range(1, n)}
            diffs = {k: _differs(rep, states[k]) for k in range(1, n)}
            if not any(diffs.values()):
                continue
            if vote:
                keys = {k: _digest(s) for k, s in states.items()}
                (top, count), = Counter(keys.values()).most_common(1)
                # a vote corrects what the representative's file holds, never whether it has the file: a name the
                # majority has and it has not (or the reverse) is a name drawn differently in each process (a
                # random id in it), and creating or deleting it would leave files no native run has
                if count * 2 > n and (keys[0] == top or "absent" not in (keys[0][0], top[0])):
                    winner = next(k for k in states if keys[k] == top)
                    for k in states:
                        if keys[k] == top:
                            continue
                        raw = (diffs[k] if k else _differs(rep, states[winner])) or "differs"
                        size, offset = _size(states[k]), _offset(raw)
                        detail = f"outvoted by {count} of {n} copies ({raw})"
                        if k == 0:
                            _replace(Path(path), states[winner])
                            detail += f": the representative's file is replaced by copy {winner}'s"
                        events.append(_event("corrected", rank, k, path, size, offset, detail))
                    continue
            for k, detail in diffs.items():
                if detail:
                    events.append(_event("divergence", rank, k, path, _size(states[k]), _offset(detail), detail))
    if events:
        out = runfiles.file_events(Path(run_dir))
        out.parent.mkdir(exist_ok=True)
        with open(out, "a") as f:
            for e in events:
                f.write(json.dumps(e.__dict__) + "\n")
    return events, shared
