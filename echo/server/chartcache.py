"""Charts drawn once for what they show. matplotlib takes 0.2 to 0.9 s a chart on a loaded host, and the run page of
a small run draws three at every request, though a stored run never changes once ingested. But a re-ingest
(`mpiecho ingest`, an upload) replaces its rows under the same id, and its record files, which the timeline reads,
may be moved or deleted: so a chart is kept under a digest of everything it is drawn from (the values it plots, the
record files' names, sizes and modification times), never under the run's id alone. A changed input is a new key,
drawn again; the page shows exactly what drawing it now would.

Kept in the server's memory, the MAX_KEPT charts used last (tens of KB each): a restarted server draws each once."""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable

MAX_KEPT = 64

_kept: OrderedDict[str, str | None] = OrderedDict()
_lock = threading.Lock()  # pages are served from a pool of threads


def drawn(kind: str, inputs: object, draw: Callable[[], str | None]) -> str | None:
    """The chart `draw()` makes from `inputs` (plain values whose repr says all of them: tuples, numbers, texts),
    drawn the first time these inputs are seen and kept; `kind` names the chart (the same inputs of two charts are
    two charts)."""
    key = f"{kind}:{hashlib.sha256(repr(inputs).encode()).hexdigest()}"
    with _lock:
        if key in _kept:
            _kept.move_to_end(key)
            return _kept[key]
    chart = draw()  # outside the lock: another page's chart need not wait for this one
    with _lock:
        _kept[key] = chart
        while len(_kept) > MAX_KEPT:
            _kept.popitem(last=False)
    return chart
