"""History jobs: replay equals rating the history again, smooth equals TrueSkill Through
Time on the same matches, and a failed job leaves nothing half-written."""

from __future__ import annotations

import asyncio
import datetime as dt
import random
from typing import Any

import httpx
import psycopg
import pytest

from app.client import AsyncClient
from app.jobs.smooth import day
from app.rating import Rating, TrueSkill
from app.rating.history import History
from tests import ddl
from tests.leaderboards.test_leaderboards import check_all, expected

Headers = dict[str, str]
START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


async def run_job(
    client: httpx.AsyncClient, headers: Headers, mode: str, body: dict[str, Any]
) -> dict[str, Any]:
    response = await client.post(f"/v1/modes/{mode}/jobs", json=body, headers=headers)
    assert response.status_code == 202, response.text
    job_id = response.json()["job_id"]
    for _ in range(600):
        job = (await client.get(f"/v1/jobs/{job_id}", headers=headers)).json()
        if job["status"] in ("done", "failed"):
            return job  # type: ignore[no-any-return]
        await asyncio.sleep(0.1)
    raise AssertionError(f"job {job_id} did not finish: {job}")


def history_bodies(mode: str, rng: random.Random, players: list[str], count: int) -> list[dict[str, Any]]:
    """Matches of 2-3 teams of 1-2 players, ties and partial play, played at random days
    and posted out of played_at order."""
    bodies = []
    for n in range(count):
        teams = rng.choice([2, 2, 3])
        size = rng.choice([1, 2]) if teams == 2 else 1
        chosen = rng.sample(players, teams * size)
        ranks = [rng.randint(0, teams - 1) for _ in range(teams)]
        bodies.append(
            {
                "match_id": f"{mode}-j{n}",
                "mode": mode,
                "played_at": (START + dt.timedelta(days=rng.randint(0, 40), minutes=n)).isoformat(),
                "teams": [
                    {
                        "players": [
                            {"id": p, "weight": rng.choice([1.0, 1.0, 0.5])}
                            for p in chosen[t * size : (t + 1) * size]
                        ],
                        "rank": ranks[t],
                    }
                    for t in range(teams)
                ],
            }
        )
    return bodies


