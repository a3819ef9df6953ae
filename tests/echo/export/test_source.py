"""Progress of long exports on standard error."""

from echo.export.source import PROGRESS_CALLS, Progress


def test_progress_said_for_big_runs_only(capsys):
    small = Progress("chrome", 1000, 2)
    small.step(500)
    small.step(500)
    assert capsys.readouterr().err == ""
    big = Progress("otf2", 3 * PROGRESS_CALLS, 3)
    for _ in range(3):
        big.step(PROGRESS_CALLS)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "echo export otf2: 1 of 3 processes, 0.2 M of 0.6 M calls"
    assert lines[-1] == "echo export otf2: 3 of 3 processes, 0.6 M of 0.6 M calls"  # the last step always says
