"""SQL for jobs: the queue of jobs, and reading and rewriting a mode's history in bulk.

Bulk work talks to psycopg directly (COPY, plain tuples): a replay moves hundreds of
thousands of rows, and ORM rows would cost more than the rating itself.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app import collection
from app.db.bulk import (
    Fresh,
    columns_of,
    copy_in_columns,
    driver,
    fetch_columns,
    fetch_lines,
    fresh_table,
    swap_in,
)
from app.db.conservative import conservative_sql
from app.db.locks import shared_lock
from app.ids import PSEUDONYM_PREFIX
from app.jobs import replay
from app.leaderboards import repository as leaderboards
from app.rating.levels import Matches

# -- the job queue ----------------------------------------------------------------------

_CREATE = text("""
    INSERT INTO jobs (id, mode, kind, params) VALUES (:id, :mode, :kind, CAST(:params AS jsonb))
""")
_GET = text("""
    SELECT id AS job_id, mode, kind, status, progress, params, result, error, created_at, started_at,
           finished_at
    FROM jobs WHERE id = :id
""")
# A running job whose heartbeat is older than this lost its process.
STALE_AFTER_S = 60
MAX_ATTEMPTS = 3
# SKIP LOCKED: several instances take different jobs, never the same one. A queued job, or
# a running one whose process died, is taken; one that died MAX_ATTEMPTS times fails. The
# claim leaves such a job alone too: each statement reads its own snapshot, so a job found dead
# between the two would otherwise run once more.
_GIVE_UP = text(f"""
    UPDATE jobs SET status = 'failed', finished_at = now(),
      error = 'the process running it stopped {MAX_ATTEMPTS} times; submit it again'
    WHERE status = 'running' AND attempts >= {MAX_ATTEMPTS}
      AND heartbeat_at < now() - make_interval(secs => {STALE_AFTER_S})
""")
CLAIM = text(f"""
    UPDATE jobs SET status = 'running', started_at = now(), heartbeat_at = now(),
      attempts = attempts + 1, progress = 0
    WHERE id = (
        SELECT id FROM jobs
        WHERE status = 'queued'
           OR (status = 'running' AND attempts < {MAX_ATTEMPTS}
               AND heartbeat_at < now() - make_interval(secs => {STALE_AFTER_S}))
        ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED
    )
    RETURNING id, mode, kind, params
""")
_REQUEUE = text("UPDATE jobs SET status = 'queued', progress = 0 WHERE id = :id AND status = 'running'")
_HEARTBEAT = text("UPDATE jobs SET heartbeat_at = now() WHERE id = :id AND status = 'running'")
# Only a running job's: a watcher's last write may come after the job is done.
_PROGRESS = text("UPDATE jobs SET progress = :progress WHERE id = :id AND status = 'running'")
_DONE = text("""
    UPDATE jobs SET status = 'done', progress = 1, result = CAST(:result AS jsonb), finished_at = now()
    WHERE id = :id
""")
_FAILED = text("UPDATE jobs SET status = 'failed', error = :error, finished_at = now() WHERE id = :id")


async def create(session: AsyncSession, job_id: str, mode: str, kind: str, params: dict[str, Any]) -> None:
    await session.execute(_CREATE, {"id": job_id, "mode": mode, "kind": kind, "params": json.dumps(params)})


_SEASON_PENDING = text("""
    SELECT 1 FROM jobs WHERE mode = :mode AND kind = 'season' AND status IN ('queued', 'running')
      AND params ->> 'name' = :name
