"""Real concurrency on a real server: no lost update, exactly once, all or nothing."""

from __future__ import annotations

import asyncio
import random

import httpx
import psycopg
import pytest

from app.client import ApiError, AsyncClient
from app.rating import Rating, TrueSkill
from tests import ddl
from tests.conftest import ADMIN_KEY


def random_match(rng: random.Random, mode: str, n: int, players: list[str]) -> dict[str, object]:
    size = rng.choice([1, 1, 2])
    count = rng.choice([2, 2, 2, 3, 4]) if size == 1 else 2
    chosen = rng.sample(players, size * count)
    teams = [chosen[i * size : (i + 1) * size] for i in range(count)]
    ranks = [rng.randint(0, count - 1) for _ in teams]
    return {
        "match_id": f"{mode}-c{n}",
        "mode": mode,
        "teams": [{"players": [{"id": p} for p in t], "rank": r} for t, r in zip(teams, ranks, strict=True)],
    }


async def make_mode(base: str) -> str:
    name = f"conc-{random.randrange(16**8):08x}"
    async with AsyncClient(base, ADMIN_KEY) as api:
        await api.put_mode(name)
    return name


@pytest.mark.slow
async def test_16_clients_2000_matches_equal_a_serial_replay(live_server: str, database_url: str) -> None:
    mode = await make_mode(live_server)
    rng = random.Random(5)
    players = [f"{mode}-p{i}" for i in range(30)]
    bodies = [random_match(rng, mode, n, players) for n in range(2000)]
    queue: asyncio.Queue[dict[str, object]] = asyncio.Queue()
    for body in bodies:
        queue.put_nowait(body)
    failures: list[str] = []

    async def worker() -> None:
        async with AsyncClient(live_server, ADMIN_KEY, timeout=60) as api:
            while not queue.empty():
                body = queue.get_nowait()
                try:
                    await api.post_match(body)
                except ApiError as exc:
                    failures.append(str(exc))

    await asyncio.gather(*(worker() for _ in range(16)))
    assert failures == []

    with psycopg.connect(database_url) as conn:
        order = [
            row[0]
            for row in conn.execute(
                "SELECT match_id FROM matches WHERE mode = %s ORDER BY applied_seq", (mode,)
            )
        ]
        stored = dict(
            conn.execute("SELECT player_id, (mu, sigma) FROM ratings WHERE mode = %s", (mode,)).fetchall()
        )
    assert len(order) == 2000
    by_id = {b["match_id"]: b for b in bodies}
    env, current = TrueSkill(), {}
    for match_id in order:
        teams = [[p["id"] for p in t["players"]] for t in by_id[match_id]["teams"]]  # type: ignore[index]
        ranks = [t["rank"] for t in by_id[match_id]["teams"]]  # type: ignore[index]
        rated = env.rate([[current.get(p, Rating()) for p in t] for t in teams], ranks)
        for t, after in zip(teams, rated, strict=True):
            current.update(zip(t, after, strict=True))
    assert set(stored) == set(current)
    # Posts that arrive together are rated together, level by level (app/rating/levels.py):
    # equal to one at a time within 1e-12.
    for player, rating in current.items():
        mu, sigma = (float(x) for x in stored[player])
        assert (mu, sigma) == (pytest.approx(rating.mu, rel=1e-12), pytest.approx(rating.sigma, rel=1e-12))


async def test_a_match_posted_twice_concurrently_is_applied_once(live_server: str, database_url: str) -> None:
    mode = await make_mode(live_server)
    body = {
        "match_id": f"{mode}-twice",
        "mode": mode,
        "teams": [
            {"players": [{"id": f"{mode}-a"}], "rank": 1},
            {"players": [{"id": f"{mode}-b"}], "rank": 2},
        ],
    }
    async with httpx.AsyncClient(
        base_url=live_server, headers={"Authorization": f"Bearer {ADMIN_KEY}"}
    ) as http:
        responses = await asyncio.gather(*(http.post("/v1/matches", json=body) for _ in range(8)))
    assert sorted(r.status_code for r in responses) == [200] * 7 + [201]
    assert len({r.json()["players"][0]["after"]["mu"] for r in responses}) == 1
    with psycopg.connect(database_url) as conn:
        assert conn.execute(
            "SELECT matches FROM ratings WHERE player_id = %s AND mode = %s", (f"{mode}-a", mode)
        ).fetchone() == (1,)


async def test_a_retry_after_a_client_timeout_is_applied_once(live_server: str, database_url: str) -> None:
    mode = await make_mode(live_server)
    players = [{"id": f"{mode}-t{i}"} for i in range(400)]
    body = {
        "match_id": f"{mode}-timeout",
        "mode": mode,
        "teams": [{"players": players[:200], "rank": 1}, {"players": players[200:], "rank": 2}],
    }
    async with AsyncClient(live_server, ADMIN_KEY, timeout=0.001) as impatient:
        with pytest.raises(httpx.TimeoutException):
            await impatient.post_match(body)
    async with AsyncClient(live_server, ADMIN_KEY, timeout=30) as api:
        retried = await api.post_match(body)
        for _ in range(50):  # the first attempt may still be committing: retry until it answers
            if not retried.created:
                break
            await asyncio.sleep(0.05)
        again = await api.post_match(body)
    assert again.created is False
    with psycopg.connect(database_url) as conn:
        counts = conn.execute("SELECT DISTINCT matches FROM ratings WHERE mode = %s", (mode,)).fetchall()
        assert counts == [(1,)]
        assert conn.execute(
            "SELECT count(*) FROM matches WHERE match_id = %s", (f"{mode}-timeout",)
        ).fetchone() == (1,)


async def test_a_failure_after_the_first_rating_row_leaves_no_trace(
    api: AsyncClient, database_url: str, mode: str
) -> None:
    await api.post_match(
        {
            "match_id": f"{mode}-warm",
            "mode": mode,
            "teams": [
                {"players": [{"id": f"{mode}-x1"}], "rank": 1},
                {"players": [{"id": f"{mode}-x2"}], "rank": 2},
            ],
        }
    )
    before = await api.get_player(f"{mode}-x1")
    trigger = f"boom_{mode.replace('-', '_')}"
    # Raised once the ratings statement has written its rows.
    with ddl.failing_rows(database_url, trigger, "UPDATE", "ratings", f"{mode}-x2"):
        with pytest.raises(ApiError) as caught:
            await api.post_match(
                {
                    "match_id": f"{mode}-boom",
                    "mode": mode,
                    "teams": [
                        {"players": [{"id": f"{mode}-x1"}, {"id": f"{mode}-new"}], "rank": 1},
                        {"players": [{"id": f"{mode}-x2"}], "rank": 2},
                    ],
                }
            )
        assert caught.value.status == 500
    assert await api.get_player(f"{mode}-x1") == before
    with psycopg.connect(database_url) as conn:
        assert conn.execute(
            "SELECT count(*) FROM matches WHERE match_id = %s", (f"{mode}-boom",)
        ).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM players WHERE id = %s", (f"{mode}-new",)).fetchone() == (0,)
        assert conn.execute(
            "SELECT count(*) FROM match_players mp JOIN matches m ON m.id = mp.match_pk "
            "WHERE m.match_id = %s",
            (f"{mode}-boom",),
        ).fetchone() == (0,)
