"""Seasons: the archive equals the standings just before the switch, the reset follows the
documented formula, posts during a switch land in exactly one season, and a replay re-rates
the current season from its reset ratings."""

from __future__ import annotations

import asyncio
import math
import random
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI

from app.client import ApiError, AsyncClient
from app.seasons import repository
from app.seasons import service as seasons
from app.seasons.schemas import SeasonIn
from tests.conftest import ADMIN_KEY
from tests.leaderboards.test_leaderboards import play

Headers = dict[str, str]
MU0, SIGMA0 = 25.0, 25.0 / 3.0


async def wait_job(client: httpx.AsyncClient, headers: Headers, location: str) -> dict[str, Any]:
    for _ in range(600):
        job = (await client.get(location, headers=headers)).json()
        if job["status"] in ("done", "failed"):
            return job  # type: ignore[no-any-return]
        await asyncio.sleep(0.1)
    raise AssertionError(f"job {location} did not finish")


async def switch(client: httpx.AsyncClient, headers: Headers, mode: str, **body: Any) -> dict[str, Any]:
    response = await client.post(f"/v1/modes/{mode}/seasons", json=body, headers=headers)
    assert response.status_code == 202, response.text
    assert response.headers["Location"] == f"/v1/jobs/{response.json()['job_id']}"
    job = await wait_job(client, headers, response.headers["Location"])
    assert job["status"] == "done", job
    assert job["kind"] == "season"
    return job


async def pages(client: httpx.AsyncClient, headers: Headers, mode: str, season: str | None) -> list[Any]:
    entries, cursor = [], None
    while True:
        params: dict[str, Any] = {"limit": 5}
        if cursor:
            params["cursor"] = cursor
        if season:
            params["season"] = season
        response = await client.get(f"/v1/leaderboards/{mode}", params=params, headers=headers)
        assert response.status_code == 200, response.text
        entries += response.json()["entries"]
        cursor = response.json()["next_cursor"]
        if cursor is None:
            return entries


async def standings(
    client: httpx.AsyncClient, headers: Headers, mode: str, players: list[str], season: str | None
) -> dict[str, Any]:
    out = {}
    for player in players:
        params: dict[str, Any] = {"around": 2} | ({"season": season} if season else {})
        response = await client.get(
            f"/v1/leaderboards/{mode}/players/{player}", params=params, headers=headers
        )
        out[player] = response.json() if response.status_code == 200 else response.status_code
    return out


async def ratings(api: AsyncClient, mode: str, players: list[str]) -> dict[str, Any]:
    out = {}
    for player in players:
        profile = await api.get_player(player)
        out[player] = next(r for r in profile.ratings if r.mode == mode)
    return out


def season_id(conn: psycopg.Connection[Any], mode: str, name: str) -> int:
    found = conn.execute("SELECT id FROM seasons WHERE mode = %s AND name = %s", (mode, name)).fetchone()
    assert found is not None
    return int(found[0])


def reset(mu: float, sigma: float, pull: float, widen: float) -> tuple[float, float]:
    """docs/api.md, "Seasons", in the documented order of operations."""
    new_mu = mu if pull == 0 else MU0 if pull == 1 else MU0 + (1 - pull) * (mu - MU0)
    if widen == 0:
        new_sigma = sigma
    elif widen == 1:
        new_sigma = SIGMA0
    else:
        new_sigma = math.sqrt(sigma * sigma + widen * (SIGMA0 * SIGMA0 - sigma * sigma))
    return new_mu, new_sigma


