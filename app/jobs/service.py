"""Use cases for history jobs: queue one, read one, and run the next queued one."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
import uuid
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app import metrics
from app.db.bulk import unbounded
from app.db.commit_hooks import after_commit
from app.db.locks import lock_mode
from app.errors import Conflict, NotFound
from app.ids import EVERY_MODE, ModeScope, is_pseudonym
from app.jobs import replay, repository, smooth
from app.jobs.schemas import JobAccepted, JobIn, JobOut
from app.leaderboards import retier
from app.modes import service as modes
from app.modes.service import ModeChange
from app.progress import Progress
from app.seasons import service as seasons
from app.seasons.schemas import SeasonIn

log = logging.getLogger(__name__)

# How often a running job says it is alive (repository.STALE_AFTER_S is when it is presumed dead).
HEARTBEAT_S = 5.0
# How often a running job's progress is written to its row, when it has moved.
JOB_PROGRESS_EVERY_S = 0.5


async def submit(session: AsyncSession, mode: str, job: JobIn) -> JobAccepted:
    await modes.get_mode(session, mode)  # 404 for an unknown mode
    job_id = str(uuid.uuid4())
    await repository.create(session, job_id, mode, job.kind, job.model_dump(exclude={"kind"}))
    return JobAccepted(job_id=job_id)


async def queue_retier(session: AsyncSession, mode: str, change: ModeChange) -> str | None:
    """Queue the job that brings the mode's stored standings to a change of its settings
    (app.leaderboards.retier): the scores rewritten when `change.rescore`, the tiers placed
    again when its tier settings moved on; None, and no job, when neither changed."""
    if change.tier_version is None and not change.rescore:
        return None
    version = change.tier_version if change.tier_version is not None else change.mode.tier_version
    job_id = str(uuid.uuid4())
    # The batch is the job's own, fixed when it is queued: whichever instance runs the job, or
    # a retry of it, walks the same batches.
    params = {"tier_version": version, "rescore": change.rescore, "batch": retier.BATCH}
    await repository.create(session, job_id, mode, retier.JOB_KIND, params)
    return job_id


async def submit_season(session: AsyncSession, mode: str, body: SeasonIn) -> JobAccepted:
    """Queue the switch to season `body.name` (app.seasons runs it); 409 when the mode has
    (or is starting) a season of that name."""
    found = await modes.get_mode(session, mode)  # 404 for an unknown mode
    if body.name in await seasons.taken_names(session, mode) or await repository.season_pending(
        session, mode, body.name
    ):
        raise Conflict(f"mode {found.name!r} already has (or is starting) a season {body.name!r}")
    job_id = str(uuid.uuid4())
    await repository.create(session, job_id, mode, seasons.JOB_KIND, body.model_dump())
    return JobAccepted(job_id=job_id)


async def retry(session: AsyncSession, job_id: str, within: ModeScope = EVERY_MODE) -> JobAccepted:
    """Queue a failed job again: a new job of its mode, kind and params. Each kind may run
    again after a failure: a retier job re-tiers and re-scores what the failed one left (if
    the settings changed since, it stops superseded, the newer job doing the work); a season
    job whose switch committed finds its season started and finishes the archive. 409 for a
    job that has not failed."""
    row = await repository.get(session, job_id)
    if row is None or not within.allows(row.mode):
        raise NotFound(f"no job {job_id!r}")
    if row.status != "failed":
        raise Conflict(f"job {job_id!r} is {row.status}: only a failed job is retried")
    retried = str(uuid.uuid4())
    await repository.create(session, retried, row.mode, row.kind, dict(row.params))
    return JobAccepted(job_id=retried)


async def get(session: AsyncSession, job_id: str, within: ModeScope = EVERY_MODE) -> JobOut:
    """The job; a job of a mode outside `within` is not found, as one that never was."""
    row = await repository.get(session, job_id)
    if row is None or not within.allows(row.mode):
        raise NotFound(f"no job {job_id!r}")
    return JobOut.model_validate(dict(row._mapping))


# A replay rebuilds matches and match_players into fresh tables when its mode has at least
# FRESH_ROWS matches and holds at least FRESH_SHARE of the table; otherwise it updates its rows
# in place. A rebuild copies every mode's rows and keeps every mode's posts waiting while it
# runs, so it pays only where the mode is most of the table; a small replay is quick in place.
FRESH_ROWS = 20_000
FRESH_SHARE = 0.5


# How many times a replay starts again when players it read were erased before it wrote.
REPLAY_ATTEMPTS = 3


class ErasedDuringReplay(Exception):
    """Players the replay read were erased before it took the mode's lock to write: what it
    rated names them, so it starts again from the history as erased."""


# Seconds per match of the replay's steps that are one statement each (or a few), for their
# share of the bar while they run (app/progress.py), measured by bench/progress.py on ATP singles
# (docs/benchmarks.md, "Long work's progress"). Only the bar's pace depends on them.
READ_S = 8e-6
WRITE_S = {
    "stage": 3e-6,  # the participants staged, and the applied order drawn
    "lock": 1e-6,  # the mode's lock, and the matches recorded meanwhile
    "ratings": 1e-6,
    "match_players": 12e-6,
    "responses": 8e-6,  # built in a thread meanwhile, then staged
    "matches": 12e-6,
    "swap": 8e-6,  # the fresh tables swapped in, the ratings written, the leaderboard recounted
    "commit": 2e-6,
}
# Where each phase of a replay ends, as a share of its progress.
REPLAY_READ, REPLAY_RATED = 0.1, 0.3


async def run_replay(
    sessions: async_sessionmaker[AsyncSession],
    mode: str,
    progress: Progress | None = None,
    fresh: bool | None = None,
) -> dict[str, Any]:
    """Re-rate the mode's history (app/jobs/replay.py) and swap the result in, moving
    `progress` as it goes (reading, rating, writing). `fresh` forces the write path (fresh
    tables or in place); by default the mode's share chooses it."""
    progress = progress or Progress()
    for _ in range(REPLAY_ATTEMPTS - 1):
        with contextlib.suppress(ErasedDuringReplay), progress.part(1.0) as attempt:
            return await _replay(sessions, mode, attempt, fresh)
    try:
        with progress.part(1.0) as attempt:
            return await _replay(sessions, mode, attempt, fresh)
    except ErasedDuringReplay:
        raise ErasedDuringReplay(
            f"players were erased while the replay ran, {REPLAY_ATTEMPTS} times in a row; submit it again"
        ) from None


