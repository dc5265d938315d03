"""HTTP shapes of the matchmaking queue."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.ids import Identifier, PlayerId

AttributeValue = str | int | float | bool
LatencyMs = Annotated[float, Field(ge=0, le=60_000, allow_inf_nan=False)]
MAX_REGIONS = 32
# Ids a ticket's avoid list may hold per player of the ticket.
AVOID_PER_PLAYER = 100
MAX_PLAYERS = 100
# A long-poll waits at most this many seconds.
MAX_WAIT_SECONDS = 60.0
# Where a long-poll's client last saw its ticket: queued, or in the pending proposal of this id.
SEEN_PATTERN = r"^(queued|[0-9a-f]{32})$"
ProposalState = Literal["pending", "accepted", "failed"]
Answer = Literal["accepted", "declined"]
FLAT_ATTRIBUTES = (
    "attributes are flat: each value is a string, a number or a boolean, not an object or a list"
)


class TicketIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    players: list[PlayerId] = Field(min_length=1, max_length=MAX_PLAYERS, description="one player or a party")
    attributes: dict[Identifier, AttributeValue] = Field(
        default_factory=dict,
        max_length=16,
        description="flat scalars (strings, numbers or booleans); equal for two tickets to share a match",
    )
    latencies: dict[Identifier, LatencyMs] = Field(
        default_factory=dict,
        max_length=MAX_REGIONS,
        description="milliseconds per region (any names); under the mode's max_latency_ms a match forms "
        "only in a region where every ticket is within the limit in force",
    )

    roles: dict[PlayerId, list[Identifier]] | None = Field(
        None,
        max_length=MAX_PLAYERS,
        description="under the mode's `roles`, the roles each player accepts, in their order of preference "
        '(e.g. {"alice": ["tank", "damage"]}); every player needs one role of the mode',
    )
    avoid: list[PlayerId] = Field(
        default_factory=list,
        max_length=AVOID_PER_PLAYER * MAX_PLAYERS,
        description=f"players none of the ticket's players may meet, as teammate or opponent (at most "
        f"{AVOID_PER_PLAYER} per player of the ticket); a match never holds two tickets either of which "
        "avoids the other",
    )

    @field_validator("roles")
    @classmethod
    def listed(cls, value: dict[str, list[str]] | None) -> dict[str, list[str]] | None:
        if value is not None and any(not 1 <= len(names) <= 16 for names in value.values()):
            raise ValueError("each player lists 1 to 16 roles")
        return value

    @field_validator("attributes", mode="before")
    @classmethod
    def flat(cls, value: Any) -> Any:
        # Said once for the field, rather than pydantic's four union members per nested value.
        if isinstance(value, dict) and any(isinstance(v, dict | list) for v in value.values()):
            raise ValueError(FLAT_ATTRIBUTES)
        return value


class TicketCreated(BaseModel):
    ticket_id: str
    status: Literal["queued"]
    created_at: dt.datetime


class TicketBatchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tickets: list[TicketIn] = Field(min_length=1, max_length=1000)


class TicketOutcome(BaseModel):
    """One ticket of a batch: queued (with its id), or rejected because a player already
    holds an active ticket in the mode (`detail` names them)."""

    ticket_id: str | None
    status: Literal["queued", "rejected"]
    created_at: dt.datetime | None
    detail: str | None


class TicketBatchOut(BaseModel):
    tickets: list[TicketOutcome]


class ProposalOut(BaseModel):
    # Every answer holds `region` and `roles` (null when none): the document says so.
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    # The id, then the state: the queue's scripts rewrite the state in place (scripts.py).
    proposal_id: str
    state: ProposalState = Field(
        "accepted",
        description="pending while its ready check runs (the mode's accept_timeout_s), then accepted "
        "(every player accepted: start the game) or failed (a decline, the deadline passed, or a "
        "requeue); accepted at once without a ready check",
    )
    deadline: dt.datetime | None = Field(
        None,
        description="when the ready check ends, failing the proposal unless everyone accepted; null "
        "without one",
    )
    teams: list[list[str]]
    ticket_ids: list[str]
    quality: float
    longest_wait_s: float
    region: str | None = Field(None, description="where to play it, under latencies; else null")
    roles: dict[str, str] | None = Field(
        None, description="under the mode's roles: each player's role in the match; else null"
    )
    kind: Literal["match", "backfill"] = Field(
        "match",
        description="match: a new match of queued tickets; backfill: a fill of a backfill's open slots, "
        "whose `teams` list its whole roster with the new players in it",
    )
    backfill_id: str | None = Field(None, description="the backfill filled; null for a match")


class ProposalDetail(ProposalOut):
    """A proposal with its players' answers to the ready check so far."""

    answers: dict[str, Answer | None] = Field(
        description="each player of the proposal: accepted, declined, or null (no answer yet, or no "
        "ready check)"
    )


class AnswerIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    players: list[Identifier] = Field(
        min_length=1,
        max_length=MAX_PLAYERS,
        description="players of the proposal answering (a party's together)",
    )