@pytest.mark.parametrize(
    ("body", "factors"),
    [
        ({"reset": "hard"}, (1.0, 1.0)),
        ({"reset": "soft"}, (0.5, 0.25)),
        ({"reset": "soft", "pull": 0.3, "widen": 0.6}, (0.3, 0.6)),
        ({"reset": "none"}, (0.0, 0.0)),
    ],
)
async def test_a_switch_archives_the_standings_and_resets_by_the_formula(
    api: AsyncClient,
    client: httpx.AsyncClient,
    admin_headers: Headers,
    mode: str,
    body: dict[str, Any],
    factors: tuple[float, float],
) -> None:
    await api.put_mode(mode, min_matches_for_leaderboard=3)
    players = [f"{mode}-p{i}" for i in range(12)]
    await play(api, mode, random.Random(3), players[:10], 30)
    await api.post_match(  # players 10 and 11: below the minimum
        {
            "mode": mode,
            "match_id": f"{mode}-low",
            "teams": [
                {"players": [{"id": players[10]}], "rank": 0},
                {"players": [{"id": players[11]}], "rank": 1},
            ],
        }
    )
    board = await pages(client, admin_headers, mode, None)
    assert 0 < len(board) < len(players)
    before_standings = await standings(client, admin_headers, mode, players, None)
    assert 404 in before_standings.values()
    before = await ratings(api, mode, players)

    job = await switch(client, admin_headers, mode, name="s1", **body)
    assert (job["result"]["players"], job["result"]["ranked"]) == (len(players), len(board))
    assert (job["result"]["pull"], job["result"]["widen"]) == factors

    # The archive is the leaderboard just before, rank for rank.
    assert await pages(client, admin_headers, mode, "preseason") == board
    assert await standings(client, admin_headers, mode, players, "preseason") == before_standings
    # The reset, exactly as documented; counts restart.
    after = await ratings(api, mode, players)
    for player in players:
        old, new = before[player], after[player]
        expected = reset(old.rating.mu, old.rating.sigma, *factors)
        assert (new.rating.mu, new.rating.sigma) == expected, player
        assert new.rating.conservative == pytest.approx(expected[0] - 3 * expected[1], abs=1e-12)
        assert (new.matches, new.wins, new.losses, new.draws) == (0, 0, 0, 0)
    # The live board (its minimum of 3 matches) is empty again; "s1" is the live one.
    assert await pages(client, admin_headers, mode, None) == []
    assert await pages(client, admin_headers, mode, "s1") == []

    shown = (await client.get(f"/v1/modes/{mode}", headers=admin_headers)).json()
    assert (shown["season"]["name"], shown["season"]["ordinal"], shown["season"]["ended_at"]) == (
        "s1",
        1,
        None,
    )
    assert shown["season"]["reset"] == body["reset"]
    assert [(s["name"], s["players"], s["ranked"]) for s in shown["past_seasons"]] == [
        ("preseason", len(players), len(board))
    ]


