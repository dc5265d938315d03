"""The re-score a change of conservative_k or drift_per_day makes (app.leaderboards.rescore),
run by the mode's re-tier job.

As in test_retier, a row of the mode held locked by the test stands for a batch the job has
not finished: the job stops there, the batches before it done and those after it not
reached, so what a post or a read sees mid-job is fixed, not a matter of timing.
"""

from __future__ import annotations

import asyncio
import random

import httpx
import psycopg
import pytest
from fastapi import FastAPI

from app.client import AsyncClient
from app.jobs import service as jobs
from app.leaderboards import rescore, retier
from tests.leaderboards.test_retier import _CLAIM, held_row, run_now
from tests.matches.test_ranked import duel, finished, random_matches

PLAYERS = [f"p{i:02d}" for i in range(30)]
BATCH = 3
HELD = 13
# The held row's batch starts here: the walk has rewritten every row before it.
FIRST_HELD = HELD - HELD % BATCH


@pytest.fixture(autouse=True)
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rescore, "BATCH", BATCH)
    monkeypatch.setattr(retier, "BATCH", BATCH)


def rescore_after(database_url: str, mode: str) -> str | None:
    with psycopg.connect(database_url) as conn:
        row = conn.execute("SELECT rescore_after FROM modes WHERE name = %s", (mode,)).fetchone()
    assert row is not None
    return row[0]


async def walked_to(database_url: str, mode: str, player: str) -> None:
    """Wait until the walk has rewritten every row up to `player` (it waits at the held row)."""
    for _ in range(600):
        if rescore_after(database_url, mode) == player:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the re-score never reached {player}: {rescore_after(database_url, mode)}")


async def stored(api: AsyncClient, mode: str) -> dict[str, tuple[float, float, float]]:
    """Each player's (mu, sigma, conservative) as the leaderboard shows them."""
    page = await api.get_leaderboard(mode, limit=100)
    return {e.player_id: (e.rating.mu, e.rating.sigma, e.rating.conservative) for e in page.entries}


async def assert_ranks_exact(api: AsyncClient, mode: str) -> None:
    """The board is in stored order, and each player's rank and the total agree with it."""
    page = await api.get_leaderboard(mode, limit=100)
    order = sorted(page.entries, key=lambda e: (-e.rating.conservative, e.player_id))
    assert [e.player_id for e in page.entries] == [e.player_id for e in order]
    for rank, e in enumerate(page.entries, start=1):
        standing = await api.get_leaderboard_standing(mode, e.player_id)
        assert (standing.rank, standing.total) == (rank, len(page.entries))


async def test_a_new_k_commits_at_once_and_the_job_rescores_in_batches(
    app: FastAPI, api: AsyncClient, mode: str, database_url: str
) -> None:
    await api.put_mode(mode)
    for body in random_matches(mode, random.Random(41), PLAYERS, 90):
        await api.post_match(body)
    assert not (await api.get_leaderboard(mode)).rescoring
    with held_row(database_url, mode, PLAYERS[HELD]):
        # The change commits while a row of the mode is locked: the PUT rewrites no rating.
        changed = await api.put_mode(mode, conservative_k=1.0)
        assert changed.retier_job is not None
        assert (await api.get_leaderboard(mode)).rescoring
        task = run_now(app, database_url, changed.retier_job)
        await walked_to(database_url, mode, PLAYERS[FIRST_HELD - 1])
        page = await api.get_leaderboard(mode, limit=100)
        assert page.rescoring
        assert (await api.get_leaderboard_standing(mode, PLAYERS[0])).rescoring
        # Rows the walk passed hold the new k's score, the others still the old one.
        for player, (mu, sigma, conservative) in (await stored(api, mode)).items():
            k = 1.0 if player < PLAYERS[FIRST_HELD] else 3.0
            assert conservative == pytest.approx(mu - k * sigma, abs=1e-9), player
        await assert_ranks_exact(api, mode)
        # A post to the mode meanwhile (players on both sides of the walk) goes through, scored
        # by the new k.
        answer = await api.post_match(duel(mode, "during", [PLAYERS[2]], [PLAYERS[25]], (0, 1)))
        for entry in answer.players:
            assert entry.after.conservative == pytest.approx(entry.after.mu - entry.after.sigma, abs=1e-9)
        await assert_ranks_exact(api, mode)
    job = await finished(api, changed.retier_job)
    if task is not None:
        await task
    assert job.status == "done" and job.result["superseded"] is False, job
    assert job.result["rescored"] == len(PLAYERS)
    assert rescore_after(database_url, mode) is None
    page = await api.get_leaderboard(mode, limit=100)
    assert not page.rescoring
    assert not (await api.get_leaderboard_standing(mode, PLAYERS[0])).rescoring
    for player, (mu, sigma, conservative) in (await stored(api, mode)).items():
        assert conservative == pytest.approx(mu - sigma, abs=1e-9), player
    await assert_ranks_exact(api, mode)


async def test_a_new_drift_is_rescored_by_the_job(
    app: FastAPI, api: AsyncClient, mode: str, database_url: str
) -> None:
    await api.put_mode(mode)
    for body in random_matches(mode, random.Random(42), PLAYERS, 60):
        await api.post_match(body)
    before = await stored(api, mode)
    changed = await api.put_mode(mode, drift_per_day=0.5)
    # The tier settings did not change; the scores did.
    assert changed.retier_job is not None
    job = await finished(api, changed.retier_job)
    assert job.status == "done" and job.result["rescored"] == len(PLAYERS), job
    assert job.result["players"] == 0
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            """SELECT r.player_id, r.mu - 3 * sqrt(r.sigma * r.sigma + 0.25 *
                      extract(epoch FROM m.drift_as_of - r.last_played_at) / 86400.0)
               FROM ratings r JOIN modes m ON m.name = r.mode WHERE r.mode = %s""",
            (mode,),
        ).fetchall()
    after = await stored(api, mode)
    for player, drifted in rows:
        assert after[player][2] == pytest.approx(drifted, abs=1e-9), player
        # The drift reached back to each player's last match: no score is as it was.
        assert after[player][2] < before[player][2], player
    assert not (await api.get_leaderboard(mode)).rescoring
    await assert_ranks_exact(api, mode)