""")


async def season_pending(session: AsyncSession, mode: str, name: str) -> bool:
    """Whether a switch of the mode to season `name` is queued or running."""
    return (await session.execute(_SEASON_PENDING, {"mode": mode, "name": name})).first() is not None


async def get(session: AsyncSession, job_id: str) -> Any:
    return (await session.execute(_GET, {"id": job_id})).first()


async def claim(session: AsyncSession) -> Any:
    await session.execute(_GIVE_UP)
    return (await session.execute(CLAIM)).first()


async def requeue(session: AsyncSession, job_id: str) -> None:
    await session.execute(_REQUEUE, {"id": job_id})


async def heartbeat(session: AsyncSession, job_id: str) -> None:
    await session.execute(_HEARTBEAT, {"id": job_id})


async def progress(session: AsyncSession, job_id: str, value: float) -> None:
    await session.execute(_PROGRESS, {"id": job_id, "progress": value})


async def done(session: AsyncSession, job_id: str, result: dict[str, Any]) -> None:
    await session.execute(_DONE, {"id": job_id, "result": json.dumps(result)})


async def failed(session: AsyncSession, job_id: str, error: str) -> None:
    await session.execute(_FAILED, {"id": job_id, "error": error})


# -- a mode's history -------------------------------------------------------------------


@dataclass(slots=True)
class Played:
    """One non-void match as the replay and the smoother need it."""

    pk: int
    match_id: str
    played_at: dt.datetime
    teams: list[list[str]]
    ranks: list[float]
    weights: list[list[float]]
    coefficients: list[list[float | None]]


_MATCHES = """
    SELECT m.id, m.match_id, m.played_at, mp.team, mp.player_id, mp.rank, mp.weight, mp.coefficient
    FROM matches m JOIN match_players mp ON mp.match_pk = m.id
    WHERE m.mode = %(mode)s AND NOT m.void {only}
    ORDER BY m.played_at, m.id, mp.team, mp.player_id
"""


def _group(rows: Iterable[tuple[Any, ...]]) -> list[Played]:
    out: list[Played] = []
    for pk, match_id, played_at, team, player, rank, weight, coefficient in rows:
        if not out or out[-1].pk != pk:
            out.append(Played(pk, match_id, played_at, [], [], [], []))
        match = out[-1]
        if team == len(match.teams):
            match.teams.append([])
            match.ranks.append(rank)
            match.weights.append([])
            match.coefficients.append([])
        match.teams[team].append(player)
        match.weights[team].append(weight)
        match.coefficients[team].append(coefficient)
    return out


async def matches(session: AsyncSession, mode: str, only: Sequence[int] | None = None) -> list[Played]:
    """The mode's non-void matches in played_at order (then recording order), or just `only`."""
    conn = await driver(session)
    params: dict[str, Any] = {"mode": mode}
    clause = ""
    if only is not None:
        clause, params["only"] = "AND m.id = ANY(%(only)s)", list(only)
    rows: list[tuple[Any, ...]] = []
    # A server-side cursor, read a slice at a time, each a moment of the event loop: a whole
    # history received and converted at once held the loop (and the job's progress) for over
    # the progress goal's gap (docs/benchmarks.md, "Long work's progress").
    async with conn.cursor(name="history_rows") as cursor:
        await cursor.execute(_MATCHES.format(only=clause), params)
        while batch := await cursor.fetchmany(FETCH_ROWS):
            rows += batch
    # Grouped off the event loop, the collector paused: objects without cycles (app/collection.py).
    return await asyncio.to_thread(_grouped, rows)


FETCH_ROWS = 20_000


def _grouped(rows: list[tuple[Any, ...]]) -> list[Played]:
    with collection.paused():
        return _group(rows)


async def size(session: AsyncSession, mode: str) -> int:
    """How many non-void matches the mode has (what a replay or a smooth will read)."""
    conn = await driver(session)
    async with conn.cursor() as cursor:
        await cursor.execute("SELECT count(*) FROM matches WHERE mode = %s AND NOT void", (mode,))
        row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def live_match_pks(session: AsyncSession, mode: str) -> list[int]:
    conn = await driver(session)
    async with conn.cursor() as cursor:
        await cursor.execute(
            "SELECT id FROM matches WHERE mode = %s AND NOT void ORDER BY applied_seq, id", (mode,)
        )
        return [row[0] for row in await cursor.fetchall()]


# The order a replay rates in: played_at, then recording order; matches recorded while it
# ran are rated on top in the order they were applied.
REPLAY_ORDER = "played_at, id"
APPLIED_ORDER = "applied_seq, id"


