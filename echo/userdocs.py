"""The documents a user is sent to (docs/NAME.md in --help, errors and the web pages), as an installed echo has
them: `mpiecho docs` and the server's /docs/NAME read them through here. A name is taken as the messages write it
(docs/sdr.md), or shorter (sdr.md, sdr), so that what a message says can be pasted as it is."""

from __future__ import annotations

from echo.resources import DOCS_DIR


def names() -> list[str]:
    """The documents' names (sdr, replication, ...), sorted."""
    return sorted(p.stem for p in DOCS_DIR.glob("*.md"))


def title(name: str) -> str:
    """A document's first line without its '#': what `mpiecho docs` lists beside the name."""
    first = read(name).partition("\n")[0]
    return first.lstrip("#").strip()


def read(name: str) -> str:
    """The text of the document `name` (docs/sdr.md, sdr.md or sdr); LookupError names the known ones."""
    stem = name.removeprefix("docs/").removesuffix(".md")
    if stem not in names():  # only names from the folder's listing: no path reaches outside it
        raise LookupError(f"no document {name!r}; the documents: {', '.join(names())} (mpiecho docs NAME)")
    return (DOCS_DIR / f"{stem}.md").read_text(encoding="utf-8")
