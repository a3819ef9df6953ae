"""The query arguments the pages and the API share, read one way for both: dates (`since`, `until`: a date YYYY-MM-DD, a
date and time, or a Unix time), counts (`limit`, `page`) and seconds (a timeline's `start`, `end`), each refused with
a message that names the argument and the form it takes (a 422 the page shows as HTML and the API as JSON)."""

from __future__ import annotations

from datetime import datetime, timedelta

from fastapi import HTTPException

MAX_LIMIT = 10_000


def date_arg(name: str, text: str | None, end_of_day: bool = False) -> float | None:
    """A date as a Unix time: "2026-11-28" (the start of that day, local time, or its end for `until`),
    "2026-11-28T14:30", or a Unix time ("1795821934.6"). None when not given."""
    if text is None or text.strip() == "":
        return None
    try:
        return float(text)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise HTTPException(422, f"{name}={text!r} is not a date: give one as YYYY-MM-DD (or YYYY-MM-DDTHH:MM, "
                                 "or a Unix time)") from None
    if end_of_day and len(text.strip()) == 10:  # a whole day: until its end
        when += timedelta(days=1) - timedelta(microseconds=1)
    return when.timestamp()


def count_arg(name: str, text: str | None, default: int, low: int = 1, high: int = MAX_LIMIT) -> int:
    """A whole number from `low` to `high` (default when not given)."""
    if text is None or text.strip() == "":
        return default
    try:
        n = int(text)
    except ValueError:
        raise HTTPException(422, f"{name}={text!r} is not a whole number: give one from {low} to {high}") from None
    if not low <= n <= high:
        raise HTTPException(422, f"{name}={n} is out of range: give a number from {low} to {high}")
    return n


def seconds_arg(name: str, text: str | None) -> float | None:
    """Seconds, 0 or more (a point on a run's time axis); None when not given."""
    if text is None or text.strip() == "":
        return None
    try:
        value = float(text)
    except ValueError:
        raise HTTPException(422, f"{name}={text!r} is not a number of seconds: give one such as 12.5") from None
    if not 0 <= value < float("inf"):
        raise HTTPException(422, f"{name}={text!r} is out of range: give seconds from 0 on")
    return value


def flag_arg(name: str, text: str | None) -> bool | None:
    """true/false (yes/no, 1/0); None when not given or empty ("any")."""
    if text is None or text.strip() == "":
        return None
    value = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}.get(text.strip().lower())
    if value is None:
        raise HTTPException(422, f"{name}={text!r}: give true or false")
    return value
