"""The numbers C and Python share have one source (echo/runformat/constants.py): the header generated from it holds
them as C reads them, and no C file defines them again."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from echo.resources import COLLECTORS_DIR, PRELOAD_DIR
from echo.runformat import constants


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_the_generated_header_gives_c_the_python_values(tmp_path: Path) -> None:
    (tmp_path / "echo_constants.h").write_text(constants.c_header())
    prints = "".join(f'    printf("{name} %.17g\\n", (double)({name}));\n' for name in constants.C_NAMES)
    (tmp_path / "show.c").write_text(f'#include <stdio.h>\n#include "echo_constants.h"\n'
                                     f"int main(void) {{\n{prints}    return 0;\n}}\n")
    subprocess.run(["cc", "-Wall", "-Werror", "-o", str(tmp_path / "show"), str(tmp_path / "show.c")], check=True)
    out = subprocess.run([str(tmp_path / "show")], capture_output=True, text=True, check=True).stdout
    seen = {name: float(value) for name, value in (line.split() for line in out.splitlines())}
    assert seen == {name: float(value) for name, value in constants.C_NAMES.items()}


def test_no_c_source_defines_a_shared_constant_itself() -> None:
    sources = [*PRELOAD_DIR.rglob("*.[ch]"), *COLLECTORS_DIR.rglob("*.[ch]")]
    assert sources
    twins = [(p.name, name) for p in sources for name in constants.C_NAMES
             if re.search(rf"^\s*#\s*define\s+{name}\b", p.read_text(), re.M)]
    assert twins == []


def test_python_reads_the_same_numbers() -> None:
    from echo import perf
    from echo.modes import sdr
    from echo.runformat import records

    assert (records.VERSION, records.MAX_SLOTS) == (constants.RECORD_VERSION, constants.RECORD_MAX_SLOTS)
    assert sdr.MAX_REPLICAS == constants.SDR_MAX_REPLICAS
    assert perf.Params().alpha == constants.DGRP_ALPHA and perf.Params().min_phase == constants.DGRP_MIN_PHASE
