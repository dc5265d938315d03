"""HTTP shapes of players and their ratings."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, ConfigDict, Field

from app.matches.schemas import Placement
from app.schemas import RatingOut


class Drift(BaseModel):
    """The time away a rating read shows (the mode's drift_per_day, seed 001 eq. 4)."""

    days: float = Field(description="days since the last match, when the rating was read")
    sigma_at_last_match: float = Field(description="sigma as the last match left it; `rating` is drifted")


class ModeRating(BaseModel):
    mode: str
    rating: RatingOut = Field(
        description="drifted to the time of the read: sigma = sqrt(sigma² + drift_per_day² · days away)"
    )
    matches: int
    wins: int
    losses: int
    draws: int
    last_played_at: dt.datetime | None
    displayed: float = Field(
        description="the rating clients show (rounded): display_offset + display_scale · conservative"
    )
    provisional: bool = Field(description="fewer matches than the mode's placement matches")
    placement: Placement | None = Field(description="null when the mode has no placement matches")
    tier: str | None = Field(
        description="null without tiers or before placement; it moves at matches only (not while away)"
    )
    drift: Drift | None = Field(description="null when the mode has no drift")


class PlayerOut(BaseModel):
    player_id: str
    ratings: list[ModeRating]


class PlayerMatch(BaseModel):
    match_id: str
    mode: str
    played_at: dt.datetime
    team: int
    rank: int | float = Field(
        description="the team's rank as posted (lower is better), or minus its score for a match "
        "posted with scores; an integer when whole"
    )
    weight: float
    void: bool
    before: RatingOut
    after: RatingOut


class PlayerMatches(BaseModel):
    matches: list[PlayerMatch]
    next_cursor: str | None


class RatingSet(BaseModel):
    """Seed or override a rating (migrations from other systems)."""

    model_config = ConfigDict(extra="forbid")

    mu: float = Field(ge=-1e15, le=1e15, allow_inf_nan=False)
    sigma: float = Field(ge=1e-12, le=1e15, allow_inf_nan=False)


class CurvePoint(BaseModel):
    t: dt.datetime = Field(description="online: when the match was played; smoothed: the UTC day (00:00)")
    mu: float
    sigma: float


class LearningCurve(BaseModel):
    player_id: str
    mode: str
    online: list[CurvePoint] = Field(description="the rating after each non-void match, by played_at")
    smoothed: list[CurvePoint] | None = Field(
        description="TrueSkill Through Time posteriors per day played, from the mode's last smooth job; "
        "null before the first"
    )
    smoothed_by_job: str | None
