"""Where echo's files that are not Python modules are: the preload library's C sources and wrapper generator,
the web pages' templates and style, the bundled examples, the documents (docs/*.md). They ship inside the package
(echo/preload, echo/web, echo/examples, echo/docs: in a source checkout links to the top-level directories, in an
installed wheel the files themselves), so every command finds them from any directory; this module is the one
that knows where, and where what is built from them is cached."""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

PACKAGE = Path(str(files("echo")))
PRELOAD_DIR = PACKAGE / "preload"
WEB_DIR = PACKAGE / "web"
EXAMPLES_DIR = PACKAGE / "examples"
DOCS_DIR = PACKAGE / "docs"
COLLECTORS_DIR = PACKAGE / "collectors"


def cache_root() -> Path:
    """Where echo keeps what it builds on first use (the library, the roles' helpers): ECHO_CACHE, else
    ~/.cache/echo. Here, beneath the build and the roles, so that both can ask."""
    base = os.environ.get("ECHO_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "echo")
    return Path(base)
