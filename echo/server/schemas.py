"""What the JSON API returns (separate from the store's models)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


# "copy" would shadow BaseModel.copy: the field is copy_ in Python and "copy" in JSON
def _copy_field() -> Any:  # noqa: ANN401 (a pydantic FieldInfo)
    return Field(validation_alias="copy", serialization_alias="copy")


class RunOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: str
    program: str
    argv: list[str]
    mode: str
    nranks: int
    nprocs: int
    copies: list[int]
    started_at: float
    duration: float
    exit_status: int
    status: str
    diverged: bool
    host: str
    mpi_library: str
    injections: list[dict[str, Any]] = []
    role_values: dict[str, str] = {}  # the roles' values of the run ({"perturbation": "rounding (lockstep)"})


class ProcOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    real_rank: int
    app_rank: int
    copy_: int = _copy_field()
    role: str
    host: str
    pid: int
    state: str
    calls: int
    bytes: int
    mpi_time: float
    wall_time: float


class EventOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    kind: str
    app_rank: int | None
    copy_: int | None = _copy_field()
    call_seq: int | None
    message: str


class MetricOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    app_rank: int
    copy_: int = _copy_field()
    name: str
    value: float
    unit: str


class DivergentCopy(BaseModel):
    app_rank: int
    copy_: int = _copy_field()
    count: int
    corrected: int
    first_call: int | None
    first: str


class Divergences(BaseModel):
    run_id: str
    diverged: bool
    copies: list[DivergentCopy]
    diverging_since: str | None  # the first run of the current streak of diverged runs of its series (crud.series)
    diverging_since_time: float | None


class SeriesOut(BaseModel):
    """Runs of one configuration of a program (crud.series): its trend, and where its streak began."""

    label: str
    runs: list[str]  # run ids, oldest first
    deliberate: list[str]  # its runs with an injection or a perturbation (left out of the streaks)
    diverging_since: str | None
    clean_since: str | None


class Stored(BaseModel):
    run_id: str
    stored: bool = True
