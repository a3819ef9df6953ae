"""JSON: everything the store knows about a run, as plain tables (the run with its roles' values, its processes, call
summaries, events, metrics). Reads the store only."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from echo.store.models import CallSummary, Event, Metric, Proc, Run


def tables(session: Session, run: Run) -> dict[str, Any]:
    def plain(obj: Any, skip: tuple[str, ...] = ("id", "run_id")) -> dict[str, Any]:
        return {c.name: getattr(obj, c.name) for c in obj.__table__.columns if c.name not in skip}

    data = plain(run, skip=())
    data["role_values"] = run.role_values  # the roles' values of the run (the perturbation's label)
    for key, model in (("procs", Proc), ("call_summaries", CallSummary), ("events", Event), ("metrics", Metric)):
        data[key] = [plain(o) for o in session.scalars(select(model).where(model.run_id == run.id).order_by(model.id))]
    return data


def write(session: Session, run: Run, output: Path | None) -> str | None:
    text = json.dumps(tables(session, run), indent=2) + "\n"
    if output is None:
        sys.stdout.write(text)
        return None
    output.write_text(text)
    return f"wrote run {run.id} as JSON tables to {output}"