async def history(
    session: AsyncSession,
    mode: str,
    only: Sequence[int] | None = None,
    order: str = REPLAY_ORDER,
    exclude: Collection[int] = (),
) -> replay.ReplayMatches:
    """The mode's non-void matches (or just `only`; never those in `exclude`, an ended season's)
    as arrays, in `order`: numbered in SQL, moved by COPY, the numbers as binary columns."""
    conn = await driver(session)
    params: dict[str, Any] = {
        "mode": mode,
        "only": None if only is None else list(only),
        "exclude": list(exclude),
    }
    await conn.execute("DROP TABLE IF EXISTS replay_order, replay_names")
    await conn.execute(
        f"""
        CREATE TEMP TABLE replay_order ON COMMIT DROP AS
        SELECT id, match_id, CAST(extract(epoch FROM played_at) * 1000000 AS int8) AS us,
               row_number() OVER (ORDER BY {order}) - 1 AS ord
        FROM matches
        WHERE mode = %(mode)s AND NOT void AND (CAST(%(only)s AS int8[]) IS NULL OR id = ANY(%(only)s))
          AND NOT id = ANY(CAST(%(exclude)s AS int8[]))
        """,
        params,
    )
    await conn.execute("""
        CREATE TEMP TABLE replay_names ON COMMIT DROP AS
        SELECT player_id, row_number() OVER (ORDER BY player_id) - 1 AS ix
        FROM (SELECT DISTINCT mp.player_id FROM replay_order o JOIN match_players mp ON mp.match_pk = o.id) d
    """)
    ords, pks, us = await fetch_columns(
        conn, "SELECT ord, id, us FROM replay_order", ("int8", "int8", "int8")
    )
    by_ord = np.argsort(ords)
    pks, us = pks[by_ord], us[by_ord]
    match_ids = await fetch_lines(conn, "SELECT ord, match_id FROM replay_order")
    names = await fetch_lines(conn, "SELECT ix, player_id FROM replay_names")
    columns = await fetch_columns(
        conn,
        """
        SELECT o.ord, mp.team, n.ix, mp.rank, mp.weight, coalesce(mp.coefficient, 'NaN')
        FROM replay_order o JOIN match_players mp ON mp.match_pk = o.id
        JOIN replay_names n ON n.player_id = mp.player_id
        """,
        ("int8", "int4", "int8", "float8", "float8", "float8"),
    )
    # By match, team by team, and players within a team by id (as `ix` numbers them).
    by_entry = np.lexsort((columns[2], columns[1], columns[0]))
    ords, team, player, rank, weight, coefficient = (column[by_entry] for column in columns)
    start = np.searchsorted(ords, np.arange(len(pks) + 1)).astype(np.int64)
    entries = Matches(start, player, team.astype(np.int64), rank, weight, coefficient)
    return replay.ReplayMatches(pks, match_ids, us, entries, names)


async def seeds(session: AsyncSession, mode: str) -> dict[str, tuple[float, float]]:
    conn = await driver(session)
    async with conn.cursor() as cursor:
        await cursor.execute("SELECT player_id, mu, sigma FROM rating_seeds WHERE mode = %s", (mode,))
        return {row[0]: (row[1], row[2]) for row in await cursor.fetchall()}


async def rated_players(session: AsyncSession, mode: str) -> list[str]:
    conn = await driver(session)
    async with conn.cursor() as cursor:
        await cursor.execute("SELECT player_id FROM ratings WHERE mode = %s", (mode,))
        return [row[0] for row in await cursor.fetchall()]


# A rated match's participant as staged: every column of its match_players row, the player by
# State index (replay_players names them) and a null coefficient as NaN (binary COPY of NumPy
# columns has no null).
_STAGED_PARTICIPANT = {
    "match_pk": "int8", "player_ix": "int8", "team": "int8", "rank": "float8", "weight": "float8",
    "coefficient": "float8", "mu_before": "float8", "sigma_before": "float8", "mu_after": "float8",
    "sigma_after": "float8",
}  # fmt: skip


