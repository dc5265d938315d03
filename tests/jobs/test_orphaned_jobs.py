"""A job whose process died (no heartbeat for a minute) is run again; after three deaths it fails."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import psycopg

from app.jobs.repository import CLAIM, MAX_ATTEMPTS, STALE_AFTER_S

Headers = dict[str, str]


def orphan(database_url: str, mode: str, attempts: int, silent_for_s: int) -> str:
    """A replay job left `running` by a process that stopped beating `silent_for_s` ago."""
    job_id = str(uuid.uuid4())
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            """INSERT INTO jobs (id, mode, kind, status, progress, started_at, heartbeat_at, attempts)
               VALUES (%s, %s, 'replay', 'running', 0.4, now() - make_interval(secs => %s),
                       now() - make_interval(secs => %s), %s)""",
            (job_id, mode, silent_for_s, silent_for_s, attempts),
        )
    return job_id


async def wait_finished(client: httpx.AsyncClient, headers: Headers, job_id: str) -> dict[str, object]:
    for _ in range(300):
        job = (await client.get(f"/v1/jobs/{job_id}", headers=headers)).json()
        if job["status"] in ("done", "failed"):
            return job  # type: ignore[no-any-return]
        await asyncio.sleep(0.1)
    raise AssertionError(f"job {job_id} never finished: {job}")


async def test_a_job_whose_process_died_runs_again_and_a_live_one_is_left_alone(
    client: httpx.AsyncClient, admin_headers: Headers, mode: str, database_url: str
) -> None:
    body = {
        "match_id": f"{mode}-o",
        "mode": mode,
        "teams": [{"players": [{"id": "o1"}], "rank": 0}, {"players": [{"id": "o2"}], "rank": 1}],
    }
    assert (await client.post("/v1/matches", json=body, headers=admin_headers)).status_code == 201
    dead = orphan(database_url, mode, attempts=1, silent_for_s=STALE_AFTER_S + 5)
    alive = orphan(database_url, mode, attempts=1, silent_for_s=2)

    job = await wait_finished(client, admin_headers, dead)
    assert job["status"] == "done" and job["result"]["matches"] == 1  # type: ignore[index]
    await asyncio.sleep(1.0)  # the runner polls every 0.5 s: it had its chance at the live one
    still = (await client.get(f"/v1/jobs/{alive}", headers=admin_headers)).json()
    assert still["status"] == "running" and still["progress"] == 0.4
    with psycopg.connect(database_url, autocommit=True) as conn:
        attempts = conn.execute("SELECT attempts FROM jobs WHERE id = %s", (dead,)).fetchone()
        conn.execute("UPDATE jobs SET status = 'failed' WHERE id = %s", (alive,))
    assert attempts == (2,)


async def test_a_job_that_died_three_times_fails_with_the_reason(
    client: httpx.AsyncClient, admin_headers: Headers, mode: str, database_url: str
) -> None:
    job_id = orphan(database_url, mode, attempts=MAX_ATTEMPTS, silent_for_s=STALE_AFTER_S + 5)
    job = await wait_finished(client, admin_headers, job_id)
    assert job["status"] == "failed"
    assert f"stopped {MAX_ATTEMPTS} times" in str(job["error"])


async def test_the_claim_alone_leaves_a_job_that_died_three_times(mode: str, database_url: str) -> None:
    """The runner gives up on such jobs, then claims, in two statements with snapshots of their
    own: a job found dead between the two must not run a fourth time. The claim by itself, in
    a transaction rolled back: the oldest job of all, dead three times, is not taken."""
    job_id = str(uuid.uuid4())
    stale = STALE_AFTER_S + 5
    with psycopg.connect(database_url) as conn, conn.transaction(force_rollback=True):
        conn.execute(
            """INSERT INTO jobs (id, mode, kind, status, progress, created_at, started_at,
                                 heartbeat_at, attempts)
               VALUES (%s, %s, 'replay', 'running', 0.4, 'epoch', now() - make_interval(secs => %s),
                       now() - make_interval(secs => %s), %s)""",
            (job_id, mode, stale, stale, MAX_ATTEMPTS),
        )
        taken = conn.execute(str(CLAIM.text)).fetchone()
        assert taken is None or taken[0] != job_id
