"""Where echo's files that are not Python modules are: the preload library's C sources and wrapper generator,
the web pages' templates and style, the bundled examples. They ship inside the package (echo/preload, echo/web,
echo/examples: in a source checkout links to the top-level directories, in an installed wheel the files
themselves), so every command finds them from any directory; this module is the one that knows where."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

PACKAGE = Path(str(files("echo")))
PRELOAD_DIR = PACKAGE / "preload"
WEB_DIR = PACKAGE / "web"
EXAMPLES_DIR = PACKAGE / "examples"
COLLECTORS_DIR = Path(str(files("collectors")))