async def _staging(conn: psycopg.AsyncConnection[Any]) -> None:
    await conn.execute("""
        CREATE TEMP TABLE IF NOT EXISTS replay_ratings (
            player_id varchar(128) PRIMARY KEY, mu float8, sigma float8, matches int, wins int,
            losses int, draws int, last_played_at timestamptz, tier smallint) ON COMMIT DROP
    """)
    columns = ", ".join(f"{name} {kind}" for name, kind in _STAGED_PARTICIPANT.items())
    await conn.execute(f"CREATE TEMP TABLE IF NOT EXISTS replay_participants ({columns}) ON COMMIT DROP")
    await conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS replay_players (ix int8, player_id varchar(128)) ON COMMIT DROP"
    )
    await conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS replay_matches (id int8, quality float8, response json,"
        " applied_seq int8) ON COMMIT DROP"
    )


async def stage_participants(
    session: AsyncSession, history: replay.ReplayMatches, rated: replay.Rated
) -> None:
    """COPY the rated matches' participants into a temporary table (_STAGED_PARTICIPANT):
    whole rows, so a fresh match_players needs none of the old."""
    conn = await driver(session)
    await _staging(conn)
    entries = history.entries
    sizes = np.diff(entries.start)
    done = np.repeat(rated.rated, sizes)
    await copy_in_columns(
        conn,
        "replay_participants",
        list(_STAGED_PARTICIPANT),
        [
            np.repeat(history.pks, sizes)[done],
            rated.player[done],
            entries.team[done],
            entries.rank[done],
            entries.weight[done],
            entries.coefficient[done],
            rated.before_mu[done],
            rated.before_sigma[done],
            rated.after_mu[done],
            rated.after_sigma[done],
        ],
    )


async def applied_numbers(session: AsyncSession, count: int) -> list[int]:
    """`count` new numbers of the order ratings were applied in, ascending."""
    conn = await driver(session)
    (numbers,) = await fetch_columns(
        conn, "SELECT nextval('match_applied_seq') FROM generate_series(1, %s)", ("int8",), (count,)
    )
    return sorted(numbers.tolist())


async def stage_responses(
    session: AsyncSession, responses: Sequence[tuple[int, float, str]], numbers: Sequence[int]
) -> None:
    """COPY the rated matches' quality, stored response and new applied_seq."""
    conn = await driver(session)
    await _staging(conn)
    # Built off the event loop: on ATP singles, a second that would stall the job's progress.
    data = await asyncio.to_thread(_responses_text, responses, numbers)
    async with (
        conn.cursor() as cursor,
        cursor.copy("COPY replay_matches (id, quality, response, applied_seq) FROM STDIN") as copy,
    ):
        await copy.write(data)


def _responses_text(responses: Sequence[tuple[int, float, str]], numbers: Sequence[int]) -> str:
    """COPY text: a compact JSON document holds no tab or newline, and its backslashes
    (escapes) are doubled."""
    return "".join(
        f"{pk}\t{quality!r}\t{response.replace(chr(92), chr(92) * 2)}\t{number}\n"
        for (pk, quality, response), number in zip(responses, numbers, strict=True)
    )


async def stage_players(session: AsyncSession, names: Sequence[str]) -> None:
    """The names of the replay's player indices."""
    conn = await driver(session)
    await _staging(conn)
    async with conn.cursor() as cursor, cursor.copy("COPY replay_players (ix, player_id) FROM STDIN") as copy:
        await copy.write("".join(f"{i}\t{name}\n" for i, name in enumerate(names)))


async def erased_since_read(session: AsyncSession) -> bool:
    """Whether a player the replay staged (replay_players) has been erased since it read them:
    every player a match or a rating names has a players row until erased, and is a pseudonym
    in every stored row after (app.erasure)."""
    conn = await driver(session)
    async with conn.cursor() as cursor:
        await cursor.execute(
            "SELECT EXISTS (SELECT FROM replay_players n WHERE NOT starts_with(n.player_id, %s)"
            " AND NOT EXISTS (SELECT FROM players p WHERE p.id = n.player_id))",
            (PSEUDONYM_PREFIX,),
        )
        row = await cursor.fetchone()
    return bool(row and row[0])


