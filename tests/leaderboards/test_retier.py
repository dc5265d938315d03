"""The re-tier job a change of a mode's tier settings queues (app.leaderboards.retier).

A row of the mode held locked by the test stands for a batch the job has not finished: the
job stops there, with the batches before it done and those after it not reached, so what a
post or a read sees mid-job is fixed, not a matter of timing.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest
from fastapi import FastAPI

from app.client import AsyncClient
from app.jobs import service as jobs
from app.leaderboards import repository as leaderboards
from app.leaderboards import retier
from tests.matches.test_ranked import OFFSET, SCALE, Reference, duel, finished, random_matches, tiered_mode

PLAYERS = [f"p{i:02d}" for i in range(30)]
BATCH = 3
# The row held locked: the job finishes the batches before its batch and waits in it.
HELD = 13
NEW_TIERS = [
    {"name": "iron", "min": 0.0},
    {"name": "steel", "min": 1100.0},
    {"name": "mithril", "min": 1500.0},
]
# Wide enough that a player who lost stays where the rule keeps them, not where a fresh
# placement would put them: a job that wrote over a match's tier would show.
NEW_MARGIN = 400.0


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(retier, "BATCH", BATCH)


# What the background runner's claim does, for one job: it takes jobs oldest first, one at a
# time, and may be busy with another test's; a job claimed here runs now, in this test.
_CLAIM = """
    UPDATE jobs SET status = 'running', started_at = now(), heartbeat_at = now(),
      attempts = attempts + 1, progress = 0
    WHERE id = %s AND status = 'queued' RETURNING mode, kind, params
"""


def run_now(app: FastAPI, database_url: str, job_id: str | None) -> asyncio.Task[None] | None:
    """Start the job in this test unless a runner took it already (then it runs there)."""
    assert job_id is not None
    with psycopg.connect(database_url, autocommit=True) as conn:
        row = conn.execute(_CLAIM, (job_id,)).fetchone()
    if row is None:
        return None
    return asyncio.create_task(jobs.run(app.state.resources.sessions, job_id, *row))


@contextmanager
def held_row(database_url: str, mode: str, player: str) -> Iterator[None]:
    with psycopg.connect(database_url) as conn:
        conn.execute("SELECT 1 FROM ratings WHERE mode = %s AND player_id = %s FOR UPDATE", (mode, player))
        yield
        conn.rollback()


async def reaches(api: AsyncClient, mode: str, behind: int) -> None:
    """Wait until the job has placed everyone but `behind` players (it waits at the held row)."""
    for _ in range(600):
        if (await api.get_tier_counts(mode)).retiering == behind:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the re-tier never reached {behind} players behind: {await counts(api, mode)}")


async def played(api: AsyncClient, mode: str) -> dict[str, float]:
    """Each player's conservative rating as stored."""
    ratings = {}
    for player in PLAYERS:
        found = next(r for r in (await api.get_player(player)).ratings if r.mode == mode)
        ratings[player] = found.rating.conservative
    return ratings


async def counts(api: AsyncClient, mode: str) -> tuple[dict[str, int], int]:
    read = await api.get_tier_counts(mode)
    return {t.name: t.players for t in read.tiers if t.players}, read.retiering


