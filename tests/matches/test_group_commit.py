"""Group commit on POST /v1/matches: posts that arrive together share one transaction, are
applied in arrival order, each gets its own answer, and no update is lost under concurrency.
What a group's transaction does is the pipeline's (tests/matches/test_recording.py)."""

from __future__ import annotations

import asyncio
import itertools
import random
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI

from app.client import AsyncClient
from app.errors import AppError
from app.matches.group_commit import WRITERS, GroupCommit
from app.matches.recording import Recorded, Writers
from app.matches.schemas import MatchIn
from tests.conftest import ADMIN_KEY


def one_v_one(match_id: str, mode: str, winner: str, loser: str) -> MatchIn:
    return MatchIn.model_validate(
        {
            "match_id": match_id,
            "mode": mode,
            "teams": [{"players": [{"id": winner}], "rank": 1}, {"players": [{"id": loser}], "rank": 2}],
        }
    )


def queue_of(app: FastAPI, engine: Any) -> GroupCommit:
    """A fresh group-commit queue, with writers' connections of its own, to `engine`'s database."""
    resources = app.state.resources
    return GroupCommit(Writers(engine, resources.sessions, resources.settings, WRITERS))


async def gathered(app: FastAPI, matches: list[MatchIn]) -> list[Recorded | BaseException]:
    """Post `matches` at once through a fresh group-commit queue, in list order."""
    resources = app.state.resources
    queue = queue_of(app, resources.engine)
    try:
        return await asyncio.gather(*(queue.record(m) for m in matches), return_exceptions=True)
    finally:
        await queue.close()


async def test_posts_queued_together_commit_in_one_transaction_in_arrival_order(
    app: FastAPI, database_url: str, mode: str
) -> None:
    players = [f"{mode}-g{i}" for i in range(4)]
    rng = random.Random(1)
    matches = [one_v_one(f"{mode}-{n}", mode, *rng.sample(players, 2)) for n in range(20)]
    outcomes = await gathered(app, matches)
    assert all(isinstance(o, Recorded) and o.created for o in outcomes)
    # Each match saw the ratings the matches queued before it left, player by player.
    last: dict[str, Any] = {}
    for outcome in outcomes:
        assert isinstance(outcome, Recorded)
        for player in outcome.match.players:
            if player.player_id in last:
                assert player.before == last[player.player_id]
            last[player.player_id] = player.after
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT match_id, xmin::text FROM matches WHERE mode = %s ORDER BY applied_seq", (mode,)
        ).fetchall()
    assert [r[0] for r in rows] == [m.match_id for m in matches]  # applied in arrival order
    assert len({r[1] for r in rows}) == 1  # by one transaction


async def test_concurrent_http_posts_each_get_their_own_answer(
    client: httpx.AsyncClient, admin_headers: dict[str, str], mode: str
) -> None:
    used = one_v_one(f"{mode}-used", mode, "h1", "h2").model_dump(mode="json", exclude_none=True)
    assert (await client.post("/v1/matches", json=used, headers=admin_headers)).status_code == 201
    bodies = [
        one_v_one(f"{mode}-{n}", mode, f"h{n % 3}", f"h{n % 3 + 3}").model_dump(
            mode="json", exclude_none=True
        )
        for n in range(12)
    ]
    bodies[5] = {**used, "teams": list(reversed(used["teams"]))}
    bodies[7] = {**bodies[7], "teams": bodies[7]["teams"][:1]}  # one team: 422
    responses = await asyncio.gather(
        *(client.post("/v1/matches", json=b, headers=admin_headers) for b in bodies)
    )
    assert [r.status_code for r in responses] == [201] * 5 + [409] + [201] + [422] + [201] * 4


def chain_breaks(history: list[dict[str, Any]]) -> list[str]:
    """Listed newest first: each match's `before` must be the next older one's `after`."""
    return [
        newer["match_id"] for newer, older in itertools.pairwise(history) if newer["before"] != older["after"]
    ]


