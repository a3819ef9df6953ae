"""The preload library's folders depend downwards only (docs/architecture.md, "The preload library"): every
`#include "..."` and every call of a function the project defines goes to the same folder or one below it. Read
as text, without a compiler: a definition is a line that starts a function body at column 0."""

from __future__ import annotations

import re
from pathlib import Path

from tests.echo.test_import_layers import circles  # Tarjan's, as the Python imports are checked

ROOT = Path(__file__).resolve().parents[2]
PRELOAD = ROOT / "preload"
COLLECTORS = ROOT / "echo" / "collectors"

# what each folder may use besides itself: a role uses core only; Reinit's world is a clone world
BELOW = {
    "compat": set(),
    "core": {"compat"},
    "clone": {"core", "compat"},
    "sdr": {"core", "compat"},
    "reinit": {"clone", "core", "compat"},
    "collectors": {"core", "compat"},
}
# the exceptions docs/architecture.md names: a compat fallback reports an echo bug with core's echo_fatal
EXCEPTIONS = {("compat", "echo_internal.h"), ("compat", "echo_fatal")}
DEFINITION = re.compile(r"^(?!static\b)[A-Za-z_][\w \*]*?\b(echo_\w+)\s*\([^;{]*\)\s*(?:__attribute__\S*\s*)?\{",
                        re.M | re.S)
CALL = re.compile(r"\b(echo_\w+)\s*\(")


def folder(path: Path) -> str:
    return "collectors" if COLLECTORS in path.parents else path.parent.name


def sources() -> list[Path]:
    return sorted([*PRELOAD.glob("*/*.[ch]"), *COLLECTORS.glob("*/*.c")])


def without_comments(text: str) -> str:
    return re.sub(r"/\*.*?\*/|//[^\n]*", "", text, flags=re.S)


def test_includes_go_down() -> None:
    headers = {h.name: folder(h) for h in PRELOAD.glob("*/*.h")}
    wrong = []
    for src in sources():
        for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', src.read_text(), re.M):
            to = headers.get(Path(inc).name)
            here = folder(src)
            if to and to != here and to not in BELOW[here] and (here, Path(inc).name) not in EXCEPTIONS:
                wrong.append(f"{src.relative_to(ROOT)} includes {inc} ({to})")
    assert not wrong, "includes that go up or sideways:\n" + "\n".join(wrong)


def test_calls_go_down() -> None:
    defined = {}
    for src in sources():
        if src.suffix == ".c":
            for name in DEFINITION.findall(without_comments(src.read_text())):
                defined[name] = folder(src)
    assert len(defined) > 200, "the definitions were not found: DEFINITION no longer matches the sources"
    wrong = []
    for src in sources():
        here = folder(src)
        for name in sorted(set(CALL.findall(without_comments(src.read_text())))):
            to = defined.get(name)
            if to and to != here and to not in BELOW[here] and (here, name) not in EXCEPTIONS:
                wrong.append(f"{src.relative_to(ROOT)} calls {name} ({to})")
    assert not wrong, "calls that go up or sideways:\n" + "\n".join(wrong)


