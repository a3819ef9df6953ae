"""The one parser of `kind:key=value,...;...` options (echo/runformat/spec.py)."""

import pytest

from echo.runformat.spec import parse_spec, seconds, split_specs


def test_an_item_gives_its_kind_and_settings_in_order() -> None:
    s = parse_spec("bitflip:rank=1,copy=0,,call=20,rank=2")
    assert (s.kind, s.has_settings) == ("bitflip", True)
    assert s.values == {"rank": "2", "copy": "0", "call": "20"}, "empty settings skipped, the last of a key wins"
    assert s.settings == ("rank=1", "copy=0", "call=20", "rank=2")
    assert s.not_key_value == ()


def test_settings_that_are_not_key_value_are_kept_for_the_owner_to_refuse() -> None:
    s = parse_spec("noise:ulp,seed=3")
    assert s.not_key_value == ("ulp",)
    assert s.values == {"ulp": "", "seed": "3"}
    assert s.unknown(("ulp", "seed")) == "ulp"
    assert parse_spec("memflip:rank=0,copy=1,after=2s,colour=red").unknown(("rank", "copy", "after")) == "colour=red"


def test_a_kind_alone_has_no_settings() -> None:
    s = parse_spec("rounding")
    assert (s.kind, s.has_settings, s.values) == ("rounding", False, {})


def test_items_split_on_semicolons() -> None:
    assert split_specs(" kill:rank=1,after=2s ;; slow:rank=0,copy=1,factor=2 ") == [
        "kill:rank=1,after=2s", "slow:rank=0,copy=1,factor=2"]
    assert split_specs(None) == []


@pytest.mark.parametrize(("text", "value"), [("1.5", 1.5), ("2s", 2.0), ("500ms", 0.5), ("1m", 60.0)])
def test_durations(text: str, value: float) -> None:
    assert seconds(text) == pytest.approx(value)


def test_a_bad_duration_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        seconds("soon")
