"""A matchmaking call's proposals as the API shows them (ProposalOut), new matches and
backfills' fills alike: the one place their wire model is built.

The store's claim writes each proposal's JSON through a Render (store.py) and keeps it for its
tickets' lookups; the call answers with the same proposals, so the writer keeps what it built.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from app.queues.schemas import ProposalOut, ProposalState, to_json
from app.queues.store import ProposalClaim


class Filling(NamedTuple):
    """What a fill's proposal adds to a new match's: the backfill it fills and its roster's
    teams as the fill found them (the new players join them)."""

    backfill_id: str
    roster: Sequence[Sequence[str]]


class ProposalWriter:
    """The Render of one matchmaking call's claims: each proposal's ProposalOut, kept by id, and
    its JSON. Every proposal of a call shares its state (pending under a ready check, else
    accepted) and its deadline; a proposal listed in `fillings` is that backfill's fill."""

    def __init__(
        self, state: ProposalState, deadline: float | None, fillings: Mapping[str, Filling] | None = None
    ) -> None:
        self.state = state
        self.deadline = None if deadline is None else dt.datetime.fromtimestamp(deadline, dt.UTC)
        self.fillings: Mapping[str, Filling] = fillings or {}
        self.written: dict[str, ProposalOut] = {}

    def __call__(
        self,
        proposal_id: str,
        claim: ProposalClaim,
        ticket_ids: list[str],
        teams: list[list[str]],
        roles: dict[str, str] | None,
    ) -> bytes:
        filling = self.fillings.get(proposal_id)
        if filling is not None:
            teams = [[*old, *more] for old, more in zip(filling.roster, teams, strict=True)]
        # model_construct: every field is built here from values already checked (a call
        # writes thousands of proposals).
        proposal = self.written[proposal_id] = ProposalOut.model_construct(
            proposal_id=proposal_id,
            state=self.state,
            deadline=self.deadline,
            teams=teams,
            ticket_ids=ticket_ids,
            quality=float(claim.quality),
            longest_wait_s=float(claim.longest_wait),
            region=claim.region,
            roles=roles,
            kind="match" if filling is None else "backfill",
            backfill_id=None if filling is None else filling.backfill_id,
        )
        return to_json(proposal)

    def claimed(self, won: Sequence[tuple[int, str]]) -> list[ProposalOut]:
        """The proposals the claim took (its (index, proposal id) pairs), in its order."""
        return [self.written[proposal_id] for _, proposal_id in won]
