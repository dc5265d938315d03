"""The typed client covers every operation of openapi/openapi.json, and each one makes a real
round trip: AsyncClient through the app in-process, Client through a live uvicorn."""

from __future__ import annotations

import asyncio
import inspect
import json
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI

from app.client import ApiError, AsyncClient, Client
from app.client.calls import Operation
from app.client.operations import Operations
from tests.client.recording import RecordingASGITransport, RecordingTransport, route_of
from tests.conftest import ADMIN_KEY

DOCUMENT = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"
# Client names kept from before they were named by operationId.
RENAMED = {"get_player_matches": "player_matches", "put_player_rating": "set_rating"}


def documented() -> dict[tuple[str, str], str]:
    """(method, route) -> operationId, from the checked-in document."""
    paths = json.loads(DOCUMENT.read_text())["paths"]
    return {(m.upper(), path): op["operationId"] for path, item in paths.items() for m, op in item.items()}


def client_operations() -> dict[str, Operation[Any, Any]]:
    return {name: op for name, op in vars(Operations).items() if isinstance(op, Operation)}


def test_every_documented_operation_has_one_client_method() -> None:
    ops = client_operations()
    by_route = {(op.method, op.route): name for name, op in ops.items()}
    assert len(by_route) == len(ops), "two client methods send the same route"
    assert set(by_route) == set(documented())
    for route, operation_id in documented().items():
        assert by_route[route] == RENAMED.get(operation_id, operation_id), route
    # Both clients expose them with the same parameters.
    for name, op in ops.items():
        assert getattr(Client, name) is op and getattr(AsyncClient, name) is op


async def ready(value: Any) -> Any:
    """The answer of a call, from either client (the async one returns awaitables)."""
    return await value if inspect.isawaitable(value) else value


def failed_job(database_url: str) -> Callable[[str], str]:
    """Makes a failed replay job of a mode, as a job the runner marked failed (no request can
    make one fail on purpose): its id."""

    def make(mode: str) -> str:
        job_id = f"{mode}-failed"
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO jobs (id, mode, kind, params, status, error, finished_at)"
                " VALUES (%s, %s, 'replay', '{}', 'failed', 'injected', now())",
                (job_id, mode),
            )
        return job_id

    return make