class TicketOut(BaseModel):
    # Every answer holds `estimated_wait_s` (null but for queued tickets): the document says so.
    model_config = ConfigDict(json_schema_serialization_defaults_required=True)

    ticket_id: str
    status: Literal["queued", "matched", "cancelled", "expired"]
    match: ProposalOut | None
    estimated_wait_s: float | None = Field(
        None,
        description="queued tickets: the expected wait in all, in seconds from enqueueing, from the queue "
        "as the latest matchmaking call left it and the waits of recently matched tickets like it (skill "
        "and uncertainty bands, region), never less than its wait so far; null before the mode has "
        "matched any, and for tickets not queued",
    )


class RequeueIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cancel: list[Identifier] = Field(
        default_factory=list, max_length=1000, description="tickets of the proposal to cancel (who declined)"
    )


class RequeuedTicket(BaseModel):
    ticket_id: str
    status: Literal["queued", "cancelled", "expired"]


class RequeueOut(BaseModel):
    proposal_id: str
    tickets: list[RequeuedTicket]


# A backfill lives at most this long (its TTL), and this long when none is given.
MAX_BACKFILL_TTL_S = 86_400.0
BACKFILL_TTL_S = 3_600.0
Roster = Annotated[
    list[Annotated[list[PlayerId], Field(max_length=MAX_PLAYERS)]],
    Field(min_length=2, max_length=MAX_PLAYERS, description="per team, its players' ids"),
]
# A new roster may keep an erased player's pseudonym that the backfill names (their slot in
# the game): app.queues.backfills refuses any other, as PlayerId refuses every one elsewhere.
NewRoster = Annotated[
    list[Annotated[list[Identifier], Field(max_length=MAX_PLAYERS)]],
    Field(min_length=2, max_length=MAX_PLAYERS, description="per team, its players' ids"),
]


class BackfillIn(BaseModel):
    """A game to backfill: its roster, whose open slots (up to the mode's team_size per team)
    the queue fills."""

    model_config = ConfigDict(extra="forbid")

    teams: Roster
    attributes: dict[Identifier, AttributeValue] = Field(
        default_factory=dict,
        max_length=16,
        description="as a ticket's: only tickets with equal attributes fill the backfill",
    )
    region: Identifier | None = Field(
        None,
        description="where the game runs: under the mode's max_latency_ms, only tickets within the limit "
        "there (or listing no latencies) fill it",
    )
    latencies: dict[Identifier, LatencyMs] = Field(
        default_factory=dict,
        max_length=MAX_REGIONS,
        description="instead of `region`: the roster's latency per region; the game's region is the "
        "lowest of them",
    )
    ttl_s: float = Field(
        BACKFILL_TTL_S,
        ge=1,
        le=MAX_BACKFILL_TTL_S,
        allow_inf_nan=False,
        description="seconds until the backfill ends by itself (at most a day)",
    )

    @field_validator("attributes", mode="before")
    @classmethod
    def flat(cls, value: Any) -> Any:
        if isinstance(value, dict) and any(isinstance(v, dict | list) for v in value.values()):
            raise ValueError(FLAT_ATTRIBUTES)
        return value


class BackfillUpdate(BaseModel):
    """A backfill's new roster: players left or joined."""

    model_config = ConfigDict(extra="forbid")

    teams: NewRoster
    version: int | None = Field(
        None,
        ge=1,
        description="the version this roster was computed from: 409 when the backfill has moved on",
    )


class BackfillOut(BaseModel):
    backfill_id: str
    version: int = Field(description="raised by every change: a fill, a new roster")
    teams: list[list[str]] = Field(description="the roster, with the players of fills not yet failed")
    pending: list[str] = Field(description="players of fills whose ready check runs (in `teams` too)")
    open_slots: list[int] = Field(description="per team, the slots the queue may still fill")
    attributes: dict[str, AttributeValue]
    region: str | None
    created_at: dt.datetime
    expires_at: dt.datetime
    fill_ids: list[str] = Field(description="the proposals of its fills still pending")


class MatchmakeIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_matches: int = Field(10, ge=1, le=10_000)


class MatchmakeOut(BaseModel):
    matches: list[ProposalOut]


def to_json(model: BaseModel) -> bytes:
    """A response's JSON, from its schema: pydantic's own serialiser of the model's class (the
    routes that answer bytes use it, and OpenAPI describes the same model)."""
    return model.__pydantic_serializer__.to_json(model)


class QueueStats(BaseModel):
    tickets: int
    players: int
    oldest_wait_s: float


class RegionWaiting(BaseModel):
    region: str | None = Field(
        description="where the tickets' latency is lowest, else their `region` attribute; null: neither"
    )
    tickets: int
    players: int


class WindowStats(BaseModel):
    minutes: int = Field(description="the window: the last 1, 5 or 15 minutes (to within 15 s)")
    matches: int = Field(description="proposals formed in the window")
    tickets_matched: int
    wait_p50_s: float | None = Field(description="time to match of the tickets matched; null: none")
    wait_p90_s: float | None
    wait_p99_s: float | None
    quality_p10: float | None = Field(description="draw quality of the matches formed; null: none")
    quality_p50: float | None
    quality_p90: float | None


class QueueStatistics(BaseModel):
    tickets: int = Field(description="tickets waiting")
    players: int = Field(description="players waiting")
    counted_at: dt.datetime = Field(description="when the waiting tickets were counted")
    regions: list[RegionWaiting]
    windows: list[WindowStats]