def in_played_order(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(bodies, key=lambda b: (dt.datetime.fromisoformat(b["played_at"]), bodies.index(b)))


def rate_again(
    env: TrueSkill, bodies: list[dict[str, Any]], seeds: dict[str, Rating] | None = None
) -> dict[str, tuple[Rating, int]]:
    current: dict[str, tuple[Rating, int]] = {p: (r, 0) for p, r in (seeds or {}).items()}
    for body in in_played_order(bodies):
        teams = [sorted(p["id"] for p in t["players"]) for t in body["teams"]]
        weights = [
            [next(p["weight"] for p in t["players"] if p["id"] == i) for i in ids]
            for t, ids in zip(body["teams"], teams, strict=True)
        ]
        groups = [[current.get(p, (env.create_rating(), 0))[0] for p in team] for team in teams]
        rated = env.rate(groups, [t["rank"] for t in body["teams"]], weights)
        for team, after in zip(teams, rated, strict=True):
            for p, r in zip(team, after, strict=True):
                current[p] = (r, current.get(p, (r, 0))[1] + 1)
    return current


async def test_replay_rates_the_history_again_with_new_parameters(
    api: AsyncClient, client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    rng = random.Random(2)
    players = [f"rp{i}" for i in range(10)]
    bodies = history_bodies(mode, rng, players, 40)
    for body in bodies:
        await api.post_match(body)
    await api.set_rating("rp-seeded", mode, 40.0, 2.0)
    seeded = {
        "match_id": f"{mode}-seeded",
        "mode": mode,
        "played_at": START.isoformat(),
        "teams": [
            {"players": [{"id": "rp-seeded", "weight": 1.0}], "rank": 1},
            {"players": [{"id": "rp0", "weight": 1.0}], "rank": 0},
        ],
    }
    # The seed is set before the player's first match: a replay starts the player there.
    await api.post_match(seeded)
    voided = bodies[5]
    await api.void_match(voided["match_id"])
    await api.put_mode(mode, beta=3.0, tau=0.2, draw_probability=0.2)

    job = await run_job(client, admin_headers, mode, {"kind": "replay"})
    assert job["status"] == "done", job
    kept = [b for b in bodies if b is not voided] + [seeded]
    assert job["result"]["matches"] == len(kept)

    env = TrueSkill(25.0, 25.0 / 3.0, 3.0, 0.2, 0.2)
    truth = rate_again(env, kept, {"rp-seeded": Rating(40.0, 2.0)})
    for player, (rating, count) in truth.items():
        profile = next(r for r in (await api.get_player(player)).ratings if r.mode == mode)
        # A replay rates level by level: equal to one at a time within 1e-12.
        assert (profile.rating.mu, profile.rating.sigma) == pytest.approx(
            (rating.mu, rating.sigma), rel=1e-12
        )
        assert profile.matches == count
    # Per-match before/after and the stored response follow the replay.
    last = in_played_order(kept)[-1]
    stored = await api.get_match(last["match_id"])
    for entry in stored.players:
        assert (entry.after.mu, entry.after.sigma) == pytest.approx(
            (truth[entry.player_id][0].mu, truth[entry.player_id][0].sigma), rel=1e-12
        )
    history = await api.player_matches(entry.player_id, mode=mode, limit=500)
    newest = max((m for m in history.matches if not m.void), key=lambda m: (m.played_at, m.match_id))
    assert newest.after.mu == pytest.approx(truth[entry.player_id][0].mu, rel=1e-12)
    # The leaderboard is exact after the swap.
    await check_all(client, admin_headers, mode, await expected(api, mode, [*players, "rp-seeded"]))


async def test_smooth_stores_the_curves_of_trueskill_through_time(
    api: AsyncClient, client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    rng = random.Random(9)
    players = [f"sm{i}" for i in range(8)]
    bodies = history_bodies(mode, rng, players, 30)
    for body in bodies:
        await api.post_match(body)
    before = (
        await client.get("/v1/players/sm0/learning-curve", params={"mode": mode}, headers=admin_headers)
    ).json()
    assert before["smoothed"] is None

    job = await run_job(client, admin_headers, mode, {"kind": "smooth", "gamma": 0.05, "iterations": 8})
    assert job["status"] == "done", job

    ordered = in_played_order(bodies)
    history = History(
        [[sorted(p["id"] for p in t["players"]) for t in b["teams"]] for b in ordered],
        results=[[-t["rank"] for t in b["teams"]] for b in ordered],
        times=[day(dt.datetime.fromisoformat(b["played_at"])) for b in ordered],
        mu=25.0,
        sigma=25.0 / 3.0,
        beta=25.0 / 6.0,
        gamma=0.05,
        p_draw=0.1,
        weights=[
            [
                [
                    next(p["weight"] for p in t["players"] if p["id"] == i)
                    for i in sorted(p["id"] for p in t["players"])
                ]
                for t in b["teams"]
            ]
            for b in ordered
        ],
    )
    history.convergence(1e-6, 8)
    assert job["result"]["log_evidence"] == pytest.approx(history.log_evidence(), rel=1e-12)
    curves = history.learning_curves()
    for player in players:
        body = (
            await client.get(
                f"/v1/players/{player}/learning-curve", params={"mode": mode}, headers=admin_headers
            )
        ).json()
        assert body["smoothed_by_job"] == job["job_id"]
        assert [(p["mu"], p["sigma"]) for p in body["smoothed"]] == [
            (g.mu, g.sigma) for _, g in curves[player]
        ]
        days = [dt.datetime.fromisoformat(p["t"]) for p in body["smoothed"]]
        assert [day(t) for t in days] == [t for t, _ in curves[player]]
        online = body["online"]
        assert len(online) == sum(
            1 for b in bodies for t in b["teams"] for p in t["players"] if p["id"] == player
        )
        assert [dt.datetime.fromisoformat(p["t"]) for p in online] == sorted(
            dt.datetime.fromisoformat(p["t"]) for p in online
        )


async def test_a_failed_replay_says_why_and_changes_nothing(
    api: AsyncClient, client: httpx.AsyncClient, admin_headers: Headers, mode: str, database_url: str
) -> None:
    rng = random.Random(4)
    players = [f"fl{i}" for i in range(6)]
    for body in history_bodies(mode, rng, players, 15):
        await api.post_match(body)
    await api.put_mode(mode, beta=2.0)
    snapshot = """
        SELECT (SELECT json_agg(r ORDER BY player_id) FROM ratings r WHERE mode = %(m)s),
               (SELECT json_agg(p ORDER BY match_pk, player_id) FROM match_players p WHERE mode = %(m)s),
               (SELECT json_agg(x ORDER BY id)
                FROM (SELECT id, quality, response FROM matches WHERE mode = %(m)s) x),
               (SELECT json_agg(d ORDER BY bucket) FROM (SELECT bucket, sum(delta) FROM leaderboard_deltas
                                                        WHERE mode = %(m)s GROUP BY bucket) d)
    """
    with psycopg.connect(database_url, autocommit=True) as conn:
        before = conn.execute(snapshot, {"m": mode}).fetchone()
        # A fault in the middle of the swap: after ratings are rewritten, before matches are.
        conn.execute(f"""
            CREATE FUNCTION fail_{mode.replace("-", "_")}() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'injected fault'; END $$;
            CREATE TRIGGER fail_{mode.replace("-", "_")} BEFORE UPDATE ON matches FOR EACH ROW
            WHEN (OLD.mode = '{mode}') EXECUTE FUNCTION fail_{mode.replace("-", "_")}();
        """)
    try:
        job = await run_job(client, admin_headers, mode, {"kind": "replay"})
    finally:
        ddl.run(database_url, f"DROP TRIGGER fail_{mode.replace('-', '_')} ON matches")
    assert job["status"] == "failed"
    assert "injected fault" in job["error"]
    with psycopg.connect(database_url, autocommit=True) as conn:
        assert conn.execute(snapshot, {"m": mode}).fetchone() == before
    assert (await run_job(client, admin_headers, mode, {"kind": "replay"}))["status"] == "done"


async def test_bad_job_requests(client: httpx.AsyncClient, admin_headers: Headers, mode: str) -> None:
    unknown = await client.post("/v1/modes/no-such-mode/jobs", json={"kind": "replay"}, headers=admin_headers)
    assert unknown.status_code == 404
    for body in ({"kind": "rewind"}, {"kind": "smooth", "iterations": 0}, {"kind": "replay", "gamma": 1}, {}):
        response = await client.post(f"/v1/modes/{mode}/jobs", json=body, headers=admin_headers)
        assert response.status_code == 422, body
        assert response.headers["content-type"].startswith("application/problem+json")
    assert (await client.get("/v1/jobs/nope", headers=admin_headers)).status_code == 404
    assert (await client.post(f"/v1/modes/{mode}/jobs", json={"kind": "replay"})).status_code == 401
