"""Leaderboards: pages and ranks equal a sort of every rating, right after every write."""

from __future__ import annotations

import asyncio
import random

import httpx
import psycopg
import pytest

from app.client import AsyncClient
from app.leaderboards import repository
from tests.conftest import ADMIN_KEY

Headers = dict[str, str]


async def play(api: AsyncClient, mode: str, rng: random.Random, players: list[str], count: int) -> None:
    for _ in range(count):
        size = rng.choice([1, 2])
        chosen = rng.sample(players, 2 * size)
        ranks = rng.choice([[0, 1], [1, 0], [0, 0]])
        await api.post_match(
            {
                "match_id": f"{mode}-{rng.randrange(16**12):012x}",
                "mode": mode,
                "teams": [
                    {"players": [{"id": p} for p in chosen[:size]], "rank": ranks[0]},
                    {"players": [{"id": p} for p in chosen[size:]], "rank": ranks[1]},
                ],
            }
        )


async def expected(
    api: AsyncClient, mode: str, players: list[str], k: float = 3.0, least: int = 0
) -> list[str]:
    """Every eligible player, best first, from the players API and a sort in Python."""
    rows = []
    for player in players:
        try:
            profile = await api.get_player(player)
        except Exception:
            continue
        for r in profile.ratings:
            if r.mode == mode and r.matches >= least:
                rows.append((-(r.rating.mu - k * r.rating.sigma), player))
    return [player for _, player in sorted(rows)]


async def all_pages(client: httpx.AsyncClient, headers: Headers, mode: str, limit: int) -> list[dict]:  # type: ignore[type-arg]
    entries, cursor = [], None
    while True:
        params: dict[str, object] = {"limit": limit} | ({"cursor": cursor} if cursor else {})
        page = (await client.get(f"/v1/leaderboards/{mode}", params=params, headers=headers)).json()
        entries += page["entries"]
        cursor = page["next_cursor"]
        if cursor is None:
            return entries


async def standing(client: httpx.AsyncClient, headers: Headers, mode: str, player: str, around: int = 5):  # type: ignore[no-untyped-def]
    return await client.get(
        f"/v1/leaderboards/{mode}/players/{player}", params={"around": around}, headers=headers
    )


async def check_all(
    client: httpx.AsyncClient, headers: Headers, mode: str, order: list[str], around: int = 2
) -> None:
    entries = await all_pages(client, headers, mode, limit=7)
    assert [e["player_id"] for e in entries] == order
    assert [e["rank"] for e in entries] == list(range(1, len(order) + 1))
    for rank, player in enumerate(order, start=1):
        body = (await standing(client, headers, mode, player, around)).json()
        assert (body["rank"], body["total"]) == (rank, len(order)), player
        lo = max(0, rank - 1 - around)
        assert [e["player_id"] for e in body["entries"]] == order[lo : rank + around]
        assert [e["rank"] for e in body["entries"]] == list(range(lo + 1, min(len(order), rank + around) + 1))
        assert body["percentile"] == pytest.approx(100.0 * (len(order) - rank) / len(order))


