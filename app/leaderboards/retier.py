"""Re-tier (and re-score) a mode after a change of its settings: the job a PUT of the mode queues.

A change of conservative_k or drift_per_day makes the job re-score the mode's leaderboard
first (`params["rescore"]`): its stored `conservative` rewritten in batches by
app.leaderboards.rescore, reads saying `rescoring` until it is done. Every job walks what is
left of a re-score, whatever its params: a newer job that supersedes one mid-walk finishes it.

A PUT that changes what places the tiers (tiers, demotion_margin, display_scale,
display_offset, conservative_k, the placement matches) moves the mode's tier_version on and
commits at once (migration 0016). This job then places every player still behind it afresh
where their rating lies (app.rating.tiers.Tiers.base), in batches of ids, each a transaction
of its own that locks only its rows, in the order match posts lock theirs: a post waits for
one batch at most, never for the mode.

While it runs, a match that reaches a player still behind places them by the new settings
first and then steps them by the match (app.matches.repository), as if the job had reached
them before it; the job leaves a row at the current version alone, so it never writes over
a newer match. The tier counts keep each version apart: GET /v1/modes/{mode}/tiers counts
the players placed by the current settings, exact after every commit, and `retiering` the
rest. A second change while a job runs makes a newer job; the older one stops at its next
batch (`superseded`), since the newer one places every row by the settings as they are.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.db.bulk import unbounded
from app.db.locks import SHARED_LOCK_SQL
from app.leaderboards import repository, rescore
from app.progress import Progress

JOB_KIND = "retier"

# Players re-tiered per transaction: a post waits for the one batch holding its player at most.
BATCH = 1_000
# Where each pass over the rows still behind ends, as a share of the re-tier's progress: the
# first does nearly all the work; a row written behind by a writer that read the settings
# before the change (a season reset's statement that began before it) is found by the next.
PASS_ENDS = (0.95, 0.98, 1.0)
# Where the re-score ends, as a share of the job's progress: half when the change asked for
# one; otherwise it is what an older job left, if anything.
RESCORED = 0.5
LEFT_RESCORED = 0.05

_SHARED_LOCK = text(f"SELECT {SHARED_LOCK_SQL}")
# A batch lost in a crash is redone by the job's next attempt (its rows are still behind), so
# it need not wait for its commit to reach the disk.
_ASYNC_COMMIT = text("SET LOCAL synchronous_commit = off")


class Superseded(Exception):
    """The mode's tier settings changed again: the newer job re-tiers the mode."""


async def _current(session: AsyncSession, mode: str, version: int) -> None:
    if await repository.tier_version(session, mode) != version:
        raise Superseded


async def _superseded(sessions: async_sessionmaker[AsyncSession], mode: str, version: int) -> bool:
    async with sessions() as session, session.begin():
        return await repository.tier_version(session, mode) != version


async def run_retier(
    sessions: async_sessionmaker[AsyncSession],
    mode: str,
    params: dict[str, Any],
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Re-score the mode's leaderboard when `params["rescore"]`, then re-tier its players behind
    tier version `params["tier_version"]`, `params["batch"]` players a transaction (BATCH for
    a job queued before the parameter), moving `progress` batch by batch."""
    progress = progress or Progress()
    version = int(params["tier_version"])
    batch = int(params.get("batch", BATCH))
    started = time.perf_counter()
    with progress.part(RESCORED if params.get("rescore") else LEFT_RESCORED, "re-scoring") as scoring:
        async with sessions() as session, session.begin():
            await unbounded(session)
            behind = await rescore.behind(session, mode)
        rescored = await rescore.walk(
            sessions,
            mode,
            batch,
            moved=lambda visited: scoring.update(min(1.0, visited / max(behind, 1))),
            stop=lambda: _superseded(sessions, mode, version),
        )
    if await _superseded(sessions, mode, version):
        return _result(version, rescored, 0, 0, started, superseded=True)
    with progress.part(1.0) as retiering:
        retiered, batches, superseded = await _retier(sessions, mode, version, batch, retiering)
    return _result(version, rescored, retiered, batches, started, superseded)


async def _retier(
    sessions: async_sessionmaker[AsyncSession], mode: str, version: int, batch: int, progress: Progress
) -> tuple[int, int, bool]:
    """Re-tier the rows behind `version` in batches: the players re-tiered, the batches, and
    whether a newer change superseded the job."""
    retiered, batches = 0, 0
    try:
        for end in PASS_ENDS:
            with progress.part(end) as passing:
                async with sessions() as session, session.begin():
                    await unbounded(session)
                    await _current(session, mode, version)
                    with passing.part(0.05, "listing"):
                        ranges = await repository.behind_ranges(session, mode, batch)
                if not ranges:
                    break
                with passing.part(1.0, "re-tiering") as going:
                    for done, (first, last) in enumerate(ranges, 1):
                        async with sessions() as session, session.begin():
                            await session.execute(_ASYNC_COMMIT)
                            # Writers of single ratings hold the mode's lock shared, as posts do:
                            # a whole-mode rewrite (a replay's swap) and its recount exclude them,
                            # and a batch may wait for one past the request statement timeout.
                            await unbounded(session)
                            await session.execute(_SHARED_LOCK, {"mode": mode})
                            await _current(session, mode, version)
                            moved = await repository.retier_range(session, mode, first, last)
                        retiered += moved
                        batches += 1
                        going.update(done / len(ranges))
    except Superseded:
        return retiered, batches, True
    return retiered, batches, False


def _result(
    version: int, rescored: int, retiered: int, batches: int, started: float, superseded: bool
) -> dict[str, Any]:
    return {
        "tier_version": version,
        # Ratings whose stored score the job visited (0 without a re-score).
        "rescored": rescored,
        "players": retiered,
        "batches": batches,
        # True when the settings changed again before the job was done: the newer job, queued
        # by that change, re-tiers every player left (and these were placed by the newer ones).
        "superseded": superseded,
        "seconds": round(time.perf_counter() - started, 3),
    }
