"""HTTP shapes of match results, and the validation API.md asks for."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, PlainValidator, field_validator
from pydantic_core import to_json

from app.ids import Identifier, PlayerId
from app.schemas import Problem, RatingOut

MAX_PLAYERS = 1000
MAX_BATCH = 1000
FUTURE_SLACK = dt.timedelta(minutes=5)


class PlayerIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: PlayerId
    weight: float = Field(1.0, ge=0.0, le=1.0, allow_inf_nan=False, description="partial play in [0, 1]")
    coefficient: float | None = Field(
        None,
        gt=0.0,
        le=1e6,
        allow_inf_nan=False,
        description="the player's coefficient in the team performance, for modes with "
        "team_performance 'weighted' (default 1)",
    )


class TeamIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    players: list[PlayerIn] = Field(min_length=1, max_length=MAX_PLAYERS)
    rank: float | None = Field(None, allow_inf_nan=False, description="lower is better; equal ranks tie")
    score: float | None = Field(None, allow_inf_nan=False, description="higher is better; equal scores tie")


class MatchIn(BaseModel):
    """A finished match. Each team has a rank or a score (one style per match)."""

    model_config = ConfigDict(extra="forbid")

    match_id: Identifier
    mode: Identifier = "default"
    played_at: AwareDatetime | None = Field(None, description="RFC 3339 with a zone; default now")
    teams: list[TeamIn] = Field(min_length=2, max_length=MAX_PLAYERS)

    @field_validator("played_at")
    @classmethod
    def _not_in_the_future(cls, value: dt.datetime | None) -> dt.datetime | None:
        if value is not None and value > dt.datetime.now(dt.UTC) + FUTURE_SLACK:
            raise ValueError("played_at is more than 5 minutes in the future")
        return value


def consistency_errors(match: MatchIn) -> list[dict[str, object]]:
    """Cross-field rules, each error located at its field (pydantic would lose the location)."""
    errors: list[dict[str, object]] = []

    def error(loc: tuple[str | int, ...], msg: str) -> None:
        errors.append({"loc": ["body", *loc], "msg": msg})

    for index, team in enumerate(match.teams):
        if team.rank is not None and team.score is not None:
            error(("teams", index), "give rank or score, not both")
        elif team.rank is None and team.score is None:
            error(("teams", index), "every team needs a rank or a score")
    if any(t.rank is not None for t in match.teams) and any(t.score is not None for t in match.teams):
        error(("teams",), "ranks and scores are mixed; use one style per match")
    seen: set[str] = set()
    total = 0
    for index, team in enumerate(match.teams):
        for position, player in enumerate(team.players):
            if player.id in seen:
                error(("teams", index, "players", position, "id"), f"player {player.id!r} appears twice")
            seen.add(player.id)
        total += len(team.players)
        if not any(p.weight > 0 for p in team.players):
            error(("teams", index, "players"), "a team needs a player with a positive weight")
    if total > MAX_PLAYERS:
        error(("teams",), f"a match has at most {MAX_PLAYERS} players, got {total}")
    return errors


class Placement(BaseModel):
    played: int = Field(description="matches played in the mode, at most `of`")
    of: int = Field(description="the mode's placement matches (its min_matches_for_leaderboard)")


class TierChange(BaseModel):
    before: str | None = Field(description="the tier before the match (null: not placed yet)")
    after: str | None = Field(description="the tier after it (null: still placing)")
    promoted: bool
    demoted: bool


class MatchPlayerOut(BaseModel):
    # Answers always hold every field (generated clients type them as present); the defaults
    # read stored responses written before a field existed.
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    player_id: str
    team: int
    before: RatingOut = Field(
        description="the rating the match started from: the stored one drifted to played_at "
        "(the mode's drift_per_day), before tau is added"
    )
    after: RatingOut
    provisional: bool = Field(
        False, description="true while the player has played fewer than the mode's placement matches"
    )
    placement: Placement | None = Field(None, description="null when the mode has no placement matches")
    tier: TierChange | None = Field(None, description="null when the mode has no tiers")


class MatchOut(BaseModel):
    # Every answer holds `void`: the document says so (generated clients type it as present).
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    match_id: str
    mode: str
    played_at: dt.datetime
    created: bool = Field(description="true when this request applied the match")
    quality: float = Field(description="draw quality of the pre-match ratings (seed 000 eq. 7)")
    void: bool = False
    players: list[MatchPlayerOut]


def match_json(match: MatchOut) -> bytes:
    """The one wire form of a match result: compact JSON in MatchOut's field order. POST
    answers it, the matches row stores it, a retry's 200 is it with `created` false, so the
    two differ in nothing else."""
    return MatchOut.__pydantic_serializer__.to_json(match)


UnvalidatedMatch = Annotated[Any, PlainValidator(lambda item: item, json_schema_input_type=MatchIn)]


class BatchIn(BaseModel):
    """Matches to record in one transaction, in the listed order."""

    model_config = ConfigDict(extra="forbid")

    # Items are validated one by one (app.api.matches), so that a bad item fails alone: here
    # they stay as sent, and the document names their schema (MatchIn) rather than a copy of it.
    matches: Annotated[list[UnvalidatedMatch], Field(min_length=1, max_length=MAX_BATCH)]


class BatchItemOut(BaseModel):
    match_id: str | None = Field(description="the item's match_id (null when it has none)")
    status: int = Field(
        description="201, 200, 403, 409 or 422: what POST /v1/matches would answer (403: a mode "
        "outside the key's modes)"
    )
    match: MatchOut | None = Field(description="the response of a 201 or 200, else null")
    problem: Problem | None = Field(description="the problem+json of a 403, 409 or 422, else null")


class BatchOut(BaseModel):
    results: list[BatchItemOut] = Field(description="one per posted match, in the posted order")


def wire_json(data: Any) -> bytes:
    """Plain data in the wire form: the serialiser of match_json (pydantic-core's), given
    dicts, lists, numbers, strings and datetimes instead of models. A batch writes its matches
    this way, as dicts in MatchOut's field order, without building thirteen models per 2v2
    match; tests/matches/test_schemas.py checks that the bytes are match_json's."""
    return to_json(data)


def batch_json(results: list[dict[str, Any]]) -> bytes:
    """BatchOut's wire form, from its results as plain data (a `match` may be a MatchOut)."""
    return wire_json({"results": results})
