"""SDC options, injection specs, exit status and JUnit (no MPI needed)."""

from xml.etree import ElementTree as ET

import pytest

from echo.sdc import (
    EXIT_CORRECTED,
    EXIT_DIVERGED,
    SdcError,
    SdcEvent,
    check_mode,
    exit_status,
    parse_inject,
    write_junit,
)


def ev(kind, rank=0, copy=1, call=7):
    return SdcEvent(kind, rank, copy, "MPI_Send", call, 0, 1, 8, 3, "x")


def test_modes_need_enough_copies():
    check_mode("detect", [2, 2])
    check_mode("vote", [3, 1, 3])
    with pytest.raises(SdcError, match="give ranks 2 or more"):
        check_mode("stop", [1, 1])
    with pytest.raises(SdcError, match=r"vote needs 3 or more copies .*rank 1 has 2"):
        check_mode("vote", [3, 2])
    with pytest.raises(SdcError, match="expected one of detect, stop, vote"):
        check_mode("maybe", [2])


def test_inject_specs():
    assert parse_inject("bitflip:rank=1,copy=1,call=20", [2, 2]) == "bitflip rank=1 copy=1 call=20 byte=0 bit=0"
    assert parse_inject("bitflip:rank=0,copy=2,call=5,byte=9,bit=7", [3]) == \
        "bitflip rank=0 copy=2 call=5 byte=9 bit=7"
    assert parse_inject("memflip:rank=0,copy=1,after=500ms,seed=3", [2]) == \
        "memflip rank=0 copy=1 after=0.5 seed=3 bit=0"


@pytest.mark.parametrize(("spec", "message"), [
    ("bitflip:rank=5,copy=0,call=1", "rank 5 does not exist"),
    ("bitflip:rank=0,copy=2,call=1", "rank 0 has copies 0..1"),
    ("bitflip:rank=0,copy=1", "bitflip needs call"),
    ("bitflip:rank=0,copy=1,call=1,bit=9", "bit is 0..7"),
    ("bitflip:rank=0,copy=1,call=x", "invalid literal"),
    ("bitflip:rank=0,copy=1,call=1,color=red", "unknown setting 'color=red'"),
    ("memflip:rank=0,copy=1,after=soon", "after=soon: expected a time"),
    ("bitflip:rank=0,copy=1,call=1,byte=-1", "byte is counted from the send buffer.s first byte: 0 or more"),
    ("zap:rank=0", "expected bitflip:"),
])
def test_bad_inject_specs(spec, message):
    with pytest.raises(SdcError, match=message):
        parse_inject(spec, [2, 2])


def test_exit_status():
    assert exit_status(0, []) == 0
    assert exit_status(0, [ev("injection")]) == 0
    assert exit_status(0, [ev("divergence")]) == EXIT_DIVERGED
    assert exit_status(0, [ev("corrected")]) == EXIT_CORRECTED
    assert exit_status(0, [ev("corrected"), ev("divergence")]) == EXIT_DIVERGED
    assert exit_status(EXIT_DIVERGED, [ev("divergence")]) == EXIT_DIVERGED
    assert exit_status(139, [ev("divergence")]) == 139, "the application's own failure wins"


def test_junit(tmp_path):
    path = tmp_path / "sdc.xml"
    write_junit(path, "app", 3, 0, [ev("divergence", rank=1), ev("corrected", rank=2)])
    suite = ET.parse(path).getroot()
    assert suite.get("tests") == "4" and suite.get("failures") == "1"
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["rank 1 copies agree"].find("failure") is not None
    assert "MPI_Send (call #7" in cases["rank 1 copies agree"].find("failure").get("message")
    assert cases["rank 0 copies agree"].find("failure") is None
    assert "corrected by vote" in cases["rank 2 copies agree"].find("system-out").text
