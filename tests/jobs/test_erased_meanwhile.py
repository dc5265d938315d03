"""A player erased while a history job runs stays erased: the job read the history before the
erasure and writes after it, and must not write the erased id back."""

from __future__ import annotations

import random
import uuid

import httpx
import psycopg
import pytest
from fastapi import FastAPI

from app.client import AsyncClient
from app.jobs import service
from app.progress import Progress
from tests.jobs.test_jobs import history_bodies
from tests.jobs.test_replay_writes import Headers, check_chains, nothing, post_all, snapshot


def erasing(client: httpx.AsyncClient, admin_headers: Headers, target: str, erased: list[int]) -> Progress:
    """Progress whose display erases `target` the first time it is shown: once the job has
    read the history, and before its write (it holds no lock then)."""

    async def report(_: float) -> None:
        if not erased:
            erased.append((await client.delete(f"/v1/players/{target}", headers=admin_headers)).status_code)

    return Progress(report)


@pytest.mark.parametrize("fresh", [False, True], ids=["in-place", "fresh"])
async def test_a_player_erased_while_the_replay_rates_stays_erased(
    app: FastAPI,
    api: AsyncClient,
    client: httpx.AsyncClient,
    admin_headers: Headers,
    mode: str,
    database_url: str,
    fresh: bool,
) -> None:
    """The replay starts again from the history as erased: no participant row, stored response
    or rating names the player, and the result is a replay's after the erasure."""
    rng = random.Random(16)
    players = [f"{mode}-e{i}" for i in range(8)]
    await post_all(api, history_bodies(mode, rng, players, 30))
    target = players[0]
    erased: list[int] = []
    report = erasing(client, admin_headers, target, erased)
    await service.run_replay(app.state.resources.sessions, mode, report, fresh=fresh)
    assert erased == [204]
    with psycopg.connect(database_url) as conn:
        named = conn.execute(
            "SELECT (SELECT count(*) FROM match_players WHERE player_id = %(id)s),"
            " (SELECT count(*) FROM matches WHERE strpos(CAST(response AS text), %(quoted)s) > 0),"
            " (SELECT count(*) FROM ratings WHERE player_id = %(id)s),"
            " (SELECT count(*) FROM players WHERE id = %(id)s)",
            {"id": target, "quoted": f'"{target}"'},
        ).fetchone()
    assert named == (0, 0, 0, 0)
    # What the replay wrote is what a replay after the erasure writes.
    written = snapshot(database_url, mode)
    await service.run_replay(app.state.resources.sessions, mode, nothing(), fresh=fresh)
    assert snapshot(database_url, mode) == written
    check_chains(database_url, mode, {})


async def test_a_player_erased_while_the_smooth_runs_gets_no_curve(
    app: FastAPI,
    api: AsyncClient,
    client: httpx.AsyncClient,
    admin_headers: Headers,
    mode: str,
    database_url: str,
) -> None:
    rng = random.Random(17)
    players = [f"{mode}-t{i}" for i in range(6)]
    await post_all(api, history_bodies(mode, rng, players, 20))
    erased: list[int] = []
    report = erasing(client, admin_headers, players[0], erased)
    options = {"iterations": 4}
    result = await service.run_smooth(app.state.resources.sessions, mode, str(uuid.uuid4()), options, report)
    assert erased == [204]
    with psycopg.connect(database_url) as conn:
        curves = [
            row[0]
            for row in conn.execute(
                "SELECT player_id FROM learning_curves WHERE mode = %s ORDER BY player_id", (mode,)
            ).fetchall()
        ]
    assert curves == sorted(players[1:])
    assert result["players"] == len(players)  # the erased player was in the model, as read