async def test_a_switch_run_again_after_it_committed_changes_nothing(
    app: FastAPI, api: AsyncClient, client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    players = [f"{mode}-{x}" for x in "abcd"]
    await play(api, mode, random.Random(10), players, 5)
    await switch(client, admin_headers, mode, name="s1", reset="soft")
    before = await ratings(api, mode, players)

    # What a second process does with the job when the first died before marking it done.
    again = await seasons.run_switch(app.state.resources.sessions, mode, {"name": "s1", "reset": "soft"})
    assert again["already_started"] is True
    assert await ratings(api, mode, players) == before
    shown = (await client.get(f"/v1/modes/{mode}", headers=admin_headers)).json()
    assert [s["name"] for s in shown["past_seasons"]] == ["preseason"]


async def test_a_match_before_the_archive_reaches_its_players_starts_from_their_reset(
    app: FastAPI,
    api: AsyncClient,
    client: httpx.AsyncClient,
    admin_headers: Headers,
    mode: str,
    database_url: str,
) -> None:
    """Between the switch and the end of its job, a post archives and resets its own players
    first (the trigger on ratings); the job then does the rest and ranks the archive."""
    await api.put_mode(mode, min_matches_for_leaderboard=1)
    players = [f"{mode}-{x}" for x in "abcdefgh"]
    await play(api, mode, random.Random(11), players, 20)
    board = await pages(client, admin_headers, mode, None)
    before = await ratings(api, mode, players)
    sessions = app.state.resources.sessions
    switched = await seasons.switch(sessions, mode, SeasonIn(name="s1", reset="soft", pull=0.5, widen=0.5))
    assert switched.ending == "preseason" and switched.boundary is not None
    # Not archived yet: the archive answers 503, the mode lists the season without counts.
    waiting = await client.get(
        f"/v1/leaderboards/{mode}", params={"season": "preseason"}, headers=admin_headers
    )
    assert waiting.status_code == 503 and waiting.headers["content-type"] == "application/problem+json"
    shown = (await client.get(f"/v1/modes/{mode}", headers=admin_headers)).json()
    assert shown["season"]["name"] == "s1" and shown["past_seasons"][0]["ranked"] is None

    a, b = players[0], players[1]
    posted = await api.post_match(
        {
            "mode": mode,
            "match_id": f"{mode}-early",
            "teams": [{"players": [{"id": a}], "rank": 0}, {"players": [{"id": b}], "rank": 1}],
        }
    )
    for p in posted.players:
        expected = reset(before[p.player_id].rating.mu, before[p.player_id].rating.sigma, 0.5, 0.5)
        assert (p.before.mu, p.before.sigma) == expected, p.player_id
    with psycopg.connect(database_url) as conn:
        # The archive being filled: not a partition of season_standings yet.
        ended = season_id(conn, mode, "preseason")
        early = conn.execute(
            f"SELECT player_id, rank FROM {repository.partition(ended)} ORDER BY player_id"
        ).fetchall()
        assert conn.execute(
            "SELECT count(*) FROM season_standings WHERE season_id = %s", (ended,)
        ).fetchone() == (0,)
    assert early == [(a, None), (b, None)]
    # An admin's rating for a player not yet archived: archived first, then set.
    await api.set_rating(players[2], mode, 30.0, 2.0)

    done = await seasons.complete(sessions, mode)
    assert (done.players, done.ranked) == (len(players), len(board))
    assert await pages(client, admin_headers, mode, "preseason") == board
    after = await ratings(api, mode, players)
    assert (after[players[2]].rating.mu, after[players[2]].rating.sigma) == (30.0, 2.0)
    for player in players[3:]:
        expected = reset(before[player].rating.mu, before[player].rating.sigma, 0.5, 0.5)
        assert (after[player].rating.mu, after[player].rating.sigma) == expected
        assert after[player].matches == 0
    assert (after[a].matches, after[b].matches) == (1, 1)
    # The live board counts right: a and b (one match each, the minimum) and nobody else.
    assert [e["player_id"] for e in await pages(client, admin_headers, mode, None)] == sorted(
        [a, b], key=lambda p: -after[p].rating.conservative
    )
    assert (await seasons.complete(sessions, mode)).players is None  # nothing left to do


async def test_the_ranking_waits_for_a_rename_holding_the_archive_and_keeps_it(
    app: FastAPI,
    api: AsyncClient,
    client: httpx.AsyncClient,
    admin_headers: Headers,
    mode: str,
    database_url: str,
) -> None:
    """An erasure holds the archive being filled from before it takes the modes' locks (so a
    ranking under way holds no post); the job's ranking waits for it and ranks its rename."""
    await api.put_mode(mode, min_matches_for_leaderboard=1)
    players = [f"{mode}-{x}" for x in "abcdef"]
    await play(api, mode, random.Random(12), players, 15)
    board = await pages(client, admin_headers, mode, None)
    renamed = board[2]["player_id"]
    sessions = app.state.resources.sessions
    await seasons.switch(sessions, mode, SeasonIn(name="s1", reset="hard"))
    async with await psycopg.AsyncConnection.connect(database_url) as conn:
        found = await (
            await conn.execute("SELECT id FROM seasons WHERE mode = %s AND name = 'preseason'", (mode,))
        ).fetchone()
        assert found is not None
        table = repository.partition(found[0])
        await conn.execute(f"LOCK TABLE {table} IN ROW EXCLUSIVE MODE")  # what the erasure takes
        completing = asyncio.create_task(seasons.complete(sessions, mode))
        waiting = "SELECT count(*) FROM pg_locks WHERE relation = %s::regclass AND NOT granted"
        while (await (await conn.execute(waiting, (table,))).fetchone()) == (0,):
            assert not completing.done()
            await asyncio.sleep(0.02)
        # Every row is in (the chunks insert beside the lock held), and none ranked yet.
        unranked = await (await conn.execute(f"SELECT count(*), count(rank) FROM {table}")).fetchone()
        assert unranked == (len(players), 0)
        await conn.execute(f"UPDATE {table} SET player_id = 'erased:test' WHERE player_id = %s", (renamed,))
        await conn.commit()
    done = await completing
    assert (done.players, done.ranked) == (len(players), len(board))
    expected = [{**e, "player_id": "erased:test"} if e["player_id"] == renamed else e for e in board]
    assert await pages(client, admin_headers, mode, "preseason") == expected


async def test_names_are_unique_and_bad_requests_are_problems(
    api: AsyncClient, client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    shown = (await client.get(f"/v1/modes/{mode}", headers=admin_headers)).json()
    assert (shown["season"]["name"], shown["past_seasons"]) == ("preseason", [])
    await play(api, mode, random.Random(5), [f"{mode}-{x}" for x in "abcdef"], 6)
    first = await pages(client, admin_headers, mode, None)
    await switch(client, admin_headers, mode, name="s1", reset="hard")
    await play(api, mode, random.Random(6), [f"{mode}-{x}" for x in "abcd"], 4)
    second = await pages(client, admin_headers, mode, None)
    await switch(client, admin_headers, mode, name="s2", reset="none")
    assert await pages(client, admin_headers, mode, "preseason") == first
    assert await pages(client, admin_headers, mode, "s1") == second
    shown = (await client.get(f"/v1/modes/{mode}", headers=admin_headers)).json()
    assert [s["name"] for s in shown["past_seasons"]] == ["s1", "preseason"]

    for name in ("s1", "s2", "preseason"):
        response = await client.post(
            f"/v1/modes/{mode}/seasons", json={"name": name, "reset": "hard"}, headers=admin_headers
        )
        assert response.status_code == 409, response.text
        assert response.headers["content-type"] == "application/problem+json"
    bad = [
        ({"name": "s3", "reset": "hard", "pull": 0.5}, 422),
        ({"name": "s3", "reset": "soft", "widen": 1.5}, 422),
        ({"name": "s 3", "reset": "soft"}, 422),
        ({"name": "s3", "reset": "sometimes"}, 422),
    ]
    for body, status in bad:
        response = await client.post(f"/v1/modes/{mode}/seasons", json=body, headers=admin_headers)
        assert response.status_code == status, (body, response.text)
    missing = await client.post(
        f"/v1/modes/{mode}-never/seasons", json={"name": "x", "reset": "hard"}, headers=admin_headers
    )
    assert missing.status_code == 404
    for path in (f"/v1/leaderboards/{mode}", f"/v1/leaderboards/{mode}/players/{mode}-a"):
        response = await client.get(path, params={"season": "never"}, headers=admin_headers)
        assert response.status_code == 404, response.text
    gone = await client.get(
        f"/v1/leaderboards/{mode}/players/{mode}-nobody", params={"season": "s1"}, headers=admin_headers
    )
    assert gone.status_code == 404
    with pytest.raises(ApiError) as caught:
        await api.get_leaderboard(mode, cursor="not-a-cursor", season="s1")
    assert caught.value.status == 422


async def test_a_replay_after_a_switch_rates_the_current_season_from_its_reset(
    api: AsyncClient, client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    players = [f"{mode}-p{i}" for i in range(8)]
    await play(api, mode, random.Random(7), players[:6], 25)
    archived = await pages(client, admin_headers, mode, None)
    await switch(client, admin_headers, mode, name="s1", reset="soft", pull=0.4, widen=0.3)
    await play(api, mode, random.Random(8), players[2:], 25)  # two newcomers
    live = await ratings(api, mode, players)
    response = await client.post(f"/v1/modes/{mode}/jobs", json={"kind": "replay"}, headers=admin_headers)
    job = await wait_job(client, admin_headers, response.headers["Location"])
    assert job["status"] == "done", job
    assert job["result"]["matches"] == 25
    replayed = await ratings(api, mode, players)
    for player in players:
        a, b = live[player], replayed[player]
        assert b.rating.mu == pytest.approx(a.rating.mu, abs=1e-9), player
        assert b.rating.sigma == pytest.approx(a.rating.sigma, abs=1e-9), player
        assert (b.matches, b.wins, b.losses, b.draws) == (a.matches, a.wins, a.losses, a.draws)
    assert await pages(client, admin_headers, mode, "preseason") == archived


async def test_posts_during_a_switch_wait_and_land_in_exactly_one_season(
    live_server: str, database_url: str
) -> None:
    mode = f"sw-{random.randrange(16**8):08x}"
    rng = random.Random(9)
    players = [f"{mode}-p{i}" for i in range(40)]
    # Posts go on until the switch's job is done and for 100 more after it, so that matches
    # land on both sides of the boundary whatever the machine's pace.
    bodies: list[dict[str, Any]] = []
    switched: list[int] = []  # how many bodies were handed out when the job was done

    def next_body() -> dict[str, Any] | None:
        if switched and len(bodies) >= switched[0] + 100:
            return None
        a, b = rng.sample(players, 2)
        body = {
            "match_id": f"{mode}-{len(bodies)}",
            "mode": mode,
            "teams": [
                {"players": [{"id": a}], "rank": 0},
                {"players": [{"id": b}], "rank": rng.choice([0, 1])},
            ],
        }
        bodies.append(body)
        return body

    failures: list[str] = []
    posted = 0

    async def worker() -> None:
        nonlocal posted
        async with AsyncClient(live_server, ADMIN_KEY, timeout=60) as api:
            while (body := next_body()) is not None:
                try:
                    await api.post_match(body)
                    posted += 1
                except ApiError as exc:
                    failures.append(str(exc))

    async def switcher() -> dict[str, Any]:
        while posted < 200:
            await asyncio.sleep(0.01)
        async with httpx.AsyncClient(base_url=live_server, timeout=60) as http:
            headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
            job = await switch(http, headers, mode, name="s1", reset="hard")
        switched.append(len(bodies))
        return job

    async with AsyncClient(live_server, ADMIN_KEY) as api:
        await api.put_mode(mode)
    results = await asyncio.gather(switcher(), *(worker() for _ in range(8)))
    assert failures == []
    job: dict[str, Any] = results[0]
    boundary = job["result"]["boundary_seq"]

    with psycopg.connect(database_url) as conn:
        seqs = dict(
            conn.execute("SELECT match_id, applied_seq FROM matches WHERE mode = %s", (mode,)).fetchall()
        )
        assert len(seqs) == len(bodies) and None not in seqs.values()
        old = {m for m, seq in seqs.items() if seq <= boundary}
        assert 0 < len(old) < len(bodies)
        archived = dict(
            conn.execute(
                "SELECT player_id, matches FROM season_standings WHERE season_id = %s",
                (season_id(conn, mode, "preseason"),),
            ).fetchall()
        )
        current = dict(
            conn.execute("SELECT player_id, matches FROM ratings WHERE mode = %s", (mode,)).fetchall()
        )
        # Per player, the matches of each season: by the boundary, and as each season counted them.
        for player in players:
            mine = [b["match_id"] for b in bodies if player in (t["players"][0]["id"] for t in b["teams"])]
            assert archived.get(player, 0) == sum(m in old for m in mine), player
            assert current.get(player, 0) == sum(m not in old for m in mine), player
        # Each player's first match of the new season starts at the prior (hard reset); their
        # last one of the old season ends where the archive says they ended.
        rows = conn.execute(
            """
            SELECT mp.player_id, m.applied_seq, mp.mu_before, mp.sigma_before, mp.mu_after, mp.sigma_after
            FROM match_players mp JOIN matches m ON m.id = mp.match_pk WHERE m.mode = %s
            ORDER BY m.applied_seq
            """,
            (mode,),
        ).fetchall()
        ends = dict(
            (
                (p, (mu, sigma))
                for p, mu, sigma in conn.execute(
                    "SELECT player_id, mu, sigma FROM season_standings WHERE season_id = %s",
                    (season_id(conn, mode, "preseason"),),
                ).fetchall()
            )
        )
    first_new: dict[str, tuple[float, float]] = {}
    last_old: dict[str, tuple[float, float]] = {}
    for player, seq, mu_b, sigma_b, mu_a, sigma_a in rows:
        if seq <= boundary:
            last_old[player] = (mu_a, sigma_a)
        else:
            first_new.setdefault(player, (mu_b, sigma_b))
    assert last_old == ends
    assert first_new and set(first_new.values()) == {(MU0, SIGMA0)}


async def test_an_erased_player_leaves_every_archive_and_the_ranks_below_close_up(
    app: FastAPI,
    api: AsyncClient,
    client: httpx.AsyncClient,
    admin_headers: Headers,
    mode: str,
    database_url: str,
) -> None:
    """Erasure takes the player out of every archived standing (issue 39: a pseudonym has no
    leaderboard place), including a row still waiting for its switch's archive; the ranks below
    close up, the seasons' counts drop, and the other rows stay as they were."""
    await api.put_mode(mode, min_matches_for_leaderboard=1)
    players = [f"{mode}-{x}" for x in "abcdef"]
    await play(api, mode, random.Random(5), players, 15)
    board = await pages(client, admin_headers, mode, None)
    gone, pending = board[0]["player_id"], board[3]["player_id"]
    await switch(client, admin_headers, mode, name="s1", reset="soft")
    await play(api, mode, random.Random(6), players, 6)
    # The second switch's job has not run yet: `pending` is erased before its row is archived.
    sessions = app.state.resources.sessions
    await seasons.switch(sessions, mode, SeasonIn(name="s2", reset="soft"))
    s1_live = await pages(client, admin_headers, mode, None)
    for player in (gone, pending):
        response = await client.delete(f"/v1/players/{player}", headers=admin_headers)
        assert response.status_code == 204, response.text
    await seasons.complete(sessions, mode)

    def closed_up(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        kept = [e for e in entries if e["player_id"] not in (gone, pending)]
        return [{**e, "rank": rank} for rank, e in enumerate(kept, start=1)]

    assert await pages(client, admin_headers, mode, "preseason") == closed_up(board)
    assert await pages(client, admin_headers, mode, "s1") == closed_up(s1_live)
    shown = (await client.get(f"/v1/modes/{mode}", headers=admin_headers)).json()
    counts = {s["name"]: (s["players"], s["ranked"]) for s in shown["past_seasons"]}
    assert counts["preseason"] == (len(players) - 2, len(board) - 2)
    assert counts["s1"][1] == len(closed_up(s1_live))
    for season in ("preseason", "s1"):
        response = await client.get(
            f"/v1/leaderboards/{mode}/players/{gone}", params={"season": season}, headers=admin_headers
        )
        assert response.status_code == 404
    with psycopg.connect(database_url) as conn:
        left = conn.execute(
            "SELECT count(*) FROM season_standings a JOIN seasons s ON s.id = a.season_id"
            " WHERE s.mode = %s AND a.player_id LIKE 'erased:%%'",
            (mode,),
        ).fetchone()
    assert left == (0,)


@pytest.mark.parametrize("least", [0, 2])
async def test_a_switch_keeps_the_final_tiers_and_retiers_from_the_reset(
    api: AsyncClient, client: httpx.AsyncClient, admin_headers: Headers, mode: str, least: int
) -> None:
    """The archive keeps each player's final tier; the reset ratings are tiered afresh when they
    are on the leaderboard (no placement matches), and the tier counts follow (issue 39)."""
    from tests.matches.test_ranked import Reference, tiered_mode

    reference: Reference = await tiered_mode(api, mode, placements=least)
    players = [f"{mode}-t{i}" for i in range(8)]
    await play(api, mode, random.Random(8), players, 40)
    before = await ratings(api, mode, players)
    board = await pages(client, admin_headers, mode, None)
    assert any(e["tier"] for e in board)
    await switch(client, admin_headers, mode, name="s1", reset="soft")
    archived = {e["player_id"]: e for e in await pages(client, admin_headers, mode, "preseason")}
    assert {p: e["tier"] for p, e in archived.items()} == {
        e["player_id"]: before[e["player_id"]].tier for e in board
    }
    after = await ratings(api, mode, players)
    for player in players:
        expected = None
        if least == 0:
            rating = after[player].rating
            expected = reference.names[reference.lies_in(reference.shown(rating.mu - 3 * rating.sigma))]
        assert after[player].tier == expected, player
    counts = {t.name: t.players for t in (await api.get_tier_counts(mode)).tiers}
    assert counts == {n: sum(1 for p in players if after[p].tier == n) for n in reference.names}


async def test_the_catch_up_locks_its_rows_in_the_order_posts_lock_them(
    app: FastAPI, api: AsyncClient, mode: str, database_url: str
) -> None:
    """The catch-up takes its rows' locks in the posts' order (mode, player id in the default
    collation), so the two never wait for each other crosswise: held the row that comes first
    in that order, the catch-up waits there holding no other. Ids whose code point order
    differs from a linguistic collation's ('B' before 'a', 'a-b' before 'ab') make the check
    bite on a database with one."""
    players = [f"{mode}-{x}" for x in ("B", "a", "a-b", "ab")]
    await play(api, mode, random.Random(12), players, 8)
    await seasons.switch(app.state.resources.sessions, mode, SeasonIn(name="s1", reset="hard"))
    with psycopg.connect(database_url) as holder, psycopg.connect(database_url, autocommit=True) as probe:
        first = holder.execute(
            "SELECT player_id FROM ratings WHERE mode = %s ORDER BY mode, player_id LIMIT 1 FOR UPDATE",
            (mode,),
        ).fetchone()
        assert first is not None
        catching_up = asyncio.create_task(asyncio.to_thread(_catch_up, database_url, mode))
        # The catch-up is waiting for the held row.
        for _ in range(200):
            waiting = probe.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE %s",
                ("%season_catch_up%",),
            ).fetchone()
            if waiting and waiting[0]:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError("the catch-up never waited for the held row")
        for player in players:
            if player == first[0]:
                continue
            # Locked by nobody: the catch-up took no lock before the first row's.
            probe.execute(
                "SELECT 1 FROM ratings WHERE mode = %s AND player_id = %s FOR UPDATE NOWAIT", (mode, player)
            )
        holder.rollback()
        # On a database whose default collation is code point order ("C") the two orders are
        # one, and the wait above cannot tell them apart: the function says which it uses.
        definition = probe.execute("SELECT pg_get_functiondef('season_catch_up'::regproc)").fetchone()
        assert definition is not None and "ORDER BY player_id FOR UPDATE" in definition[0]
        assert 'COLLATE "C"' not in definition[0]
    assert await catching_up == len(players)


def _catch_up(database_url: str, mode: str) -> int:
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute("SELECT season_catch_up(%s)", (mode,)).fetchone()
    assert row is not None
    return int(row[0])