async def test_posts_during_a_retier_take_the_new_settings_and_the_job_keeps_them(
    app: FastAPI, api: AsyncClient, mode: str, database_url: str
) -> None:
    await tiered_mode(api, mode)
    for body in random_matches(mode, random.Random(21), PLAYERS, 150):
        await api.post_match(body)
    reference = Reference(NEW_TIERS, NEW_MARGIN, SCALE, OFFSET)
    # Where the new settings place each player, before any match after the change.
    expected = {
        p: reference.names[reference.lies_in(reference.shown(c))]
        for p, c in (await played(api, mode)).items()
    }
    first_held = HELD - HELD % BATCH  # the held row's batch: its rows before it are locked too
    done, waiting = PLAYERS[:first_held], PLAYERS[first_held + BATCH :]
    with held_row(database_url, mode, PLAYERS[HELD]):
        # The change commits while a row of the mode is locked: the PUT rewrites no rating.
        changed = await api.put_mode(mode, tiers=NEW_TIERS, demotion_margin=NEW_MARGIN)
        assert changed.retier_job is not None
        task = run_now(app, database_url, changed.retier_job)
        await reaches(api, mode, len(PLAYERS) - first_held)
        placed = set(done)
        assert await counts(api, mode) == (Counter(expected[p] for p in placed), len(PLAYERS) - len(placed))
        rng = random.Random(22)
        for n in range(12):
            # A player the job placed against one it has not reached yet.
            first, second = rng.choice(done), rng.choice(waiting)
            answer = await api.post_match(duel(mode, f"during{n}", [first], [second], (0, 1)))
            for entry in answer.players:
                tier = entry.tier
                assert tier is not None
                assert tier.before == expected[entry.player_id], entry.player_id
                expected[entry.player_id] = reference.next(
                    expected[entry.player_id], entry.after.conservative
                )
                assert tier.after == expected[entry.player_id], entry.player_id
                placed.add(entry.player_id)
            # Exact after every commit: the placed players by tier, the rest still behind.
            assert await counts(api, mode) == (
                Counter(expected[p] for p in placed),
                len(PLAYERS) - len(placed),
            )
    job = await finished(api, changed.retier_job)
    if task is not None:
        await task
    assert job.status == "done" and job.result["superseded"] is False, job
    # The job placed the players no match had reached, and left the matches' tiers alone.
    assert job.result["players"] == len(PLAYERS) - len(placed - set(done))
    for player in PLAYERS:
        assert (
            next(r for r in (await api.get_player(player)).ratings if r.mode == mode).tier == expected[player]
        )
    assert await counts(api, mode) == (Counter(expected.values()), 0)
    page = await api.get_leaderboard(mode, tier="steel", limit=100)
    assert sorted(e.player_id for e in page.entries) == sorted(p for p, t in expected.items() if t == "steel")


async def test_a_second_change_supersedes_the_running_job(
    app: FastAPI, api: AsyncClient, mode: str, database_url: str
) -> None:
    await tiered_mode(api, mode)
    for body in random_matches(mode, random.Random(31), PLAYERS, 120):
        await api.post_match(body)
    first_held = HELD - HELD % BATCH
    with held_row(database_url, mode, PLAYERS[HELD]):
        older = await api.put_mode(mode, tiers=NEW_TIERS)
        tasks = [run_now(app, database_url, older.retier_job)]
        await reaches(api, mode, len(PLAYERS) - first_held)
        two = [{"name": "low", "min": 0.0}, {"name": "high", "min": 1250.0}]
        newer = await api.put_mode(mode, tiers=two, demotion_margin=0.0)
        assert newer.retier_job not in (None, older.retier_job)
        # Nobody is placed by the newest settings yet; everyone tiered counts as behind.
        assert await counts(api, mode) == ({}, len(PLAYERS))
        tasks.append(run_now(app, database_url, newer.retier_job))
    for task in tasks:
        if task is not None:
            await task
    superseded = await finished(api, older.retier_job)
    assert superseded.status == "done" and superseded.result["superseded"] is True, superseded
    job = await finished(api, newer.retier_job)
    assert job.status == "done" and job.result["superseded"] is False, job
    reference = Reference(two, 0.0, SCALE, OFFSET)
    expected = {
        p: reference.names[reference.lies_in(reference.shown(c))]
        for p, c in (await played(api, mode)).items()
    }
    for player in PLAYERS:
        assert (
            next(r for r in (await api.get_player(player)).ratings if r.mode == mode).tier == expected[player]
        )
    assert await counts(api, mode) == (Counter(expected.values()), 0)
    # Folded, the older versions' deltas sum to nothing and go: one row per tier is left.
    async with app.state.resources.sessions() as session, session.begin():
        assert await leaderboards.compact(session, mode)
    assert await counts(api, mode) == (Counter(expected.values()), 0)
    with psycopg.connect(database_url) as conn:
        left = conn.execute("SELECT count(*) FROM tier_deltas WHERE mode = %s", (mode,)).fetchone()
    assert left == (len(set(expected.values())),)


async def test_a_change_that_places_no_tier_queues_no_job(api: AsyncClient, mode: str) -> None:
    await tiered_mode(api, mode)
    assert (await api.put_mode(mode, ticket_ttl_seconds=90.0)).retier_job is None
    assert (await api.put_mode(mode, tiers=NEW_TIERS)).retier_job is not None
    assert (await api.put_mode(mode, tiers=NEW_TIERS)).retier_job is None  # the same tiers again