async def stage_ratings(session: AsyncSession, ratings: Iterable[replay.NewRating]) -> None:
    """COPY the final ratings into a temporary table of this transaction."""
    conn = await driver(session)
    await _staging(conn)
    async with (
        conn.cursor() as cursor,
        cursor.copy(
            "COPY replay_ratings (player_id, mu, sigma, matches, wins, losses, draws, last_played_at, tier)"
            " FROM STDIN"
        ) as copy,
    ):
        for r in ratings:
            await copy.write_row(
                (r.player_id, r.mu, r.sigma, r.matches, r.wins, r.losses, r.draws, r.last_played_at, r.tier)
            )


async def lock_tables(session: AsyncSession) -> None:
    """Keep every writer of matches out until commit (readers go on): before fresh tables. Taken
    before the mode's lock: a post takes its table lock before the mode's shared one."""
    conn = await driver(session)
    await conn.execute("LOCK TABLE matches, match_players IN SHARE ROW EXCLUSIVE MODE")


async def mode_share(session: AsyncSession, rows: int) -> float:
    """The share of the matches table that `rows` of one mode are (from the planner's count)."""
    conn = await driver(session)
    async with conn.cursor() as cursor:
        await cursor.execute("SELECT reltuples FROM pg_class WHERE oid = CAST('matches' AS regclass)")
        row = await cursor.fetchone()
        total = float(row[0]) if row else -1.0
        if total <= 0:
            await cursor.execute("SELECT count(*) FROM matches")
            counted = await cursor.fetchone()
            total = float(counted[0]) if counted else 0.0
    return rows / max(total, 1.0)


# The staged participants with their player ids.
_NAMED = "replay_participants s JOIN replay_players n ON n.ix = s.player_ix"
# Per table: the staged rows, how they match the table's, and the columns a replay rewrites.
_STAGED = {
    "match_players": (
        f"""(SELECT s.match_pk, n.player_id, s.mu_before, s.sigma_before, s.mu_after, s.sigma_after
             FROM {_NAMED})""",
        "s.match_pk = t.match_pk AND s.player_id = t.player_id",
        ("mu_before", "sigma_before", "mu_after", "sigma_after"),
    ),
    "matches": ("replay_matches", "s.id = t.id", ("quality", "response", "applied_seq")),
}
# A fresh match_players: the rated matches' participants whole from the staged rows, every
# other match's as they are: cheaper than matching the old rows to the staged ones by (match,
# player id) (docs/benchmarks.md, "Replay").
_MATCH_PLAYERS = (
    "match_pk", "player_id", "mode", "team", "rank", "weight", "coefficient",
    "mu_before", "sigma_before", "mu_after", "sigma_after",
)  # fmt: skip
_FRESH_MATCH_PLAYERS = f"""
    ({", ".join(_MATCH_PLAYERS)})
    SELECT s.match_pk, n.player_id, CAST(%(mode)s AS varchar), s.team, s.rank, s.weight,
           nullif(s.coefficient, 'NaN'), s.mu_before, s.sigma_before, s.mu_after, s.sigma_after
    FROM {_NAMED}
    UNION ALL
    SELECT {", ".join(f"t.{c}" for c in _MATCH_PLAYERS)} FROM match_players t
    WHERE NOT EXISTS (SELECT FROM replay_participants s WHERE s.match_pk = t.match_pk)
"""