# Circles between the files of one folder: a file uses another when it includes that file's own header (echo_x.h of
# echo_x.c) or calls a function defined there.  A circle says two ideas are one tangle (a lifecycle that calls
# everything and a state everything reads; a description and the constructors that make it), with one exception: a
# progress loop, where waiting on one thing must serve the others (completing a request matches the messages that
# arrive meanwhile).  Each such loop is named here by the call that closes it and why; any other circle fails.
PROGRESS_LOOPS: dict[tuple[str, str, str], str] = {
    ("core", "echo_channel", "echo_process"):
        "a copy waiting on its representative's channel learns there that the representative finalized, and ends "
        "with it (echo_copy_ends): every wait on the channel must serve that end",
    ("sdr", "echo_sdr_core", "echo_sdr_sched"):
        "the progress loop advances nonblocking collectives' schedules while the process waits in any call",
    ("sdr", "echo_sdr_core", "echo_sdr_slow"):
        "the progress loop and every call's tick judge the rounds that find a slow replica",
    ("sdr", "echo_sdr_acks", "echo_sdr_core"):
        "an ack polled in the progress loop settles the send it acks (sdr_settle)",
    ("sdr", "echo_sdr_acks", "echo_sdr_failures"):
        "a control message polled in the progress loop tells of a failure or an exclusion, which retargets senders",
    ("sdr", "echo_sdr_acks", "echo_sdr_slow"):
        "the progress loop's poll delivers the slow-replica judge's messages (sdr_slow_message)",
    ("sdr", "echo_sdr_failures", "echo_sdr_core"):
        "a failure learnt in the progress loop settles the sends that waited for the dead replica's acks",
    ("sdr", "echo_sdr_core", "echo_sdr_win"):
        "a passive target applies its origins' lock epochs in whatever MPI call it is in: the progress loop serves "
        "them (sdr_win_progress)",
    ("sdr", "echo_sdr_core", "echo_sdr_idup"):
        "an MPI_Comm_idup's duplicate is made in nonblocking steps that the progress loop advances (sdr_idup_progress)",
    ("sdr", "echo_sdr_comm", "echo_sdr_idup"):
        "another creation from a communicator, or its free, first waits for the duplicates in flight from it "
        "(sdr_idup_settle), which are made with the registry's own calls",
}
# circles that are design, not progress, still to be untangled (issue #33): listed so that no new one appears
NOT_YET_APART: dict[tuple[str, str, str], str] = {}


# within a folder SDR's own functions (sdr_*) count too; the libc functions echo interposes (open, clock_gettime) do not
FOLDER_DEFINITION = re.compile(r"^(?!static\b)[A-Za-z_][\w \*]*?\b((?:echo|sdr)_\w+)\s*\([^;{]*\)\s*"
                               r"(?:__attribute__\S*\s*)?\{", re.M | re.S)
FOLDER_CALL = re.compile(r"\b((?:echo|sdr)_\w+)\s*\(")


def uses_within_folders() -> dict[str, dict[str, dict[str, set[str]]]]:
    """folder -> file (its stem) -> file it uses -> what it uses there (functions, or the header's name)."""
    defined: dict[str, Path] = {}
    for src in sources():
        if src.suffix == ".c":
            for name in FOLDER_DEFINITION.findall(without_comments(src.read_text())):
                defined[name] = src
    uses: dict[str, dict[str, dict[str, set[str]]]] = {}
    for src in sources():
        here = folder(src)
        units = {p.stem for p in src.parent.glob("*.c")}
        mine = uses.setdefault(here, {}).setdefault(src.stem, {})
        text = src.read_text()
        for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
            stem = Path(inc).stem
            if Path(inc).suffix == ".h" and stem != src.stem and stem in units and (src.parent / inc).exists():
                mine.setdefault(stem, set()).add(inc)
        for name in set(FOLDER_CALL.findall(without_comments(text))):
            to = defined.get(name)
            if to and to.parent == src.parent and to.stem != src.stem:
                mine.setdefault(to.stem, set()).add(name)
    return uses


def test_no_circles_within_a_folder() -> None:
    allowed = {**PROGRESS_LOOPS, **NOT_YET_APART}
    wrong = []
    for where, graph in sorted(uses_within_folders().items()):
        kept = {a: {b: what for b, what in to.items() if (where, a, b) not in allowed} for a, to in graph.items()}
        for part in circles(kept):
            steps = [f"    {a} -> {b}: {', '.join(sorted(kept[a][b]))}"
                     for a in part for b in sorted(kept[a]) if b in part]
            wrong.append(f"{where}/ {' '.join(part)}:\n" + "\n".join(steps))
    assert not wrong, "files of one folder that use each other in a circle (split the idea they share, or name a " \
                      "progress loop in PROGRESS_LOOPS):\n" + "\n".join(wrong)


def test_named_loops_still_exist() -> None:
    graph = uses_within_folders()
    stale = [f"{w}/{a} -> {b}" for w, a, b in {**PROGRESS_LOOPS, **NOT_YET_APART}
             if b not in graph.get(w, {}).get(a, {})]
    assert not stale, "named loops whose use is gone (remove them from the lists):\n" + "\n".join(stale)
