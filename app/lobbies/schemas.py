"""HTTP shapes of lobby evaluation and balancing."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from app.ids import Identifier

MAX_LOBBY = 1000
MAX_BALANCE = 100


class EvaluateIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Identifier = "default"
    teams: list[list[Identifier]] = Field(min_length=2, max_length=MAX_LOBBY)


class EvaluateOut(BaseModel):
    quality: float = Field(description="draw quality (seed 000 eq. 7, general form), in (0, 1]")
    win_probabilities: list[float] = Field(description="probability each team finishes first; sums to 1")


class BalanceIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Identifier = "default"
    players: list[Identifier] = Field(min_length=2, max_length=MAX_BALANCE)
    teams: int = Field(2, ge=2, le=50)
    parties: list[list[Identifier]] = Field(default_factory=list, max_length=MAX_BALANCE)
    roles: dict[Identifier, list[Identifier]] | None = Field(
        None,
        max_length=MAX_BALANCE,
        description="under the mode's `roles`, the roles each player accepts (as a ticket lists them); every "
        "team then meets the composition, and the teams hold teams × its size players",
    )


class BalanceOut(BaseModel):
    # Every answer holds `roles` (null without a composition): the document says so.
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    teams: list[list[str]]
    quality: float
    exact: bool = Field(description="true when the split is proven best (up to 12 players)")
    roles: dict[str, str] | None = Field(
        None, description="under the mode's roles: each player's role; else null"
    )
