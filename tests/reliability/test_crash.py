"""kill -9 under a 32-client POST /v1/matches load: nothing acknowledged is lost, nothing is
applied twice or in part.

Each client owns its players and posts its matches one after another with rising
played_at, so a player's matches were applied in played_at order: a replay of the stored
matches must then land on exactly the ratings the crashed service left.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI

from tests.reliability.process import ADMIN, Service, scaled

pytestmark = pytest.mark.reliability

CLIENTS = 32
PLAYERS_PER_CLIENT = 4
KILL_AFTER_S = scaled(2.0)
START = dt.datetime(2026, 5, 1, tzinfo=dt.UTC)


def body(mode: str, client: int, n: int) -> dict[str, Any]:
    players = [f"c{client}p{i}" for i in range(PLAYERS_PER_CLIENT)]
    first, second = (players[:2], players[2:]) if n % 3 else ([players[n % 4]], [players[(n + 1) % 4]])
    return {
        "match_id": f"{mode}-c{client}-{n}",
        "mode": mode,
        "played_at": (START + dt.timedelta(minutes=n)).isoformat(),
        "teams": [
            {"players": [{"id": p} for p in first], "rank": 0 if n % 5 else 1},
            {"players": [{"id": p} for p in second], "rank": 1 if n % 5 else 0},
        ],
    }


async def client_loop(
    base: str, mode: str, client: int, acked: dict[str, bytes], refused: list[str], stop: asyncio.Event
) -> int:
    """Post until the service dies; returns the index of the first unacknowledged match.
    Any answer but 201 before the kill is recorded in `refused` (the test then fails)."""
    n = 0
    async with httpx.AsyncClient(base_url=base, headers=ADMIN, timeout=10) as http:
        while not stop.is_set():
            try:
                response = await http.post("/v1/matches", json=body(mode, client, n))
            except httpx.HTTPError:
                return n
            if response.status_code != 201:
                refused.append(f"{response.status_code} {response.text[:200]}")
                return n
            acked[f"{mode}-c{client}-{n}"] = response.content
            n += 1
    return n


async def test_kill_9_under_load_loses_nothing_and_applies_nothing_twice_or_in_part(
    app: FastAPI, database_url: str, service_url: str, redis_url: str
) -> None:
    """`app` made the bootstrap key on the database these processes share."""
    mode = f"crash-{int(time.time() * 1000) % 10**9}"
    service = Service(service_url, redis_url).start()
    try:
        assert httpx.put(f"{service.base}/v1/modes/{mode}", json={}, headers=ADMIN).status_code in (200, 201)
        acked: dict[str, bytes] = {}
        stop = asyncio.Event()
        refused: list[str] = []
        loops = [
            asyncio.create_task(client_loop(service.base, mode, c, acked, refused, stop))
            for c in range(CLIENTS)
        ]
        # A cold process on a busy server may take a while to answer its first requests: the
        # kill comes KILL_AFTER_S after the load is going, not after it was started.
        warm_until = time.monotonic() + 60
        while len(acked) < CLIENTS and not refused and time.monotonic() < warm_until:
            await asyncio.sleep(0.05)
        await asyncio.sleep(KILL_AFTER_S)
        service.kill()
        next_index = await asyncio.gather(*loops)
        assert not refused, refused
        acknowledged_before_kill = len(acked)
        assert acknowledged_before_kill >= CLIENTS, "the load never got going"

        service.start()
        async with httpx.AsyncClient(base_url=service.base, headers=ADMIN, timeout=30) as http:
            # Every acknowledged match is there, with the very response the client got.
            for match_id, first_answer in acked.items():
                stored = await http.get(f"/v1/matches/{match_id}")
                assert stored.status_code == 200, (match_id, stored.text)
                assert {**stored.json(), "created": True} == {
                    **httpx.Response(200, content=first_answer).json()
                }
            # The match in flight at the kill is retried: applied once, whether or not it had committed.
            retried = {"created": 0, "already": 0}
            for client, n in enumerate(next_index):
                again = await http.post("/v1/matches", json=body(mode, client, n))
                assert again.status_code in (200, 201), again.text
                retried["created" if again.status_code == 201 else "already"] += 1
                repeat = await http.post("/v1/matches", json=body(mode, client, n))
                assert repeat.status_code == 200 and repeat.json()["players"] == again.json()["players"]

        sync_url = database_url.replace("postgresql+psycopg://", "postgresql://")
        with psycopg.connect(sync_url) as conn:
            twice = conn.execute(
                "SELECT match_id FROM matches WHERE mode = %s GROUP BY match_id HAVING count(*) > 1", (mode,)
            ).fetchall()
            assert twice == []
            stored_matches = conn.execute("SELECT count(*) FROM matches WHERE mode = %s", (mode,)).fetchone()
            assert stored_matches is not None
            assert stored_matches[0] == acknowledged_before_kill + CLIENTS
            # Whole matches only: every stored match has all its participants, and each
            # player's match count equals their rows.
            partial = conn.execute(
                """SELECT m.match_id FROM matches m LEFT JOIN match_players mp ON mp.match_pk = m.id
                   WHERE m.mode = %s GROUP BY m.match_id
                   HAVING count(mp.player_id) NOT IN (2, 4)""",
                (mode,),
            ).fetchall()
            assert partial == []
            miscounted = conn.execute(
                """SELECT r.player_id FROM ratings r
                   WHERE r.mode = %s AND r.matches <> (
                       SELECT count(*) FROM match_players mp
                       WHERE mp.mode = r.mode AND mp.player_id = r.player_id)""",
                (mode,),
            ).fetchall()
            assert miscounted == []
            before = dict(
                conn.execute(
                    "SELECT player_id, (mu, sigma)::text FROM ratings WHERE mode = %s", (mode,)
                ).fetchall()
            )
            crashed = {
                p: (mu, sigma)
                for p, mu, sigma in conn.execute(
                    "SELECT player_id, mu, sigma FROM ratings WHERE mode = %s", (mode,)
                ).fetchall()
            }
        assert len(before) == CLIENTS * PLAYERS_PER_CLIENT

        # The ratings equal a replay of the stored matches.
        async with httpx.AsyncClient(base_url=service.base, headers=ADMIN, timeout=30) as http:
            job = (await http.post(f"/v1/modes/{mode}/jobs", json={"kind": "replay"})).json()["job_id"]
            for _ in range(600):
                state = (await http.get(f"/v1/jobs/{job}")).json()
                if state["status"] in ("done", "failed"):
                    break
                await asyncio.sleep(0.1)
            assert state["status"] == "done", state
        with psycopg.connect(sync_url) as conn:
            replayed = {
                p: (mu, sigma)
                for p, mu, sigma in conn.execute(
                    "SELECT player_id, mu, sigma FROM ratings WHERE mode = %s", (mode,)
                ).fetchall()
            }
        assert replayed.keys() == crashed.keys()
        for player, (mu, sigma) in crashed.items():
            assert replayed[player][0] == pytest.approx(mu, abs=1e-9), player
            assert replayed[player][1] == pytest.approx(sigma, abs=1e-9), player
        print(
            f"\ncrash: {acknowledged_before_kill} matches acknowledged before kill -9; "
            f"in flight at the kill: {retried['already']} had committed, {retried['created']} had not"
        )
    finally:
        service.stop()