async def _replay(
    sessions: async_sessionmaker[AsyncSession], mode: str, progress: Progress, fresh: bool | None
) -> dict[str, Any]:
    started = time.perf_counter()
    with progress.part(REPLAY_READ, "reading", expect=READ_S * await _size(sessions, mode)) as reading:
        with reading.part(0.2) as completing:
            # A season switch still archiving: finish it first.
            await seasons.complete(sessions, mode, completing)
        async with sessions() as session, session.begin():
            await unbounded(session)
            rules = modes.rules_of(await modes.get_mode(session, mode))
            # Seasons: only the current season is re-rated, from its reset ratings.
            scope = await seasons.replay_scope(session, mode)
            history = await repository.history(session, mode, exclude=scope.past)
            seeds = {**await repository.seeds(session, mode), **scope.starts}
            players = await repository.rated_players(session, mode)
    await progress.reached()
    read = time.perf_counter()
    env, k = rules.env, rules.conservative_k
    ranking = replay.Ranking(k, rules.drift_per_day, rules.placement_matches, rules.tiers)
    state = replay.start(env, players, seeds)
    with progress.part(REPLAY_RATED, "rating") as rating:
        rated = await asyncio.to_thread(replay.rate, env, history, state, seeds, rating.update, ranking)
    await progress.reached()
    rated_at = time.perf_counter()
    # The stored responses are built (Python) while PostgreSQL writes the participants.
    writing = asyncio.ensure_future(asyncio.to_thread(replay.responses, mode, k, history, rated, ranking))
    count = history.matches
    ends = _write_ends()

    def step(name: str, label: str | None = None) -> contextlib.AbstractContextManager[Progress]:
        """The write step `name` (WRITE_S), moving with its time."""
        return written.part(ends[name], label, WRITE_S[name] * count)

    try:
        with progress.part(1.0, "writing", expect=WRITE_S["commit"] * count) as written:
            async with sessions() as session, session.begin():
                await unbounded(session)
                with step("stage"):
                    await repository.stage_participants(session, history, rated)
                    # In the replay's order; the matches recorded meanwhile get later numbers below.
                    numbers = await repository.applied_numbers(session, int(rated.rated.sum()))
                with step("lock"):
                    if fresh is None:
                        fresh = (
                            count >= FRESH_ROWS and await repository.mode_share(session, count) >= FRESH_SHARE
                        )
                    if fresh:
                        await repository.lock_tables(session)
                    # From here on, no rating of the mode changes until the swap commits.
                    await lock_mode(session, mode)
                    done = set(history.pks.tolist()) | scope.past
                    late_pks = [pk for pk in await repository.live_match_pks(session, mode) if pk not in done]
                    late = 0
                    if late_pks:
                        # Recorded while the replay ran: rated on top, in the order they were applied.
                        tail = await repository.history(
                            session, mode, only=late_pks, order=repository.APPLIED_ORDER
                        )
                        tail_rated = replay.rate(env, tail, state, seeds, ranking=ranking)
                        await repository.stage_participants(session, tail, tail_rated)
                        tail_responses = replay.responses(mode, k, tail, tail_rated, ranking)
                        tail_numbers = await repository.applied_numbers(session, len(tail_responses))
                        await repository.stage_responses(session, tail_responses, tail_numbers)
                        rated.skipped += tail_rated.skipped
                        late = tail.matches
                with step("ratings"):
                    await repository.stage_players(session, state.names)
                    # An erasure holds every mode's lock: one that is not done yet waits for this
                    # commit (and renames what it wrote), one done since the read shows here.
                    if await repository.erased_since_read(session):
                        raise ErasedDuringReplay
                    ratings = replay.new_ratings(state)
                    await repository.stage_ratings(session, ratings)
                await progress.reached()
                with step("match_players"):
                    participants = await repository.rewrite(session, "match_players", fresh, mode)
                with step("responses"):
                    await repository.stage_responses(session, await writing, numbers)
                with step("matches"):
                    matches = await repository.rewrite(session, "matches", fresh, mode)
                await progress.reached()
                with step("swap", "swapping"):
                    fresh_tables = [t for t in (matches, participants) if t is not None]
                    await repository.finish(session, mode, fresh_tables, rules.tier_version)
                after_commit(
                    session, lambda: metrics.RATINGS_WRITTEN.labels(mode, "replay").inc(len(ratings))
                )
    finally:
        if not writing.done():
            writing.cancel()
    finished = time.perf_counter()
    return {
        "matches": count + late,
        "recorded_during_replay": late,
        "players": len(state.names),
        "skipped": rated.skipped[:100],
        "fresh_tables": fresh,
        "seconds": {
            "read": round(read - started, 3),
            "rate": round(rated_at - read, 3),
            "write": round(finished - rated_at, 3),
        },
    }