async def test_a_newer_job_finishes_the_rescore_of_the_one_it_supersedes(
    app: FastAPI, api: AsyncClient, mode: str, database_url: str
) -> None:
    await api.put_mode(mode)
    for body in random_matches(mode, random.Random(43), PLAYERS, 60):
        await api.post_match(body)
    older = await api.put_mode(mode, conservative_k=2.0)
    # The older job, claimed as a runner claims it; its first two batches walked here, as it
    # would walk them.
    with psycopg.connect(database_url, autocommit=True) as conn:
        claimed = conn.execute(_CLAIM, (older.retier_job,)).fetchone()
    assert claimed is not None
    sessions = app.state.resources.sessions
    assert [await rescore.step(sessions, mode, BATCH) for _ in range(2)] == [BATCH, BATCH]
    # A change of the tiers alone: no re-score of its own, but the older job's walk is left.
    newer = await api.put_mode(mode, tiers=[{"name": "low", "min": -100.0}, {"name": "high", "min": 10.0}])
    task = run_now(app, database_url, newer.retier_job)
    job = await finished(api, newer.retier_job)
    if task is not None:
        await task
    assert job.status == "done" and job.result["superseded"] is False, job
    assert job.result["rescored"] == len(PLAYERS) - 2 * BATCH
    assert job.result["players"] == len(PLAYERS)
    assert rescore_after(database_url, mode) is None
    for player, (mu, sigma, conservative) in (await stored(api, mode)).items():
        assert conservative == pytest.approx(mu - 2 * sigma, abs=1e-9), player
    await assert_ranks_exact(api, mode)
    # The older job, run now, finds itself superseded before its first batch.
    assert older.retier_job is not None
    await jobs.run(sessions, older.retier_job, *claimed)
    superseded = await finished(api, older.retier_job)
    assert superseded.result["superseded"] is True and superseded.result["rescored"] == 0, superseded


async def test_a_failed_job_is_retried_and_the_retry_finishes_its_walk(
    app: FastAPI,
    api: AsyncClient,
    client: httpx.AsyncClient,
    admin_headers: dict[str, str],
    mode: str,
    database_url: str,
) -> None:
    await api.put_mode(mode)
    for body in random_matches(mode, random.Random(44), PLAYERS, 60):
        await api.post_match(body)
    fault = f"fail_{mode.replace('-', '_')}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("SET lock_timeout = '10s'")
        # A fault at the held row's batch: the batches before it commit, the job fails there.
        conn.execute(f"""
            CREATE FUNCTION {fault}() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'injected fault'; END $$;
            CREATE TRIGGER {fault} BEFORE UPDATE OF conservative ON ratings FOR EACH ROW
            WHEN (OLD.mode = '{mode}' AND OLD.player_id = '{PLAYERS[HELD]}') EXECUTE FUNCTION {fault}();
        """)
    try:
        changed = await api.put_mode(mode, conservative_k=1.5)
        task = run_now(app, database_url, changed.retier_job)
        failed = await finished(api, changed.retier_job)
        if task is not None:
            await task
    finally:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute("SET lock_timeout = '10s'")
            conn.execute(f"DROP TRIGGER {fault} ON ratings; DROP FUNCTION {fault}()")
    assert failed.status == "failed" and "injected fault" in failed.error, failed
    assert rescore_after(database_url, mode) == PLAYERS[FIRST_HELD - 1]
    assert (await api.get_leaderboard(mode)).rescoring

    response = await client.post(f"/v1/jobs/{changed.retier_job}/retry", headers=admin_headers)
    assert response.status_code == 202, response.text
    retried = response.json()["job_id"]
    assert retried != changed.retier_job
    assert response.headers["location"] == f"/v1/jobs/{retried}"
    task = run_now(app, database_url, retried)
    job = await finished(api, retried)
    if task is not None:
        await task
    assert (job.kind, job.params) == ("retier", failed.params)
    assert job.status == "done" and job.result["rescored"] == len(PLAYERS) - FIRST_HELD, job
    assert not (await api.get_leaderboard(mode)).rescoring
    for player, (mu, sigma, conservative) in (await stored(api, mode)).items():
        assert conservative == pytest.approx(mu - 1.5 * sigma, abs=1e-9), player
    await assert_ranks_exact(api, mode)
    # The failed job stays as it was; only a failed job is retried.
    assert (await api.get_job(changed.retier_job)).status == "failed"
    again = await api.retry_job(changed.retier_job)
    assert again.job_id not in (retried, changed.retier_job)
    # Nothing left to do: it re-scores and re-tiers nobody.
    nothing = await finished(api, again.job_id)
    assert (nothing.result["rescored"], nothing.result["players"]) == (0, 0), nothing
    done = await client.post(f"/v1/jobs/{retried}/retry", headers=admin_headers)
    assert done.status_code == 409 and "only a failed job" in done.json()["detail"]
    assert done.headers["content-type"].startswith("application/problem+json")
    assert (await client.post("/v1/jobs/nope/retry", headers=admin_headers)).status_code == 404
    assert (await client.post(f"/v1/jobs/{retried}/retry")).status_code == 401
