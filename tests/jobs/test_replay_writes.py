"""How a replay writes: fresh tables swapped in or rows updated in place give the same rows and
keep the schema; applied_seq follows the replay's order, so every player's history read by
applied_seq is one unbroken before -> after chain; matches recorded during a replay are rated on
top; a swap that fails changes nothing."""

from __future__ import annotations

import asyncio
import datetime as dt
import random
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI

from app.client import AsyncClient
from app.jobs import service
from app.progress import Progress
from app.rating import Rating, TrueSkill
from tests.jobs.test_jobs import START, history_bodies, rate_again
from tests.leaderboards.test_leaderboards import check_all, expected

Headers = dict[str, str]


def nothing() -> Progress:
    """Progress nobody watches."""
    return Progress()


def catalog(database_url: str) -> list[Any]:
    """Indexes, constraints, columns and owned sequences of the two rewritten tables."""
    with psycopg.connect(database_url) as conn:
        return conn.execute("""
            SELECT 'index', c.relname, pg_get_indexdef(i.indexrelid) FROM pg_index i
            JOIN pg_class c ON c.oid = i.indexrelid
            WHERE i.indrelid IN (CAST('matches' AS regclass), CAST('match_players' AS regclass))
            UNION ALL
            SELECT 'constraint', conname,
                   CAST(CAST(conrelid AS regclass) AS text) || ' ' || pg_get_constraintdef(oid)
            FROM pg_constraint
            WHERE conrelid IN (CAST('matches' AS regclass), CAST('match_players' AS regclass))
               OR confrelid IN (CAST('matches' AS regclass), CAST('match_players' AS regclass))
            UNION ALL
            SELECT 'column', CAST(CAST(attrelid AS regclass) AS text) || '.' || attname,
                   format_type(atttypid, atttypmod) || ' ' || attnotnull || ' '
                   || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
            FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
            WHERE attrelid IN (CAST('matches' AS regclass), CAST('match_players' AS regclass))
              AND attnum > 0 AND NOT attisdropped
            UNION ALL
            SELECT 'owned', CAST(CAST(d.objid AS regclass) AS text),
                   CAST(CAST(d.refobjid AS regclass) AS text) || '.' || a.attname
            FROM pg_depend d JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
            WHERE d.deptype = 'a' AND d.refobjid = CAST('matches' AS regclass)
              AND d.classid = CAST('pg_class' AS regclass)
            ORDER BY 1, 2, 3
        """).fetchall()


def snapshot(database_url: str, mode: str) -> tuple[Any, ...]:
    with psycopg.connect(database_url) as conn:
        return conn.execute(
            """
            SELECT (SELECT json_agg(r ORDER BY player_id) FROM (SELECT player_id, mu, sigma, conservative,
                        matches, wins, losses, draws, last_played_at FROM ratings WHERE mode = %(m)s) r),
                   (SELECT json_agg(p ORDER BY match_pk, player_id) FROM match_players p WHERE mode = %(m)s),
                   (SELECT json_agg(x ORDER BY id) FROM (SELECT id, match_id, played_at, body_hash, quality,
                        response, void FROM matches WHERE mode = %(m)s) x),
                   (SELECT count(*) FROM matches), (SELECT count(*) FROM match_players)
            """,
            {"m": mode},
        ).fetchone()  # type: ignore[return-value]


def scramble(database_url: str, mode: str, skipped: list[str]) -> None:
    """Overwrite what a replay rewrites in the mode's rated matches (not void, not refused), so a
    replay that leaves old values in place cannot match a snapshot taken before."""
    refused = [line.split(": ", 1)[0] for line in skipped]
    with psycopg.connect(database_url) as conn:
        rated = "m.mode = %(m)s AND NOT m.void AND NOT m.match_id = ANY(%(refused)s)"
        params = {"m": mode, "refused": refused}
        conn.execute(
            "UPDATE match_players mp SET mu_before = -1, sigma_before = -1, mu_after = -1, sigma_after = -1"
            f" FROM matches m WHERE m.id = mp.match_pk AND {rated}",
            params,
        )
        conn.execute(f"UPDATE matches m SET quality = -1, response = '{{}}' WHERE {rated}", params)


def check_chains(database_url: str, mode: str, start: dict[str, tuple[float, float]]) -> int:
    """Every player's matches in applied_seq order: each before is the previous after (the
    first is the player's start). The number of players checked."""
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            """
            SELECT mp.player_id, mp.mu_before, mp.sigma_before, mp.mu_after, mp.sigma_after, m.applied_seq
            FROM match_players mp JOIN matches m ON m.id = mp.match_pk
            WHERE m.mode = %s AND NOT m.void ORDER BY mp.player_id, m.applied_seq
            """,
            (mode,),
        ).fetchall()
    previous: dict[str, tuple[float, float]] = {}
    seqs: set[int] = set()
    for player, mu_before, sigma_before, mu_after, sigma_after, seq in rows:
        assert seq is not None
        seqs.add(seq)
        assert (mu_before, sigma_before) == previous.get(player, start.get(player, (25.0, 25.0 / 3.0))), (
            player
        )
        previous[player] = (mu_after, sigma_after)
    assert len(seqs) == len({r[5] for r in rows})
    return len(previous)