async def scenario(api: Client | AsyncClient, fail: Callable[[str], str]) -> None:
    """Every operation once, each checked on what it answered; `fail` makes a failed job."""
    mode = f"cl-{secrets.token_hex(4)}"
    p1, p2, p3, p4 = (f"{mode}-p{i}" for i in range(1, 5))
    assert (await ready(api.healthz())).status == "ok"
    assert (await ready(api.readyz())).status == "ready"
    assert "http_request_duration_seconds" in await ready(api.metrics())

    tiers = [{"name": "low", "min": -1000.0}, {"name": "high", "min": 1000.0}]
    created = await ready(api.put_mode(mode, min_matches_for_leaderboard=1, beta=4.0, tiers=tiers))
    assert (created.name, created.beta, created.replay_recommended) == (mode, 4.0, False)
    assert (await ready(api.get_mode(mode))).beta == 4.0
    assert mode in [m.name for m in await ready(api.list_modes())]

    seeded = await ready(api.set_rating(p1, mode, 30.0, 5.0))
    assert [(r.mode, r.rating.mu) for r in seeded.ratings] == [(mode, 30.0)]
    match = {
        "match_id": f"{mode}-m1",
        "mode": mode,
        "teams": [{"players": [{"id": p1}], "rank": 1}, {"players": [{"id": p2}], "rank": 2}],
    }
    first = await ready(api.post_match(match))
    again = await ready(api.post_match(match))
    assert (first.created, again.created) == (True, False)
    assert (await ready(api.get_match(f"{mode}-m1"))).players == first.players
    second = {**match, "match_id": f"{mode}-m2"}
    batch = await ready(api.post_matches_batch([match, second, {"match_id": f"{mode}-m2"}]))
    assert [(r.match_id, r.status) for r in batch.results] == [
        (f"{mode}-m1", 200),
        (f"{mode}-m2", 201),
        (f"{mode}-m2", 422),
    ]
    assert {r.mode for r in (await ready(api.get_player(p1))).ratings} == {mode}
    history = await ready(api.player_matches(p1, mode=mode, limit=10))
    assert [m.match_id for m in history.matches] == [
        f"{mode}-m2",
        f"{mode}-m1",
    ] and history.next_cursor is None
    assert len((await ready(api.get_learning_curve(p1, mode=mode))).online) == 2

    evaluated = await ready(api.evaluate_lobby({"mode": mode, "teams": [[p1], [p2]]}))
    assert sum(evaluated.win_probabilities) == pytest.approx(1.0)
    balanced = await ready(api.balance_lobby({"mode": mode, "players": [p1, p2, p3, p4]}))
    assert sorted(len(team) for team in balanced.teams) == [2, 2]

    ticket = await ready(api.create_ticket(mode, {"players": [p3]}))
    batch = await ready(api.create_tickets(mode, [{"players": [p4]}, {"players": [p3]}]))
    assert [t.status for t in batch.tickets] == ["queued", "rejected"]  # p3 holds a ticket
    assert (await ready(api.queue_stats(mode))).tickets == 2
    formed = await ready(api.matchmake(mode, max_matches=5))
    assert [sorted(m.ticket_ids) for m in formed.matches] == [
        sorted([ticket.ticket_id, batch.tickets[0].ticket_id])
    ]
    assert (await ready(api.get_ticket(mode, ticket.ticket_id))).status == "matched"
    # A long-poll on a ticket already matched answers at once.
    assert (await ready(api.get_ticket(mode, ticket.ticket_id, wait=5))).status == "matched"
    standing = await ready(api.get_player_ticket(mode, p3))
    assert (standing.ticket_id, standing.status) == (ticket.ticket_id, "matched")
    other = batch.tickets[0].ticket_id
    requeued = await ready(api.requeue_proposal(mode, formed.matches[0].proposal_id, cancel=[other]))
    assert {t.ticket_id: t.status for t in requeued.tickets} == {
        ticket.ticket_id: "queued",
        other: "cancelled",
    }
    assert await ready(api.cancel_ticket(mode, ticket.ticket_id)) is None
    late = await ready(api.create_ticket(mode, {"players": [p1]}))
    assert await ready(api.cancel_ticket(mode, late.ticket_id)) is None
    assert (await ready(api.get_ticket(mode, late.ticket_id))).status == "cancelled"
    # The ready check: one player accepts, the other declines; the queue's statistics count the
    # matches formed.
    await ready(api.put_mode(mode, accept_timeout_s=60, quality_start=0.0, quality_floor=0.0))
    await ready(api.create_tickets(mode, [{"players": [p1]}, {"players": [p2]}]))
    (pending,) = (await ready(api.matchmake(mode))).matches
    assert pending.state == "pending"
    assert (await ready(api.accept_proposal(mode, pending.proposal_id, [p1]))).answers[p1] == "accepted"
    assert (await ready(api.decline_proposal(mode, pending.proposal_id, [p2]))).state == "failed"
    assert (await ready(api.get_proposal(mode, pending.proposal_id))).answers == {
        p1: "accepted",
        p2: "declined",
    }
    assert [w.matches for w in (await ready(api.queue_statistics(mode))).windows] == [2, 2, 2]
    await ready(api.put_mode(mode, accept_timeout_s=None))
    assert (
        await ready(api.cancel_ticket(mode, (await ready(api.get_player_ticket(mode, p1))).ticket_id)) is None
    )
    # A backfill: filled by the next matchmaking call, then replaced and deleted.
    made = await ready(api.create_backfill(mode, {"teams": [[f"{mode}-b1"], []]}))
    assert (made.version, made.open_slots) == (1, [0, 1])
    await ready(api.create_ticket(mode, {"players": [p4]}))
    (fill,) = (await ready(api.matchmake(mode))).matches
    assert (fill.kind, fill.backfill_id, fill.teams) == ("backfill", made.backfill_id, [[f"{mode}-b1"], [p4]])
    assert (await ready(api.get_backfill(mode, made.backfill_id, wait=5))).version == 2
    replaced = await ready(api.replace_backfill(mode, made.backfill_id, {"teams": [[f"{mode}-b1"], []]}))
    assert (replaced.version, replaced.open_slots) == (3, [0, 1])
    assert await ready(api.delete_backfill(mode, made.backfill_id)) is None
    with pytest.raises(ApiError) as gone:
        await ready(api.get_backfill(mode, made.backfill_id))
    assert gone.value.status == 404

    board = await ready(api.get_leaderboard(mode, limit=1))
    assert len(board.entries) == 1 and board.next_cursor is not None
    standing = await ready(api.get_leaderboard_standing(mode, p2, around=1))
    assert (standing.total, standing.rank) == (2, 2)
    counts = await ready(api.get_tier_counts(mode))
    assert [(t.name, t.players) for t in counts.tiers] == [("low", 2), ("high", 0)]
    assert len((await ready(api.get_leaderboard(mode, tier="low"))).entries) == 2

    accepted = await ready(api.submit_job(mode, "replay"))
    assert (await ready(api.get_job(accepted.job_id))).mode == mode
    switch = await ready(api.start_season(mode, f"{mode}-s1", "soft", pull=0.5))
    assert (await ready(api.get_job(switch.job_id))).kind == "season"
    retried = await ready(api.retry_job(fail(mode)))
    assert (await ready(api.get_job(retried.job_id))).kind == "replay"
    assert (await ready(api.void_match(f"{mode}-m1"))).void is True

    assert await ready(api.delete_player(p2)) is None
    with pytest.raises(ApiError) as erased:
        await ready(api.get_player(p2))
    assert erased.value.status == 404

    key = await ready(api.create_key(f"{mode}-key", ["read"]))
    assert key.id in [k.id for k in await ready(api.list_keys())]
    limited = await ready(api.create_key(f"{mode}-game", ["read"], modes=[mode, f"{mode}-*"]))
    assert limited.modes == [mode, f"{mode}-*"] and key.modes is None
    assert next(k for k in await ready(api.list_keys()) if k.id == limited.id).modes == [mode, f"{mode}-*"]
    assert await ready(api.revoke_key(key.id)) is None
    assert next(k for k in await ready(api.list_keys()) if k.id == key.id).revoked_at is not None

    with pytest.raises(ApiError) as caught:
        await ready(api.get_mode(f"{mode}-never"))
    assert (caught.value.status, caught.value.problem["title"]) == (404, "Not Found")
    assert "create it with PUT" in caught.value.detail


