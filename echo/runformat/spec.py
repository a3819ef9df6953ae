"""The grammar of echorun's injection and role options: `kind:key=value,key=value` items, several separated
by ';' (--inject's bitflip, memflip, slow and kill; --perturb's noise and jitter).

One parser for all of them; what each kind accepts, and the one-line error naming the fix, stays with the option's owner
(echo/sdc.py, echo/perf.py, echo/modes/sdr.py, echo/modes/reinit.py, echo/collectors/perturb), which knows what its
settings mean. The clones map (echo/runformat/copymap.py), --valgrind's COPY:TOOL and --papi-sets' event lists are other
grammars.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Spec:
    text: str  # the item as the user wrote it, for error messages
    kind: str  # before the ':' (the whole item if it has none)
    has_settings: bool  # whether a ':' follows the kind
    values: dict[str, str]  # key -> value; a setting without '=' maps to ""
    settings: tuple[str, ...]  # the settings as written ("key=value"), in their order

    @property
    def not_key_value(self) -> tuple[str, ...]:
        """The settings without '=', in their order."""
        return tuple(s for s in self.settings if "=" not in s)

    def unknown(self, keys: tuple[str, ...]) -> str | None:
        """The first setting that is not `key=value` with one of `keys`, None if there is none."""
        return next((s for s in self.settings if "=" not in s or s.partition("=")[0] not in keys), None)


def parse_spec(text: str) -> Spec:
    """One `kind:key=value,...` item (empty items between commas are skipped; the last of a repeated key wins)."""
    kind, sep, rest = text.partition(":")
    settings = tuple(item for item in rest.split(",") if item)
    return Spec(text, kind, bool(sep), dict(s.partition("=")[::2] for s in settings), settings)


def split_specs(text: str | None) -> list[str]:
    """The ';'-separated items of an option, stripped, without empty ones."""
    return [s.strip() for s in (text or "").split(";") if s.strip()]


def seconds(text: str) -> float:
    """A duration as the options write it: 1.5, 2s, 500ms or 1m (ValueError if it is none)."""
    for suffix, scale in (("ms", 1e-3), ("s", 1.0), ("m", 60.0)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * scale
    return float(text)
