"""HTTP shapes of leaderboards."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from app.schemas import RatingOut


class Entry(BaseModel):
    # Answers always hold every field (generated clients type them as present); the defaults
    # read stored responses written before a field existed.
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    rank: int = Field(description="1 for the best; ties in conservative are broken by player id")
    player_id: str
    rating: RatingOut = Field(
        description="with drift, conservative is drifted to the mode's drift_as_of (under a day old)"
    )
    matches: int
    tier: str | None = Field(None, description="null without tiers, or for a player with no tier yet")


# A re-score (after a change of conservative_k or drift_per_day, or the daily drift re-rank)
# rewrites the stored scores in batches (app.leaderboards.rescore).
RESCORING = (
    "true while the mode's stored scores are being rewritten after a change of conservative_k or "
    "drift_per_day, or by the daily drift re-rank: ranks are exact for the values shown, but players "
    "not reached yet show their score by the previous settings (or drift instant)"
)


class LeaderboardPage(BaseModel):
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    entries: list[Entry]
    next_cursor: str | None
    rescoring: bool = Field(False, description=RESCORING)


class Standing(BaseModel):
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    rank: int
    total: int = Field(description="players on the leaderboard")
    percentile: float = Field(description="share of the leaderboard ranked below this player, in percent")
    entries: list[Entry] = Field(description="the player and up to `around` neighbours each side, best first")
    rescoring: bool = Field(False, description=RESCORING)


class TierCount(BaseModel):
    name: str
    min: float
    players: int = Field(
        description="ranked players placed in this tier by the current tier settings, exact after every write"
    )


class TierCounts(BaseModel):
    tiers: list[TierCount] = Field(description="the mode's tiers, lowest first; [] without tiers")
    retiering: int = Field(
        description="players still in a tier of the settings before the last change, which its re-tier "
        "job (or their next match) has yet to move; 0 once it is done",
    )
