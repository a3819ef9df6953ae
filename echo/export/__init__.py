"""`mpiecho export RUN --format F`: one module per format, each the only writer of its format.

json: everything the store holds about a run (json_tables); csv: call summaries and counters as spreadsheets
(csv_tables); chrome: a Chrome/Perfetto trace of every MPI call (chrome); otf2: an OTF2 archive for Vampir and
other OTF2 readers (otf2_archive); thicket: Caliper JSON profiles per rank and copy for Thicket/Hatchet notebooks
(caliper_json). docs/exports.md says how to open each.
"""

from __future__ import annotations

FORMATS = {
    "json": "echo.export.json_tables",
    "csv": "echo.export.csv_tables",
    "chrome": "echo.export.chrome",
    "otf2": "echo.export.otf2_archive",
    "thicket": "echo.export.caliper_json",
}
# formats whose --output is a directory of files (the others write one file, or standard output)
DIRECTORY_FORMATS = ("csv", "otf2", "thicket")