def assert_every_route_answered(sent: list[tuple[str, str, int | str]]) -> None:
    routes = list(documented())
    answered = {route_of(routes, method, path) for method, path, status in sent if status in range(200, 300)}
    assert set(routes) - answered == set(), "operations the scenario did not send"


async def test_async_client_round_trips_every_operation(app: FastAPI, database_url: str) -> None:
    transport = RecordingASGITransport(app=app)
    async with AsyncClient("http://test", ADMIN_KEY, transport=transport) as api:
        await scenario(api, failed_job(database_url))
    assert_every_route_answered(transport.sent)


async def test_sync_client_round_trips_every_operation(live_server: str, database_url: str) -> None:
    transport = RecordingTransport()

    def run() -> None:
        with Client(live_server, ADMIN_KEY, transport=transport) as api:
            asyncio.run(scenario(api, failed_job(database_url)))

    # In a thread: the sync client's calls block, and this process's event loop must go on
    # meanwhile. The in-process app's job runner shares the database, and may hold a job's
    # mode lock (the test before's replay, say) that the scenario's erasure waits for.
    await asyncio.to_thread(run)
    assert_every_route_answered(transport.sent)


def test_an_error_body_that_is_not_problem_json_is_kept_as_the_detail() -> None:
    # What a proxy in front of the service may answer.
    error = ApiError.of(httpx.Response(502, text="<html>bad gateway</html>", headers={"Retry-After": "3"}))
    assert (error.status, error.problem["title"], error.detail) == (
        502,
        "Bad Gateway",
        "<html>bad gateway</html>",
    )
    assert error.headers["retry-after"] == "3"