async def post_all(api: AsyncClient, bodies: list[dict[str, Any]]) -> None:
    for body in bodies:
        await api.post_match(body)


async def test_fresh_tables_and_in_place_write_the_same_and_keep_the_schema(
    app: FastAPI,
    api: AsyncClient,
    client: httpx.AsyncClient,
    admin_headers: Headers,
    mode: str,
    database_url: str,
) -> None:
    rng = random.Random(11)
    players = [f"{mode}-w{i}" for i in range(12)]
    bodies = history_bodies(mode, rng, players, 80)
    await post_all(api, bodies)
    await api.void_match(bodies[3]["match_id"])
    await api.set_rating(players[0], mode, 31.0, 3.0)  # a seed: the replay starts the player there
    await api.put_mode(mode, beta=3.0, tau=0.2)
    sessions = app.state.resources.sessions
    schema = catalog(database_url)

    in_place = await service.run_replay(sessions, mode, nothing(), fresh=False)
    assert in_place["fresh_tables"] is False and in_place["matches"] == 79
    written = snapshot(database_url, mode)
    seeded = {players[0]: (31.0, 3.0)}
    assert check_chains(database_url, mode, seeded) == 12

    scramble(database_url, mode, in_place["skipped"])
    fresh = await service.run_replay(sessions, mode, nothing(), fresh=True)
    assert fresh["fresh_tables"] is True and fresh["matches"] == 79
    assert snapshot(database_url, mode) == written
    assert check_chains(database_url, mode, seeded) == 12
    assert catalog(database_url) == schema

    env = TrueSkill(beta=3.0, tau=0.2)
    kept = [b for b in bodies if b is not bodies[3]]
    truth = rate_again(env, kept, {players[0]: Rating(31.0, 3.0)})
    for player, (rating, count) in truth.items():
        profile = next(r for r in (await api.get_player(player)).ratings if r.mode == mode)
        # Level by level equals one at a time within 1e-12 (tests/jobs/test_replay_levels.py).
        assert (profile.rating.mu, profile.rating.sigma) == pytest.approx(
            (rating.mu, rating.sigma), rel=1e-12
        )
        assert profile.matches == count
    await check_all(client, admin_headers, mode, await expected(api, mode, players))

    # The swapped-in tables take posts (the id sequence, the keys), and keep the migrations'
    # foreign keys (match_players has none since 0011: the catalog check above).
    later = {
        "match_id": f"{mode}-after-swap",
        "mode": mode,
        "teams": [{"players": [{"id": players[1]}], "rank": 0}, {"players": [{"id": players[2]}], "rank": 1}],
    }
    posted = await client.post("/v1/matches", json=later, headers=admin_headers)
    assert posted.status_code == 201, posted.text
    assert check_chains(database_url, mode, seeded) == 12


async def test_fresh_tables_keep_coefficients_and_the_rows_of_a_refused_match(
    app: FastAPI, api: AsyncClient, mode: str, database_url: str
) -> None:
    """A fresh match_players is built from the replay's own rows (coefficients, null or not,
    included) and keeps the rows of refused matches (ties, once draws are off) as they were:
    as in place."""
    rng = random.Random(15)
    players = [f"{mode}-c{i}" for i in range(8)]
    await api.put_mode(mode, team_performance="weighted", draw_probability=0.1)
    bodies = history_bodies(mode, rng, players, 30)
    for body in bodies:
        for team in body["teams"]:
            for player in team["players"]:
                if rng.random() < 0.5:
                    player["coefficient"] = rng.choice([0.5, 2.0, 3.25])
    tie = {
        "match_id": f"{mode}-tie",
        "mode": mode,
        "teams": [{"players": [{"id": players[0]}], "rank": 0}, {"players": [{"id": players[1]}], "rank": 0}],
    }
    await post_all(api, [*bodies, tie])
    await api.put_mode(mode, draw_probability=0.0)  # the tie can no longer be rated

    in_place = await service.run_replay(app.state.resources.sessions, mode, nothing(), fresh=False)
    written = snapshot(database_url, mode)
    scramble(database_url, mode, in_place["skipped"])
    fresh = await service.run_replay(app.state.resources.sessions, mode, nothing(), fresh=True)
    assert snapshot(database_url, mode) == written
    assert fresh["skipped"] == in_place["skipped"]
    assert f"{tie['match_id']}: " in "\n".join(fresh["skipped"])
    with psycopg.connect(database_url) as conn:
        coefficients = conn.execute(
            "SELECT count(coefficient), count(*) - count(coefficient), count(DISTINCT match_pk)"
            " FROM match_players WHERE mode = %s",
            (mode,),
        ).fetchone()
    assert coefficients is not None and coefficients[0] > 0 and coefficients[1] > 0
    assert coefficients[2] == len(bodies) + 1