async def test_pages_and_ranks_equal_a_sort_of_every_rating(
    api: AsyncClient, client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    rng = random.Random(11)
    players = [f"lb{i:02d}" for i in range(24)]
    await play(api, mode, rng, players, 60)
    # Exact ties in conservative are broken by player id.
    for player in ("tie-b", "tie-a", "tie-c"):
        await api.set_rating(player, mode, 30.0, 4.0)
    players += ["tie-a", "tie-b", "tie-c"]
    order = await expected(api, mode, players)
    assert order.index("tie-b") == order.index("tie-a") + 1 == order.index("tie-c") - 1
    await check_all(client, admin_headers, mode, order)


async def test_a_rank_read_right_after_a_match_reflects_it(
    api: AsyncClient, client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    rng = random.Random(3)
    players = [f"rr{i}" for i in range(12)]
    await play(api, mode, rng, players, 30)
    last = (await expected(api, mode, players))[-1]
    before = (await standing(client, admin_headers, mode, last)).json()
    assert before["rank"] == before["total"]
    for n in range(4):  # the worst player beats the best, again and again
        best = next(p for p in await expected(api, mode, players) if p != last)
        await api.post_match(
            {
                "match_id": f"{mode}-upset{n}",
                "mode": mode,
                "teams": [{"players": [{"id": last}], "rank": 1}, {"players": [{"id": best}], "rank": 2}],
            }
        )
        order = await expected(api, mode, players)
        now = (await standing(client, admin_headers, mode, last)).json()
        assert now["rank"] == order.index(last) + 1
    assert now["rank"] < before["rank"]


async def test_minimum_matches_and_a_new_k_recount_the_board(
    api: AsyncClient, client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    rng = random.Random(8)
    players = [f"mm{i}" for i in range(16)]
    await play(api, mode, rng, players, 25)
    await api.put_mode(mode, min_matches_for_leaderboard=4)
    order = await expected(api, mode, players, least=4)
    assert 0 < len(order) < len(players)
    await check_all(client, admin_headers, mode, order)
    profiles = {p: await api.get_player(p) for p in players}
    few = next(p for p in players if next(r for r in profiles[p].ratings if r.mode == mode).matches < 4)
    response = await standing(client, admin_headers, mode, few)
    assert response.status_code == 404
    assert "matches of the 4 it needs" in response.json()["detail"]

    changed = await api.put_mode(mode, conservative_k=0.5, min_matches_for_leaderboard=0)
    # The new minimum is counted in the PUT; the new k is scored by its job (test_rescore).
    assert changed.retier_job is not None
    for _ in range(600):
        if (job := await api.get_job(changed.retier_job)).status in ("done", "failed"):
            break
        await asyncio.sleep(0.05)
    assert job.status == "done", job
    order = await expected(api, mode, players, k=0.5)
    assert len(order) == len(players)
    await check_all(client, admin_headers, mode, order)
    top = (await client.get(f"/v1/leaderboards/{mode}", params={"limit": 1}, headers=admin_headers)).json()
    entry = top["entries"][0]
    assert entry["rating"]["conservative"] == entry["rating"]["mu"] - 0.5 * entry["rating"]["sigma"]
    # Playing on keeps the board exact under the new rules.
    await play(api, mode, rng, players, 10)
    await check_all(client, admin_headers, mode, await expected(api, mode, players, k=0.5))


async def test_compaction_keeps_every_rank(
    api: AsyncClient, client: httpx.AsyncClient, admin_headers: Headers, mode: str, database_url: str
) -> None:
    rng = random.Random(21)
    players = [f"cp{i}" for i in range(14)]
    await play(api, mode, rng, players, 40)
    with psycopg.connect(database_url) as conn:
        rows_before = conn.execute(
            "SELECT count(*) FROM leaderboard_deltas WHERE mode = %s", (mode,)
        ).fetchone()
    resources = client._transport.app.state.resources  # type: ignore[attr-defined]
    async with resources.sessions() as session, session.begin():
        assert await repository.compact(session, mode)
    with psycopg.connect(database_url) as conn:
        counts = conn.execute(
            "SELECT bucket, delta FROM leaderboard_deltas WHERE mode = %s ORDER BY bucket", (mode,)
        ).fetchall()
        truth = conn.execute(
            "SELECT leaderboard_bucket(r.conservative, m.leaderboard_bucket_width) AS b, count(*)"
            " FROM ratings r JOIN modes m ON m.name = r.mode WHERE r.mode = %s GROUP BY b ORDER BY b",
            (mode,),
        ).fetchall()
    assert rows_before is not None and rows_before[0] > len(counts)
    assert counts == truth
    await check_all(client, admin_headers, mode, await expected(api, mode, players))


async def test_unknown_mode_player_and_bad_cursor(
    api: AsyncClient, client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    assert (await client.get("/v1/leaderboards/no-such-mode", headers=admin_headers)).status_code == 404
    # A standing is one statement; only a miss asks whether the mode exists, to say which.
    no_mode = await standing(client, admin_headers, "no-such-mode", "nobody")
    assert no_mode.status_code == 404
    assert "mode 'no-such-mode' does not exist" in no_mode.json()["detail"]
    no_player = await standing(client, admin_headers, mode, "nobody")
    assert no_player.status_code == 404
    assert no_player.json()["detail"] == f"player 'nobody' has no rating in mode {mode!r}"
    bad = await client.get(
        f"/v1/leaderboards/{mode}", params={"cursor": "bm90IGEgY3Vyc29y"}, headers=admin_headers
    )
    assert bad.status_code == 422
    assert bad.headers["content-type"].startswith("application/problem+json")
    assert (await client.get(f"/v1/leaderboards/{mode}")).status_code == 401


async def test_counts_stay_exact_under_concurrent_writers(live_server: str, database_url: str) -> None:
    """16 concurrent clients; then the trigger-kept counts equal a recount from the ratings."""
    import asyncio

    name = f"lbc-{random.randrange(16**8):08x}"
    async with AsyncClient(live_server, ADMIN_KEY) as api:
        await api.put_mode(name)
    rng = random.Random(4)
    players = [f"{name}-p{i}" for i in range(40)]
    bodies = []
    for n in range(600):
        a, b, c, d = rng.sample(players, 4)
        bodies.append(
            {
                "match_id": f"{name}-{n}",
                "mode": name,
                "teams": [
                    {"players": [{"id": a}, {"id": b}], "rank": rng.randint(0, 1)},
                    {"players": [{"id": c}, {"id": d}], "rank": rng.randint(0, 1)},
                ],
            }
        )

    async def worker(chunk: list[dict]) -> None:  # type: ignore[type-arg]
        async with AsyncClient(live_server, ADMIN_KEY, timeout=60) as api:
            for body in chunk:
                await api.post_match(body)

    await asyncio.gather(*(worker(bodies[i::16]) for i in range(16)))
    with psycopg.connect(database_url) as conn:
        counts = conn.execute(
            "SELECT bucket, sum(delta) FROM leaderboard_deltas WHERE mode = %s"
            " GROUP BY bucket HAVING sum(delta) <> 0 ORDER BY bucket",
            (name,),
        ).fetchall()
        truth = conn.execute(
            "SELECT leaderboard_bucket(r.conservative, m.leaderboard_bucket_width) AS b, count(*)"
            " FROM ratings r JOIN modes m ON m.name = r.mode WHERE r.mode = %s GROUP BY b ORDER BY b",
            (name,),
        ).fetchall()
    assert counts == truth
    assert sum(n for _, n in counts) == len(players)


async def test_players_on_bucket_edges_rank_exactly(
    api: AsyncClient, client: httpx.AsyncClient, admin_headers: Headers, mode: str, database_url: str
) -> None:
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("UPDATE modes SET leaderboard_bucket_width = 0.5 WHERE name = %s", (mode,))
    values = [1.0, 1.5, 0.5, -0.5, -1.0, 1.4999999999999998, 1.5000000000000002, 0.0, -0.0, 2.0, 1.0]
    players = [f"edge{i:02d}" for i in range(len(values))]
    for player, value in zip(players, values, strict=True):
        await api.set_rating(player, mode, value + 3.0, 1.0)
    order = await expected(api, mode, players)
    await check_all(client, admin_headers, mode, order, around=3)
