"""Skill drift with time away (issue 39 item 1): sigma² grows by gamma² per day since a player's
last match before their next one (seed 001 eq. 4), then tau as always; reads show the drift;
a replay equals the live ratings."""

from __future__ import annotations

import datetime as dt
import math
import random
from typing import Any

import httpx
import psycopg
import pytest

from app.client import ApiError, AsyncClient
from app.leaderboards import drift, rescore
from app.rating import TrueSkill
from tests.jobs.test_jobs import run_job
from tests.matches.test_ranked import finished

Headers = dict[str, str]
GAMMA = 0.5
START = dt.datetime(2025, 3, 1, 12, tzinfo=dt.UTC)


def duel(mode: str, match_id: str, winner: str, loser: str, at: dt.datetime) -> dict[str, Any]:
    return {
        "match_id": f"{mode}-{match_id}",
        "mode": mode,
        "played_at": at.isoformat(),
        "teams": [{"players": [{"id": winner}], "rank": 0}, {"players": [{"id": loser}], "rank": 1}],
    }


def entry(match: Any, player: str) -> Any:
    return next(p for p in match.players if p.player_id == player)


async def test_sigma_grows_by_gamma_squared_per_day_away_before_the_next_match(
    api: AsyncClient, mode: str
) -> None:
    await api.put_mode(mode, drift_per_day=GAMMA)
    first = await api.post_match(duel(mode, "1", "a", "b", START))
    left = entry(first, "a").after
    # b never played before: no drift from the prior.
    assert entry(first, "b").before.sigma == 25.0 / 3.0
    away = 10.25
    second = await api.post_match(duel(mode, "2", "c", "a", START + dt.timedelta(days=away)))
    came_back = entry(second, "a").before
    assert came_back.mu == left.mu
    assert came_back.sigma == pytest.approx(math.sqrt(left.sigma**2 + GAMMA**2 * away), rel=1e-12)
    # Then tau is added and the match rated from the drifted rating, as TrueSkill rates it.
    env = TrueSkill(25.0, 25.0 / 3.0, 25.0 / 6.0, 25.0 / 300.0, 0.1)
    _, (loser,) = env.rate(
        [(env.create_rating(25.0, 25.0 / 3.0),), (env.create_rating(came_back.mu, came_back.sigma),)]
    )
    assert (entry(second, "a").after.mu, entry(second, "a").after.sigma) == pytest.approx(
        (loser.mu, loser.sigma), rel=1e-12
    )
    # A match played earlier than the last one adds no drift (no negative time).
    third = await api.post_match(duel(mode, "3", "a", "d", START + dt.timedelta(days=1)))
    assert entry(third, "a").before.sigma == entry(second, "a").after.sigma


async def test_a_mode_without_drift_rates_as_before(api: AsyncClient, mode: str) -> None:
    await api.post_match(duel(mode, "1", "a", "b", START))
    after = entry(await api.post_match(duel(mode, "2", "a", "b", START + dt.timedelta(days=400))), "a")
    first = next(r for r in (await api.get_player("a")).ratings if r.mode == mode)
    assert first.drift is None
    assert after.after.sigma == first.rating.sigma


async def test_reads_show_the_time_away(api: AsyncClient, mode: str) -> None:
    await api.put_mode(mode, drift_per_day=GAMMA)
    match = await api.post_match(duel(mode, "1", "r1", "r2", START))
    stored = entry(match, "r1").after
    profile = next(r for r in (await api.get_player("r1")).ratings if r.mode == mode)
    assert profile.drift is not None
    assert profile.drift.sigma_at_last_match == stored.sigma
    days = (dt.datetime.now(dt.UTC) - START) / dt.timedelta(days=1)
    assert profile.drift.days == pytest.approx(days, abs=0.01)
    assert profile.rating.sigma == pytest.approx(
        math.sqrt(stored.sigma**2 + GAMMA**2 * profile.drift.days), rel=1e-12
    )
    assert profile.rating.conservative == pytest.approx(
        profile.rating.mu - 3 * profile.rating.sigma, rel=1e-12
    )
    # The leaderboard is drifted to the mode's drift_as_of: the PUT that set the drift (now).
    board = await api.get_leaderboard(mode)
    mine = next(e for e in board.entries if e.player_id == "r1")
    assert mine.rating.conservative == pytest.approx(profile.rating.conservative, abs=1e-3)


