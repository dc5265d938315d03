"""Helpers shared by the queue tests."""

from __future__ import annotations

import json
import secrets
from typing import Any

import httpx


async def make_mode(client: httpx.AsyncClient, headers: dict[str, str], **params: Any) -> str:
    """A fresh mode with the given parameters, so tests never share a queue."""
    name = f"q-{secrets.token_hex(4)}"
    response = await client.put(f"/v1/modes/{name}", json=params, headers=headers)
    assert response.status_code == 200, response.text
    return name


def render(
    proposal_id: str,
    claim: object,
    ticket_ids: list[str],
    teams: list[list[str]],
    roles: dict[str, str] | None,
) -> bytes:
    """A proposal's JSON for QueueStore.claim (the service writes ProposalOut's)."""
    body = {"proposal_id": proposal_id, "teams": teams, "ticket_ids": ticket_ids, "roles": roles}
    return json.dumps(body).encode()


def render_pending(
    proposal_id: str,
    claim: object,
    ticket_ids: list[str],
    teams: list[list[str]],
    roles: dict[str, str] | None,
) -> bytes:
    """A proposal's JSON under a ready check, laid out as the service writes it: its id, then
    its state (the scripts rewrite the state in place)."""
    body = {"proposal_id": proposal_id, "state": "pending", "teams": teams, "ticket_ids": ticket_ids}
    return json.dumps(body, separators=(",", ":")).encode()
