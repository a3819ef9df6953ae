"""The preload library's folders depend downwards only (docs/architecture.md, "The preload library"): every
`#include "..."` and every call of a function the project defines goes to the same folder or one below it. Read
as text, without a compiler: a definition is a line that starts a function body at column 0."""

from __future__ import annotations

import re
from pathlib import Path

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