@pytest.mark.slow
async def test_16_clients_over_shared_players_leave_unbroken_histories(live_server: str) -> None:
    async with AsyncClient(live_server, ADMIN_KEY) as api:
        mode = f"gc-{random.randrange(16**8):08x}"
        await api.put_mode(mode)
    rng = random.Random(16)
    # 600 matches over 60 players: each player in about 40, as with 1,200 over 120, and the 16
    # clients collide on shared players at least as often, at half the requests.
    players = [f"{mode}-p{i}" for i in range(60)]
    queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    for n in range(600):
        chosen = rng.sample(players, 4)
        queue.put_nowait(
            {  # played_at left to the server: the stamp is no order of application
                "match_id": f"{mode}-{n}",
                "mode": mode,
                "teams": [
                    {"players": [{"id": chosen[0]}, {"id": chosen[1]}], "rank": rng.randint(1, 2)},
                    {"players": [{"id": chosen[2]}, {"id": chosen[3]}], "rank": rng.randint(1, 2)},
                ],
            }
        )
    statuses: list[int] = []

    async def poster() -> None:
        async with httpx.AsyncClient(
            base_url=live_server, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=60
        ) as http:
            while not queue.empty():
                statuses.append((await http.post("/v1/matches", json=queue.get_nowait())).status_code)

    await asyncio.gather(*(poster() for _ in range(16)))
    assert statuses == [201] * 600
    async with httpx.AsyncClient(
        base_url=live_server, headers={"Authorization": f"Bearer {ADMIN_KEY}"}, timeout=60
    ) as http:
        for player in players:
            history: list[dict[str, Any]] = []
            cursor: str | None = None
            while True:
                params: dict[str, Any] = {"mode": mode, "limit": 7}
                if cursor is not None:
                    params["cursor"] = cursor
                page = (await http.get(f"/v1/players/{player}/matches", params=params)).json()
                history += page["matches"]
                cursor = page["next_cursor"]
                if cursor is None:
                    break
            assert chain_breaks(history) == [], player
            rating = next(
                r for r in (await http.get(f"/v1/players/{player}")).json()["ratings"] if r["mode"] == mode
            )
            assert rating["matches"] == len(history) > 0
            assert history[0]["after"] == rating["rating"]
            assert history[-1]["before"]["mu"] == 25.0


async def test_an_unreachable_database_fails_every_post_of_the_group(app: FastAPI, mode: str) -> None:
    from app.db.engine import build_engine

    resources = app.state.resources
    engine = build_engine(resources.settings, "postgresql://postgres@127.0.0.1:1/nowhere")
    queue = queue_of(app, engine)
    matches = [one_v_one(f"{mode}-u{n}", mode, f"u{n}", f"v{n}") for n in range(6)]
    try:
        async with asyncio.timeout(120):  # a post left waiting would hang here
            outcomes = await asyncio.gather(*(queue.record(m) for m in matches), return_exceptions=True)
    finally:
        await queue.close()
        await engine.dispose()
    assert all(isinstance(o, Exception) and not isinstance(o, AppError) for o in outcomes), outcomes


async def test_a_post_queued_as_the_writer_finds_the_queue_empty_still_commits(
    app: FastAPI, mode: str
) -> None:
    """A request whose step runs between a writer's last group and the removal of its task
    (done callbacks run a step later) must find a writer: here the second post's first step is
    scheduled while the first group commits, so it runs in exactly that gap."""
    queue = queue_of(app, app.state.resources.engine)
    commit = queue._commit
    second: list[asyncio.Task[Recorded]] = []

    async def commit_then_post(group: Any) -> None:
        await commit(group)
        if not second:
            second.append(asyncio.create_task(queue.record(one_v_one(f"{mode}-2", mode, "c", "d"))))

    queue._commit = commit_then_post  # type: ignore[method-assign]
    try:
        first = await queue.record(one_v_one(f"{mode}-1", mode, "a", "b"))
        # A guard against a hang, not a measure: the match waits forever when no writer comes.
        done = await asyncio.wait_for(second[0], timeout=60)
    finally:
        await queue.close()
    assert first.created and done.created