async def rewrite(session: AsyncSession, table: str, fresh: bool, mode: str) -> Fresh | None:
    """Write the staged rows of `table` (match_players or matches) of `mode`: into a fresh copy
    of the table (swapped in by `finish`), or in place."""
    conn = await driver(session)
    staged, condition, replaced = _STAGED[table]
    if table == "match_players":
        # Their sizes for the planner, which otherwise joined them by sorting both (temporary
        # tables get no autovacuum analyse); the analyse costs less than it saves
        # (docs/benchmarks.md, "Replay").
        await conn.execute("ANALYZE replay_participants, replay_players")
    if fresh and table == "match_players":
        missing = set(await columns_of(conn, table)) - set(_MATCH_PLAYERS)
        if missing:
            raise RuntimeError(f"a replay does not know the match_players columns {sorted(missing)}")
        return await fresh_table(conn, table, _FRESH_MATCH_PLAYERS, {"mode": mode})
    if fresh:
        # s.quality and the like are never null in a staged row: a null means no row.
        columns = [
            f"CASE WHEN s.{replaced[0]} IS NULL THEN t.{c} ELSE s.{c} END" if c in replaced else f"t.{c}"
            for c in await columns_of(conn, table)
        ]
        return await fresh_table(
            conn, table, f"SELECT {', '.join(columns)} FROM {table} t LEFT JOIN {staged} s ON {condition}"
        )
    assignments = ", ".join(f"{c} = s.{c}" for c in replaced)
    await conn.execute(f"UPDATE {table} t SET {assignments} FROM {staged} s WHERE {condition}")
    return None


async def finish(session: AsyncSession, mode: str, fresh: Sequence[Fresh], tier_version: int) -> None:
    """Swap the fresh tables in (if any), write the final ratings, tiered by the settings of
    `tier_version`, and recount the mode's leaderboard; the caller holds the mode's exclusive
    lock (and for fresh tables, theirs). Tiers of settings changed since the replay read them
    are placed again by the current ones (app.leaderboards.retier)."""
    conn = await driver(session)
    await leaderboards.bulk(session, True)
    if fresh:
        await swap_in(conn, fresh)
    await conn.execute(
        f"""
        INSERT INTO ratings AS r (player_id, mode, mu, sigma, conservative, matches, wins, losses, draws,
                                  last_played_at, tier, tier_version)
        SELECT s.player_id, m.name, s.mu, s.sigma,
               {conservative_sql("s.mu", "s.sigma", last="s.last_played_at")}, s.matches, s.wins,
               s.losses, s.draws, s.last_played_at, s.tier, %(version)s
        FROM replay_ratings s, modes m WHERE m.name = %(mode)s
        ON CONFLICT (player_id, mode) DO UPDATE
        SET mu = excluded.mu, sigma = excluded.sigma, conservative = excluded.conservative,
            matches = excluded.matches, wins = excluded.wins, losses = excluded.losses,
            draws = excluded.draws, last_played_at = excluded.last_played_at, tier = excluded.tier,
            tier_version = excluded.tier_version, updated_at = now()
        """,
        {"mode": mode, "version": tier_version},
    )
    await leaderboards.recount(session, mode, retier=True)


async def replace_curves(
    session: AsyncSession,
    mode: str,
    job_id: str,
    curves: Iterable[tuple[str, list[float], list[float], list[float]]],
) -> None:
    """Swap the mode's learning curves for these, in this transaction, leaving out players
    erased since the smooth read the history.

    Under the mode's lock, shared: an erasure holds every mode's lock exclusively, so it is
    either done (its player has no players row) or waits for this commit and then deletes
    the curve written here."""
    conn = await driver(session)
    await conn.execute(f"SELECT {shared_lock('%(mode)s')}", {"mode": mode})
    await conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS new_curves (player_id varchar(128), days float8[], mu float8[],"
        " sigma float8[]) ON COMMIT DROP"
    )
    async with (
        conn.cursor() as cursor,
        cursor.copy("COPY new_curves (player_id, days, mu, sigma) FROM STDIN") as copy,
    ):
        for row in curves:
            await copy.write_row(row)
    await conn.execute("DELETE FROM learning_curves WHERE mode = %s", (mode,))
    await conn.execute(
        "INSERT INTO learning_curves (mode, player_id, job_id, days, mu, sigma)"
        " SELECT %s, c.player_id, %s, c.days, c.mu, c.sigma FROM new_curves c"
        " WHERE EXISTS (SELECT FROM players p WHERE p.id = c.player_id)",
        (mode, job_id),
    )
