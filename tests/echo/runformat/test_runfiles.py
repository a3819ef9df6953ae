"""The run directory and plan file (echo/runformat/runfiles.py): what is written is read back, and an upload holds what
the store needs, nothing else."""

import io
import tarfile
from pathlib import Path

from echo.runformat import runfiles


def test_the_plan_written_is_read_back(tmp_path: Path) -> None:
    text = runfiles.plan_text([("run_id", "r1"), ("app_size", 2)], ["perturb noise 1.0 7", "worlds lockstep"],
                              [(0, 0, 0, 2, "representative"), (1, 1, 0, 2, "representative"), (2, 0, 1, 2, "copy")])
    runfiles.write_run_dir(tmp_path, text, {runfiles.RANKFILE: "rank 0=a slot=0\n"})
    assert text.startswith(f"echo-plan {runfiles.PLAN_FORMAT}\n")
    assert runfiles.plan_value(tmp_path, "perturb") == "noise 1.0 7"
    assert runfiles.plan_value(tmp_path, "app_size") == "2"
    assert runfiles.plan_value(tmp_path, "sdc") is None
    assert runfiles.plan_procs(tmp_path) == [(0, 0, 0, "representative"), (1, 1, 0, "representative"),
                                             (2, 0, 1, "copy")]
    assert all((tmp_path / d).is_dir() for d in runfiles.PROCESS_DIRS)
    assert (tmp_path / runfiles.RANKFILE).read_text() == "rank 0=a slot=0\n"


def test_a_value_is_never_found_inside_another_line(tmp_path: Path) -> None:
    """`worlds independent` in a role's name is not the plan's worlds line (the plan used to be searched)."""
    (tmp_path / runfiles.PLAN).write_text("echo-plan 1\nproc 0 0 0 1 worlds independent\nworlds lockstep\n")
    assert runfiles.plan_value(tmp_path, "worlds") == "lockstep"


def test_an_upload_holds_the_files_the_store_needs(tmp_path: Path) -> None:
    """The tools' folders the plan names are made before the job and uploaded, but for the files their tool_dir
    line leaves out; a folder the plan does not name is not uploaded."""
    plan = runfiles.plan_text([], runfiles.wrap_lines({"tool": (".log",), "tracer": ()}, {2: ["t", "-o", "a b"]}), [])
    assert "wrap 2 t -o 'a b'" in plan.splitlines()
    runfiles.write_run_dir(tmp_path, plan, {runfiles.RANKFILE: "x"})
    runfiles.write_meta(tmp_path, {"run_id": "r1"})
    runfiles.record_file(tmp_path, 0).write_bytes(b"rec")
    runfiles.copy_file(tmp_path, "tool", 0, 1, "memcheck.xml").write_text("<x/>")
    runfiles.copy_file(tmp_path, "tool", 0, 1, "memcheck.log").write_text("log")
    runfiles.copy_file(tmp_path, "tracer", 0, 1, "log").write_text("trace")
    (tmp_path / "scratch").mkdir()
    (tmp_path / "scratch" / "x.txt").write_text("not a run file")
    with tarfile.open(fileobj=io.BytesIO(runfiles.pack(tmp_path)), mode="r:gz") as tar:
        names = sorted(tar.getnames())
    assert names == ["plan", "records/0.rec", "run.json", "tool/rank0.copy1.memcheck.xml", "tracer/rank0.copy1.log"]
    assert runfiles.read_meta(tmp_path) == {"run_id": "r1"}