def _write_ends() -> dict[str, float]:
    """Where each write step ends, as a share of the write phase: in WRITE_S's order, each
    by its expected time (the commit, last, takes what is left)."""
    total, end, out = sum(WRITE_S.values()), 0.0, {}
    for name, seconds in WRITE_S.items():
        end += seconds / total
        out[name] = end
    return out


async def _size(sessions: async_sessionmaker[AsyncSession], mode: str) -> int:
    async with sessions() as session, session.begin():
        return await repository.size(session, mode)


def _given(options: dict[str, Any], name: str, default: float) -> Any:
    value = options.get(name)
    return default if value is None else value


# Seconds per match of a smooth's read and of writing its curves, for the bar's pace.
SMOOTH_READ_S = 10e-6
SMOOTH_WRITE_S = 4e-6
# Where each phase of a smooth ends, as a share of its progress.
SMOOTH_READ, SMOOTH_SWEPT = 0.1, 0.9


async def run_smooth(
    sessions: async_sessionmaker[AsyncSession],
    mode: str,
    job_id: str,
    options: dict[str, Any],
    progress: Progress | None = None,
) -> dict[str, Any]:
    progress = progress or Progress()
    started = time.perf_counter()
    size = await _size(sessions, mode)
    with progress.part(SMOOTH_READ, "reading", expect=SMOOTH_READ_S * size):
        async with sessions() as session, session.begin():
            await unbounded(session)
            row = await modes.get_mode(session, mode)
            matches = await repository.matches(session, mode)
            seeds = await repository.seeds(session, mode)
    await progress.reached()
    params = smooth.Params(
        mu=row.mu,
        sigma=options.get("sigma") or row.sigma,
        beta=row.beta,
        # The mode's drift per day when it has one (the online ratings' gamma), else tau.
        gamma=(row.drift_per_day or row.tau) if options.get("gamma") is None else options["gamma"],
        p_draw=row.draw_probability,
        iterations=int(_given(options, "iterations", smooth.ITERATIONS)),
        epsilon=float(_given(options, "epsilon", smooth.EPSILON)),
    )
    read = time.perf_counter()
    # The smooth takes the only reference to the matches: it drops them once its history is
    # built, so they are not held through the sweeps (at 5M games, about the history's size).
    count, pending = len(matches), [matches]
    del matches
    with progress.part(SMOOTH_SWEPT) as smoothing:
        result = await asyncio.to_thread(lambda: smooth.smooth(pending.pop(), seeds, params, smoothing))
    await progress.reached()
    fitted = time.perf_counter()
    with progress.part(1.0, "writing", expect=SMOOTH_WRITE_S * count):
        async with sessions() as session, session.begin():
            await unbounded(session)
            # Erased players' pseudonyms are in the model (the others' curves are as before) but
            # keep no curve (app.erasure).
            kept = [curve for curve in result.curves if not is_pseudonym(curve[0])]
            await repository.replace_curves(session, mode, job_id, kept)
    return {
        "matches": count,
        "players": len(result.curves),
        "iterations": result.iterations,
        "last_step": result.last_step,
        # The estimated distance of the curves to the fixed point, and whether the
        # iteration cap (not the tolerance asked for) ended the smooth.
        "tolerance": result.tolerance if math.isfinite(result.tolerance) else None,
        "epsilon": params.epsilon,
        "capped": result.capped,
        "log_evidence": result.log_evidence,
        "parameters": {
            "mu": params.mu,
            "sigma": params.sigma,
            "beta": params.beta,
            "gamma": params.gamma,
            "p_draw": params.p_draw,
        },
        "seconds": {
            "read": round(read - started, 3),
            "smooth": round(fitted - read, 3),
            "write": round(time.perf_counter() - fitted, 3),
        },
    }