async def test_drift_per_day_must_not_be_negative(
    client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    response = await client.put(f"/v1/modes/{mode}", json={"drift_per_day": -0.1}, headers=admin_headers)
    assert response.status_code == 422
    assert response.json()["errors"][0]["loc"] == ["body", "drift_per_day"]


async def test_a_replay_equals_the_live_ratings(
    api: AsyncClient, client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    await api.put_mode(mode, drift_per_day=0.3)
    rng = random.Random(7)
    players = [f"d{i}" for i in range(8)]
    at = START
    live: dict[str, Any] = {}
    for i in range(40):
        at += dt.timedelta(hours=rng.choice([1, 30, 24 * 9, 24 * 45]))
        a, b = rng.sample(players, 2)
        # Some posts in a batch: a group rates its matches level by level with drift too.
        body = duel(mode, f"m{i}", a, b, at)
        live[body["match_id"]] = await api.post_match(body)
    job = await run_job(client, admin_headers, mode, {"kind": "replay"})
    assert job["status"] == "done", job
    for match_id, before in live.items():
        again = await api.get_match(match_id)
        for old, new in zip(before.players, again.players, strict=True):
            assert (new.before.mu, new.before.sigma, new.after.mu, new.after.sigma) == pytest.approx(
                (old.before.mu, old.before.sigma, old.after.mu, old.after.sigma), rel=1e-12
            )


async def test_a_batch_drifts_as_single_posts(
    api: AsyncClient, mode: str, client: httpx.AsyncClient, admin_headers: Headers
) -> None:
    await api.put_mode(mode, drift_per_day=0.4)
    other = f"{mode}-single"
    await api.put_mode(other, drift_per_day=0.4)
    rng = random.Random(3)
    bodies = []
    at = START
    for i in range(12):
        at += dt.timedelta(days=rng.choice([0.5, 3, 20]))
        a, b = rng.sample(["p1", "p2", "p3", "p4"], 2)
        bodies.append(duel(mode, f"b{i}", a, b, at))
    batch = (await client.post("/v1/matches/batch", json={"matches": bodies}, headers=admin_headers)).json()
    for body, item in zip(bodies, batch["results"], strict=True):
        single = await api.post_match({**body, "mode": other, "match_id": body["match_id"] + "-s"})
        for one, many in zip(single.players, item["match"]["players"], strict=True):
            assert many["before"]["sigma"] == pytest.approx(one.before.sigma, rel=1e-12)
            assert many["after"]["mu"] == pytest.approx(one.after.mu, rel=1e-12)


async def test_the_daily_rerank_moves_the_leaderboard_forward(
    api: AsyncClient, app: Any, database_url: str, mode: str
) -> None:
    changed = await api.put_mode(mode, drift_per_day=GAMMA)
    if changed.retier_job is not None:
        # The change's own re-score: the loop leaves a walk to the job while it is queued.
        assert (await finished(api, changed.retier_job)).status == "done"
    for i, (a, b) in enumerate([("x1", "x2"), ("x3", "x4"), ("x1", "x3")]):
        await api.post_match(duel(mode, str(i), a, b, START + dt.timedelta(days=30 * i)))
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE modes SET drift_as_of = drift_as_of - interval '2 days' WHERE name = %s", (mode,)
        )
    sessions = app.state.resources.sessions
    # Claimed once: the second call finds it fresh.
    assert mode in await drift.due(sessions)
    assert mode not in await drift.due(sessions)
    # One batch, then the walk stops short (a crash, say): the loop's next round resumes after
    # it, on whichever instance, rewriting only the rows left.
    assert await rescore.step(sessions, mode, 2) == 2
    assert (await api.get_leaderboard(mode)).rescoring
    assert mode in await drift.left(sessions)
    assert await drift.rerank(sessions, mode, batch=2) == 2
    assert mode not in await drift.left(sessions)
    assert not (await api.get_leaderboard(mode)).rescoring
    with psycopg.connect(database_url) as conn:
        as_of = conn.execute("SELECT drift_as_of FROM modes WHERE name = %s", (mode,)).fetchone()[0]
    entries = (await api.get_leaderboard(mode)).entries
    for e in entries:
        profile = next(r for r in (await api.get_player(e.player_id)).ratings if r.mode == mode)
        assert profile.drift is not None and profile.last_played_at is not None
        days = (as_of - profile.last_played_at) / dt.timedelta(days=1)
        sigma = math.sqrt(profile.drift.sigma_at_last_match**2 + GAMMA**2 * days)
        assert e.rating.conservative == pytest.approx(profile.rating.mu - 3 * sigma, rel=1e-9)
    order = sorted(entries, key=lambda e: (-e.rating.conservative, e.player_id))
    assert [e.player_id for e in entries] == [e.player_id for e in order]
    for rank, e in enumerate(entries, start=1):
        assert (await api.get_leaderboard_standing(mode, e.player_id)).rank == rank


async def test_unknown_mode_tiers_are_404(api: AsyncClient) -> None:
    with pytest.raises(ApiError) as caught:
        await api.get_tier_counts("no-such-mode-here")
    assert caught.value.status == 404


async def test_the_ratings_a_ticket_is_matched_with_are_drifted(
    api: AsyncClient, app: Any, mode: str
) -> None:
    from app.players import repository as players

    await api.put_mode(mode, drift_per_day=GAMMA)
    await api.post_match(duel(mode, "1", "tk1", "tk2", START))
    profile = next(r for r in (await api.get_player("tk1")).ratings if r.mode == mode)
    async with app.state.resources.sessions() as session:
        read = await players.current_ratings(session, mode, ["tk1"])
    assert profile.drift is not None and read["tk1"][1] > profile.drift.sigma_at_last_match + 1.0
    assert read["tk1"] == pytest.approx((profile.rating.mu, profile.rating.sigma), rel=1e-6)
