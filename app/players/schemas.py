"""HTTP shapes of players and their ratings."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, ConfigDict, Field

from app.schemas import RatingOut


class ModeRating(BaseModel):
    mode: str
    rating: RatingOut
    matches: int
    wins: int
    losses: int
    draws: int
    last_played_at: dt.datetime | None


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