async def run(
    sessions: async_sessionmaker[AsyncSession], job_id: str, mode: str, kind: str, params: dict[str, Any]
) -> None:
    """Run one claimed job to done or failed; progress is committed as it goes."""

    async def show(value: float) -> None:
        # Best effort, as the heartbeat: a progress write the database refused once (a blip,
        # a restart) must neither fail good work nor stop the watcher; the next one catches up.
        try:
            async with sessions() as session, session.begin():
                await repository.progress(session, job_id, value)
        except Exception as exc:
            log.warning("job %s: its progress %.3f was not written: %s", job_id, value, exc)

    async def beat() -> None:
        # Separate from progress: long database phases report none, but the job is alive.
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            with contextlib.suppress(Exception):  # a missed beat is fine; a minute of them is not
                async with sessions() as session, session.begin():
                    await repository.heartbeat(session, job_id)

    heart = asyncio.create_task(beat())
    try:
        # Job progress moves as a command's bar does: the watcher writes it to the job's row
        # whenever it moved, every JOB_PROGRESS_EVERY_S (app/progress.py).
        async with Progress(show).watched(JOB_PROGRESS_EVERY_S) as progress:
            await _run_kind(sessions, job_id, mode, kind, params, progress)
    finally:
        heart.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await heart


async def _run_kind(
    sessions: async_sessionmaker[AsyncSession],
    job_id: str,
    mode: str,
    kind: str,
    params: dict[str, Any],
    progress: Progress,
) -> None:
    try:
        if kind == "replay":
            result = await run_replay(sessions, mode, progress)
        elif kind == seasons.JOB_KIND:
            result = await seasons.run_switch(sessions, mode, params, progress)
        elif kind == retier.JOB_KIND:
            result = await retier.run_retier(sessions, mode, params, progress)
        else:
            result = await run_smooth(sessions, mode, job_id, params, progress)
    except asyncio.CancelledError:
        # The service is shutting down: hand the job back, and another process (or this one
        # after its restart) runs it again from the start.
        async with sessions() as session, session.begin():
            await repository.requeue(session, job_id)
        raise
    except Exception as exc:
        async with sessions() as session, session.begin():
            await repository.failed(session, job_id, f"{type(exc).__name__}: {exc}")
        return
    async with sessions() as session, session.begin():
        await repository.done(session, job_id, result)


async def run_next(sessions: async_sessionmaker[AsyncSession]) -> bool:
    """Claim and run the oldest queued job; False when there was none."""
    async with sessions() as session, session.begin():
        claimed = await repository.claim(session)
    if claimed is None:
        return False
    await run(sessions, claimed.id, claimed.mode, claimed.kind, claimed.params)
    return True
