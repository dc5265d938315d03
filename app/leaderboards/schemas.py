"""HTTP shapes of leaderboards."""

from __future__ import annotations

from pydantic import BaseModel, Field

from app.schemas import RatingOut


class Entry(BaseModel):
    rank: int = Field(description="1 for the best; ties in conservative are broken by player id")
    player_id: str
    rating: RatingOut
    matches: int


class LeaderboardPage(BaseModel):
    entries: list[Entry]
    next_cursor: str | None


class Standing(BaseModel):
    rank: int
    total: int = Field(description="players on the leaderboard")
    percentile: float = Field(description="share of the leaderboard ranked below this player, in percent")
    entries: list[Entry] = Field(description="the player and up to `around` neighbours each side, best first")
