"""Injections on real runs: each is said to have fired or not, in echorun's summary, the store and the report;
and every run is stored with the mode it ran in and the status echorun returned."""

import subprocess
from xml.etree import ElementTree as ET

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from echo.injections import planned
from echo.runformat.constants import EXIT_NOT_FIRED
from echo.store.db import open_store
from echo.store.models import Event, Run
from tests.conftest import VENV_BIN, copy_output, echorun, lines_by_rank


def stored(db: str) -> tuple[Run, list[Event]]:
    with Session(open_store(db)) as s:
        run = s.scalars(select(Run)).one()
        return run, list(s.scalars(select(Event).where(Event.run_id == run.id)))


def mpiecho(*args: str) -> str:
    r = subprocess.run([str(VENV_BIN / "mpiecho"), *args], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_plan_lines_of_every_injector_are_read_back():
    plan = ("inject bitflip rank=1 copy=2 call=20 byte=3 bit=1\nslow 0 1 4.0 10 25\n"
            "sdr_kill_0 2 1 call 40\nsdr_kill_1 0 0 after 1.5\nreinit_kill_0 3 2.0\nreinit_kill_1 1 repair 2\n")
    got = [(i.kind, i.rank, i.copy, i.call, i.text) for i in planned(plan)]
    assert got == [("bitflip", 1, 2, 20, "bitflip:rank=1,copy=2,call=20,byte=3,bit=1"),
                   ("slow", 0, 1, 10, "slow:rank=0,copy=1,factor=4,from=10,to=25"),
                   ("kill", 2, 1, 40, "kill:rank=2,replica=1,call=40"),
                   ("kill", 0, 0, None, "kill:rank=0,replica=0,after=1.5s"),
                   ("kill", 3, None, None, "kill:rank=3,after=2s"),
                   ("kill", 1, None, None, "kill:rank=1,repair=2")]


def test_a_bitflip_past_the_end_never_fires_and_is_said(programs, tmp_path):
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    r = echorun(["--db", db, "-n", "2", "--clones", "2", "--sdc", "detect", "--inject",
                 "bitflip:rank=1,copy=1,call=100000", *programs["sdc_loop"]], tmp_path / "run")
    assert r.returncode == EXIT_NOT_FIRED, r.stderr  # a test that tested nothing does not pass (docs/sdc.md)
    assert ("echo: injection bitflip:rank=1,copy=1,call=100000,byte=0,bit=0: never fired: rank 1 copy 1 made "
            in r.stderr) and "call 100000 is past its end" in r.stderr
    assert f"exit status {EXIT_NOT_FIRED}: an injection never fired" in r.stderr
    run, events = stored(db)
    assert [(i["kind"], i["rank"], i["copy"], i["fired"]) for i in run.injections] == [("bitflip", 1, 1, False)]
    assert [e.kind for e in events if e.kind.startswith("injection")] == ["injection-not-fired"]
    assert (run.mode, run.status, run.exit_status) == ("clones", "injection not fired", EXIT_NOT_FIRED)
    assert "injections (0 of 1 fired):" in mpiecho("report", "--db", db)
    assert "0 of 1 fired" in mpiecho("runs", "--db", db)


def test_a_fired_bitflip_is_stored_without_made_up_fields(programs, tmp_path):
    """The injection event names the call it hit, with no byte count or peer it does not have; stop mode's
    message names no peer for a collective, and no NUL byte of mpirun's reaches the output."""
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    r = echorun(["--db", db, "-n", "2", "--clones", "3", "--sdc", "stop", "--sdc-only", "collectives", "--inject",
                 "bitflip:rank=0,copy=2,call=2", *programs["sdc_loop"]], tmp_path / "run")
    assert r.returncode == 20, r.stderr
    assert "\0" not in r.stderr and "peer -1" not in r.stderr
    assert "differs from copy 0 in MPI_Allreduce (call #" in r.stderr and ", communicator 0, 8 bytes)" in r.stderr
    run, events = stored(db)
    assert run.injections[0]["fired"] and run.injections[0]["note"].startswith("fired at call ")
    assert (run.status, run.exit_status) == ("diverged", 20)
    message = next(e.message for e in events if e.kind == "injection")
    assert message.startswith("application rank 0 copy 2: bitflip at call #") and " bytes" not in message
    assert "flipped bit 0 of byte 0 of the send buffer" in message


def test_sdr_kills_fired_or_not_and_the_mode_stored(programs, tmp_path):
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    r = echorun(["--db", db, "-n", "2", "--mode", "sdr", "--inject",
                 "kill:rank=1,replica=1,call=40;kill:rank=0,replica=1,call=1000000", *programs["sdr_stencil"]],
                tmp_path / "run")
    assert r.returncode == EXIT_NOT_FIRED, r.stderr  # one of its kills never fired
    assert "injection kill:rank=1,replica=1,call=40: fired at call 40: " in r.stderr  # the call it names
    assert "injection kill:rank=0,replica=1,call=1000000: never fired: rank 0 copy 1 made " in r.stderr
    run, _ = stored(db)
    assert run.mode == "sdr" and [i["fired"] for i in run.injections] == [True, False]
    listing = mpiecho("runs", "--db", db)
    assert " sdr " in listing and "1 of 2 fired" in listing
    report = mpiecho("report", "--db", db)
    assert "  mode     sdr" in report and "  roles    replica x4" in report


def test_a_repaired_reinit_run_is_stored_as_ok(programs, tmp_path):
    """A Reinit job that repaired its world and finished exits 0, and the store says so (not mpirun's status)."""
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    kill = "kill:rank=1,after=1s"
    r = echorun(["--db", db, "-n", "3", "--mode", "reinit", "--inject", kill, *programs["reinit_iter"], "80", "40"],
                tmp_path / "run", timeout=240)
    assert r.returncode == 0, r.stderr
    assert f"injection {kill}: fired at call " in r.stderr
    run, _ = stored(db)
    assert (run.mode, run.status, run.exit_status) == ("reinit", "ok", 0)
    assert run.injections[0]["fired"]
    report = mpiecho("report", "--db", db)
    assert "exit status 0 (ok)" in report and "  mode     reinit" in report


def test_a_reinit_run_started_again_after_every_process_failed_is_stored_with_both_deployments(programs, tmp_path):
    """The kills fired in the failed deployment count as fired; the store says the job was started again."""
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    kills = "kill:rank=0,after=1s;kill:rank=1,after=1s"
    r = echorun(["--db", db, "-n", "2", "--mode", "reinit", "--inject", kills, *programs["reinit_iter"], "60", "40"],
                tmp_path / "run", timeout=240)
    assert r.returncode == 0, r.stderr
    assert "never fired" not in r.stderr and r.stderr.count(": fired at call ") == 2, r.stderr
    run, _ = stored(db)
    assert (run.status, run.exit_status) == ("ok", 0) and all(i["fired"] for i in run.injections)
    report = mpiecho("report", "--db", db)
    assert "redeployed: deployment 1: every process failed" in report, report
    assert f"its files: {tmp_path / 'run' / 'deployments' / '1'}" in report


def test_a_bitflip_past_the_send_buffer_is_not_made_and_said(programs, tmp_path):
    """byte=100 of an 8-byte MPI_Allreduce buffer is the program's own memory: never flipped, and the run says the
    injection did not fire, where and why; a byte before the buffer is refused before the job."""
    db = f"sqlite:///{tmp_path / 'echo.db'}"
    spec = "bitflip:rank=0,copy=1,call=2,byte=100"
    junit = tmp_path / "ci.xml"
    r = echorun(["--db", db, "-n", "2", "--clones", "2", "--sdc", "detect", "--sdc-only", "collectives",
                 "--junit", str(junit), "--inject", spec, *programs["sdc_loop"]], tmp_path / "run")
    assert r.returncode == EXIT_NOT_FIRED, r.stderr
    assert (f"injection {spec},bit=0: never fired: at call 6: byte 100 is past the end of MPI_Allreduce's send "
            "buffer (8 bytes): nothing was flipped") in r.stderr
    assert "flipped bit" not in r.stderr
    # the copy computed what its representative did: nothing of its memory was touched
    assert lines_by_rank(copy_output(tmp_path / "run", 0, 1)) == {0: lines_by_rank(r.stdout)[0]}
    run, events = stored(db)
    assert [i["fired"] for i in run.injections] == [False] and "past the end" in run.injections[0]["note"]
    assert [e.kind for e in events if e.kind.startswith("injection")] == ["injection-not-fired"]
    # a CI harness reading the JUnit file sees the test fail too
    suites = {s.get("name"): s for s in ET.parse(junit).getroot()}
    assert suites["echo injections"].get("failures") == "1"
    (case,) = suites["echo injections"]
    assert case.get("name") == f"{spec},bit=0 fired" and "past the end" in case.find("failure").get("message")

    before = echorun(["-n", "2", "--clones", "2", "--sdc", "detect", "--inject", "bitflip:rank=0,copy=1,call=2,byte=-1",
                      *programs["sdc_loop"]], tmp_path / "before")
    assert before.returncode == 2 and len(before.stderr.splitlines()) == 1, before.stderr
    assert "byte is counted from the send buffer's first byte: 0 or more" in before.stderr
    assert not (tmp_path / "before").exists()


@pytest.mark.parametrize(("args", "said"), [
    (["--inject", "kill:rank=0,replica=1,call=3"],
     "--inject kill:rank=0,replica=1,call=3: kill goes with --mode sdr (kill:rank=R,replica=K,call=N|after=T) or "
     "--mode reinit (kill:rank=R,after=T|repair=N)"),
    (["--clones", "2", "--sdc", "detect", "--inject", "kill:rank=0,replica=1,call=3"], "kill goes with --mode sdr"),
    (["--inject", "foo"], "--inject foo: unknown injection 'foo'; the kinds are bitflip (with --sdc detect|stop|vote"),
    (["--clones", "2", "--inject", "bitflip:rank=0,copy=1,call=3"],
     "bitflip goes with --sdc detect|stop|vote in --mode clones (copies compared: --clones 2 or more)"),
    (["--mode", "sdr", "--inject", "memflip:rank=0,copy=1,after=1s"], "memflip goes with --sdc detect|stop|vote"),
])
def test_each_injection_is_told_what_it_needs(programs, tmp_path, args, said):
    r = echorun(["-n", "2", *args, *programs["sdc_loop"]], tmp_path / "run")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr
    assert said in r.stderr
    assert not (tmp_path / "run").exists()
