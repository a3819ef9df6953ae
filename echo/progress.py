"""How far long work is (storing a big run, uploading it, exporting it), on standard error: where someone watches
it (standard error is a terminal: the line is redrawn in place, and only once the work has taken a second, so
short work says nothing), or everywhere when asked (--progress: a line at most once a second, for logs). Quiet
in pipes and CI otherwise: their logs keep only what matters."""

from __future__ import annotations

import sys
import time

FORCED = False  # --progress: say it even where standard error is not a terminal
DELAY = 1.0  # seconds between two lines, and before the first on a terminal


def say(msg: str) -> None:
    """One line of echo's own on standard error (the job's output keeps standard output): "echo: MSG"."""
    print(f"echo: {msg}", file=sys.stderr, flush=True)


class Progress:
    """`echo WHAT: DONE of TOTAL UNIT (P%)[, DETAIL]`, e.g. "echo upload: 12.0 of 48.3 MiB (25%)". Used as a
    context manager, so that work cut short leaves the terminal's line ended."""

    def __init__(self, what: str, total: float, unit: str) -> None:
        self.what, self.total, self.unit = what, total, unit
        self.done = 0.0
        self.tty = sys.stderr.isatty()
        self.on = FORCED or self.tty
        self.said = False
        # forced: the first step says at once; on a terminal: not before the work has lasted DELAY
        self.last = float("-inf") if FORCED else time.monotonic()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.tty and self.said and self.done < self.total:  # cut short: the next message starts on its own line
            sys.stderr.write("\n")

    def _amount(self, n: float) -> str:
        if self.unit == "MiB":
            return f"{n / 2**20:.1f}"
        return f"{n / 1e6:.1f} M" if self.total >= 1e6 else f"{n:.0f}"

    def step(self, amount: float, detail: str = "") -> None:
        """`amount` more is done; says so if a line is due, and always at the end once anything was said."""
        self.done += amount
        if not self.on:
            return
        now = time.monotonic()
        end = self.done >= self.total
        if now - self.last < DELAY and not (end and (self.said or FORCED)):
            return
        self.last = now
        pct = 100 * self.done / self.total if self.total else 100
        text = (f"echo {self.what}: {self._amount(self.done)} of {self._amount(self.total)} {self.unit} "
                f"({pct:.0f}%)" + (f", {detail}" if detail else ""))
        if self.tty:  # one line, redrawn; the last one stays
            sys.stderr.write("\r\033[K" + text + ("\n" if end else ""))
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()
        self.said = True
