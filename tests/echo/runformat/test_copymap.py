import pytest

from echo.runformat.copymap import CopyMapError, parse_copies


def test_default_is_one_copy_each():
    assert parse_copies(None, 4) == [1, 1, 1, 1]


def test_same_copies_for_every_rank():
    assert parse_copies("3", 2) == [3, 3]


def test_per_rank_copies_others_one():
    assert parse_copies("0=4,2=2", 4) == [4, 1, 2, 1]


def test_default_with_overrides():
    assert parse_copies("2,0=4", 3) == [4, 2, 2]


@pytest.mark.parametrize(
    ("spec", "n", "message"),
    [
        ("7=2", 4, "rank 7 does not exist with -n 4 (ranks are 0..3)"),
        ("0", 4, "every rank needs at least 1 copy"),
        ("0=0", 4, "every rank needs at least 1 copy"),
        ("x", 4, "'x' is not a number"),
        ("a=2", 4, "rank 'a' is not a number"),
        ("1=2,1=3", 4, "rank 1 is given twice"),
        ("", 4, "empty item"),
        ("2,,3", 4, "empty item"),
        ("-1=2", 4, "rank -1 does not exist"),
    ],
)
def test_bad_maps_say_what_is_wrong(spec, n, message):
    with pytest.raises(CopyMapError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_copies(spec, n)


def test_no_ranks():
    with pytest.raises(CopyMapError, match="at least one rank"):
        parse_copies(None, 0)
