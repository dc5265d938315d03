"""History work moves its progress from its start and at every step (app/progress.py): replay,
smooth and season switches, as functions and as jobs (the job's row, as GET /v1/jobs/{id}
reads it). Ticks are counted, never timed."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import random
import secrets
import uuid
from pathlib import Path

import psycopg
import pytest
from fastapi import FastAPI

from app.imports.service import import_file
from app.jobs import service
from app.jobs.smooth import Way
from app.progress import Progress
from app.seasons import service as seasons
from tests import ddl


async def history(app: FastAPI, tmp_path: Path, mode: str, players: int = 12, count: int = 300) -> None:
    """`count` duels among `players`, imported (not yet rated)."""
    rng = random.Random(players * count)
    names = [f"{mode}-p{i}" for i in range(players)]
    start = dt.date(2020, 1, 1)
    rows = ["played_at,winner,loser"]
    for n in range(count):
        winner, loser = rng.sample(names, 2)
        rows.append(f"{start + dt.timedelta(days=n // 4)},{winner},{loser}")
    path = tmp_path / f"{mode}.csv"
    path.write_text("\n".join(rows) + "\n")
    await import_file(app.state.resources.sessions, path, mode, replay=False)


def inside(traced: list[float], lo: float, hi: float) -> list[float]:
    return [value for value in traced if lo < value < hi]


async def test_a_replay_moves_through_its_read_its_rating_and_every_write_step(
    app: FastAPI, tmp_path: Path, mode: str
) -> None:
    await history(app, tmp_path, mode)
    traced: list[float] = []
    await service.run_replay(app.state.resources.sessions, mode, Progress(trace=traced.append))
    assert traced == sorted(traced) and traced[-1] == 1.0
    assert inside(traced, 0.0, service.REPLAY_READ + 1e-9), "the read ends as a step"
    # Rated level by level (300 duels among 12 players: dozens of levels).
    assert len(inside(traced, service.REPLAY_READ, service.REPLAY_RATED)) >= 10
    # Each write step ends with a move of its own.
    assert len(inside(traced, service.REPLAY_RATED, 1.0)) >= len(service.WRITE_S) - 1


async def test_a_smooth_moves_with_its_sweeps(app: FastAPI, tmp_path: Path, mode: str) -> None:
    await history(app, tmp_path, mode)
    traced: list[float] = []
    options = {"iterations": 50, "epsilon": 1e-6}
    result = await service.run_smooth(
        app.state.resources.sessions, mode, str(uuid.uuid4()), options, Progress(trace=traced.append)
    )
    assert traced == sorted(traced) and traced[-1] == 1.0
    sweeps = inside(traced, service.SMOOTH_READ, service.SMOOTH_SWEPT)
    # Building, one move per sweep, the curves.
    assert len(sweeps) >= min(result["iterations"], 5)


def test_the_sweeps_left_are_estimated_from_how_fast_the_distance_shrinks() -> None:
    way = Way(1e-6, 1000)
    assert way(1, 1e-2) == pytest.approx(1 / 1000)  # no rate yet: the cap's pace
    # Tenfold per sweep: from 1e-3, three more reach 1e-6.
    assert way(2, 1e-3) == pytest.approx(2 / (2 + 3))
    assert way(3, 1e-4) == pytest.approx(3 / (3 + 2))
    # Grown over the window: no estimate, but the share still moves.
    before = way.share
    assert before < way(4, 1.0) < 3 / (3 + 2) + 0.01
    assert way(5, 1e-7) == 1.0
    slow = Way(1e-6, 10)
    shares = [slow(n, 1.0 - n / 100) for n in range(1, 11)]
    assert all(a < b for a, b in itertools.pairwise(shares)) and shares[-1] == pytest.approx(1.0)


async def test_a_season_switch_moves_with_each_chunk_it_archives(
    app: FastAPI, tmp_path: Path, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    await history(app, tmp_path, mode)
    await service.run_replay(app.state.resources.sessions, mode)
    monkeypatch.setattr(seasons, "CHUNK", 2)  # 12 rated players: 6 chunks
    traced: list[float] = []
    result = await seasons.run_switch(
        app.state.resources.sessions, mode, {"name": "s1", "reset": "soft"}, Progress(trace=traced.append)
    )
    assert result["players"] == 12
    assert traced == sorted(traced) and traced[-1] == 1.0
    assert len(inside(traced, 0.05, 0.95)) >= 6


async def test_a_job_writes_its_progress_to_its_row_from_the_start_and_as_it_moves(
    app: FastAPI, tmp_path: Path, mode: str, database_url: str
) -> None:
    """Every write of the job's progress, caught by a trigger: the first at the job's start
    (0), then each checkpoint it moved past, then done (1)."""
    await history(app, tmp_path, mode)
    job_id = str(uuid.uuid4())
    log = f"progress_log_{secrets.token_hex(4)}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        # Running already, so that no other process of the suite claims it.
        conn.execute(
            "INSERT INTO jobs (id, mode, kind, status, params, started_at, heartbeat_at)"
            " VALUES (%s, %s, 'replay', 'running', %s, now(), now())",
            (job_id, mode, json.dumps({})),
        )
        conn.execute(f"CREATE TABLE {log} (n serial, progress float8)")
        conn.execute(
            f"CREATE FUNCTION {log}() RETURNS trigger LANGUAGE plpgsql AS"
            f" $$BEGIN INSERT INTO {log} (progress) VALUES (NEW.progress); RETURN NEW; END$$"
        )
        conn.execute(
            f"CREATE TRIGGER {log} AFTER UPDATE OF progress ON jobs FOR EACH ROW"
            f" WHEN (NEW.id = '{job_id}') EXECUTE FUNCTION {log}()"
        )
    try:
        await service.run(app.state.resources.sessions, job_id, mode, "replay", {})
        with psycopg.connect(database_url) as conn:
            written = [row[0] for row in conn.execute(f"SELECT progress FROM {log} ORDER BY n")]
            status = conn.execute("SELECT status FROM jobs WHERE id = %s", (job_id,)).fetchone()
    finally:
        ddl.run(database_url, f"DROP TRIGGER {log} ON jobs", f"DROP FUNCTION {log}()", f"DROP TABLE {log}")
    assert status == ("done",)
    assert written[0] == 0.0 and written[-1] == 1.0
    assert written == sorted(written)
    # The read, the rating and the write steps' checkpoints, at least.
    assert len(set(written)) >= 5, written
