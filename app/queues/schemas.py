"""HTTP shapes of the matchmaking queue."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.ids import Identifier

AttributeValue = str | int | float | bool


class TicketIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    players: list[Identifier] = Field(min_length=1, max_length=100, description="one player or a party")
    attributes: dict[Identifier, AttributeValue] = Field(
        default_factory=dict, max_length=16, description="must be equal for two tickets to share a match"
    )


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
    proposal_id: str
    teams: list[list[str]]
    ticket_ids: list[str]
    quality: float
    longest_wait_s: float


class TicketOut(BaseModel):
    ticket_id: str
    status: Literal["queued", "matched", "cancelled", "expired"]
    match: ProposalOut | None


class MatchmakeIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_matches: int = Field(10, ge=1, le=10_000)


class MatchmakeOut(BaseModel):
    matches: list[ProposalOut]


class QueueStats(BaseModel):
    tickets: int
    players: int
    oldest_wait_s: float
