"""HTTP shapes of history jobs."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# A retier job is queued by a PUT of the mode that changes its tier settings, never posted.
JobKind = Literal["replay", "smooth", "season", "retier"]
JobStatus = Literal["queued", "running", "done", "failed"]


class ReplayJob(BaseModel):
    """Re-apply every non-void match of the mode, in played_at order, with its current parameters."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["replay"]


class SmoothJob(BaseModel):
    """TrueSkill Through Time over the mode's history (seed 001). Omitted parameters come
    from the mode: sigma, beta and draw_probability as they are, gamma = the mode's
    drift_per_day when it has one, else tau (per day)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["smooth"]
    gamma: float | None = Field(None, ge=0, le=1e6, allow_inf_nan=False, description="skill drift per day")
    sigma: float | None = Field(None, ge=1e-9, le=1e15, allow_inf_nan=False, description="prior sigma")
    iterations: int = Field(
        1000, ge=1, le=100_000, description="cap on sweeps (backward then forward passes over the days)"
    )
    epsilon: float = Field(
        1e-6,
        ge=0,
        le=1e6,
        allow_inf_nan=False,
        description="stop when the curves are estimated within this distance of the fixed point "
        "(largest |Δmu| or |Δsigma|); the result's tolerance and capped say what was reached",
    )


JobIn = Annotated[ReplayJob | SmoothJob, Field(discriminator="kind")]


class JobAccepted(BaseModel):
    job_id: str


class JobOut(BaseModel):
    job_id: str
    mode: str
    kind: JobKind
    status: JobStatus
    progress: float = Field(description="0..1")
    params: dict[str, Any]
    result: dict[str, Any] | None
    error: str | None = Field(description="why a failed job failed")
    created_at: dt.datetime
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