async def test_matches_recorded_during_a_replay_are_rated_on_top(
    app: FastAPI,
    api: AsyncClient,
    client: httpx.AsyncClient,
    admin_headers: Headers,
    mode: str,
    database_url: str,
) -> None:
    rng = random.Random(12)
    players = [f"{mode}-l{i}" for i in range(8)]
    bodies = history_bodies(mode, rng, players, 40)
    await post_all(api, bodies)
    late = {
        "match_id": f"{mode}-late",
        "mode": mode,
        "played_at": (START + dt.timedelta(days=90)).isoformat(),
        "teams": [
            {"players": [{"id": players[0], "weight": 1.0}, {"id": players[1], "weight": 1.0}], "rank": 1},
            {"players": [{"id": players[2], "weight": 1.0}, {"id": players[3], "weight": 1.0}], "rank": 0},
        ],
    }
    posted: list[int] = []

    async def post_while_rating(_: float) -> None:
        # Shown first once the history is read: this match is recorded while the replay runs.
        if not posted:
            posted.append((await client.post("/v1/matches", json=late, headers=admin_headers)).status_code)

    lates = []
    for fresh in (False, True):
        posted.clear()
        late["match_id"] = f"{mode}-late-{fresh}"
        lates.append(dict(late))
        result = await service.run_replay(
            app.state.resources.sessions, mode, Progress(post_while_rating), fresh=fresh
        )
        assert posted == [201]
        assert result["recorded_during_replay"] == 1
        check_chains(database_url, mode, {})
        with psycopg.connect(database_url) as conn:
            newest = conn.execute(
                "SELECT match_id FROM matches WHERE mode = %s ORDER BY applied_seq DESC LIMIT 1", (mode,)
            ).fetchone()
        assert newest == (late["match_id"],)
    truth = rate_again(TrueSkill(), [*bodies, *lates])
    for player, (rating, count) in truth.items():
        profile = next(r for r in (await api.get_player(player)).ratings if r.mode == mode)
        # Level by level equals one at a time within 1e-12 (tests/jobs/test_replay_levels.py).
        assert (profile.rating.mu, profile.rating.sigma) == pytest.approx(
            (rating.mu, rating.sigma), rel=1e-12
        )
        assert profile.matches == count


async def test_a_failed_swap_of_fresh_tables_changes_nothing(
    app: FastAPI, api: AsyncClient, mode: str, database_url: str
) -> None:
    rng = random.Random(13)
    await post_all(api, history_bodies(mode, rng, [f"{mode}-f{i}" for i in range(6)], 20))
    await api.put_mode(mode, beta=2.0)
    before, schema = snapshot(database_url, mode), catalog(database_url)
    view = f"v_{mode.replace('-', '_')}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"CREATE VIEW {view} AS SELECT id FROM matches")  # the old table cannot be dropped
    try:
        with pytest.raises(psycopg.errors.DependentObjectsStillExist):
            await service.run_replay(app.state.resources.sessions, mode, nothing(), fresh=True)
    finally:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(f"DROP VIEW {view}")
    assert snapshot(database_url, mode) == before
    assert catalog(database_url) == schema


async def test_posts_to_other_modes_during_a_swap_of_fresh_tables_wait_and_land(
    app: FastAPI,
    api: AsyncClient,
    client: httpx.AsyncClient,
    admin_headers: Headers,
    mode: str,
    database_url: str,
) -> None:
    rng = random.Random(14)
    await post_all(api, history_bodies(mode, rng, [f"{mode}-s{i}" for i in range(10)], 60))
    other = f"{mode}-other"
    await api.put_mode(other)
    replaying = asyncio.ensure_future(
        service.run_replay(app.state.resources.sessions, mode, nothing(), fresh=True)
    )
    answers = []
    number = 0
    while not replaying.done() or number < 5:
        body = {
            "match_id": f"{other}-{number}",
            "mode": other,
            "teams": [
                {"players": [{"id": f"{other}-a"}], "rank": 0},
                {"players": [{"id": f"{other}-b"}], "rank": 1},
            ],
        }
        answers.append((await client.post("/v1/matches", json=body, headers=admin_headers)).status_code)
        number += 1
    assert (await replaying)["fresh_tables"] is True
    assert set(answers) == {201}
    with psycopg.connect(database_url) as conn:
        stored = conn.execute(
            "SELECT count(*), count(DISTINCT applied_seq) FROM matches WHERE mode = %s", (other,)
        ).fetchone()
    assert stored == (number, number)
    assert check_chains(database_url, other, {}) == 2
    assert check_chains(database_url, mode, {}) == 10
