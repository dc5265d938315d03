"""SQL for recording matches: claim the ids, create and lock ratings, write everything.

A group of matches (one single post, the posts a writer gathered, or one batch) costs two
round trips whatever its size, in one transaction on a psycopg connection of the writers' own
(app.db.connections), which the claim begins and the write commits:

1. one message: BEGIN and the transaction's statement timeout; a savepoint; the written
   tables' locks; each mode's lock taken shared; the stored rows of ids already taken, and the
   missing players and ratings of the matches whose id is free; the participants' ratings
   locked in one fixed order; the applied_seq values and the new match rows' keys, drawn under
   those locks;
2. one statement that updates the ratings, inserts the participants and inserts the match rows
   whole (the unique index on match_id decides a race with another transaction: `Raced`),
   with the COMMIT.

None of SQLAlchemy's per-statement work runs on the service's busiest path.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import AsyncConnection
from psycopg.pq import Escaping
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.bulk import ColumnParam, column_param
from app.db.conservative import base_tier_sql, conservative_sql, current_tier_sql
from app.db.locks import shared_lock

# The tables the write will insert into, locked as the insert would, first: a replay into
# fresh tables (app.jobs) holds both against writers and then drops them, so a post must
# wait for it before reading `matches` (a read would hold the drop off while the post waited
# to write: a deadlock), and before taking any mode's lock (app.jobs.repository.lock_tables).
_TABLES = "LOCK TABLE matches, match_players IN ROW EXCLUSIVE MODE"

# Takes every mode's lock shared before anything is read or written (count(*) reads all its
# rows): whole-mode rewrites (app.leaderboards) and season switches stay out until commit. A
# statement of its own, so that the claim's snapshot is taken after it waited.
_GUARD = f"""
    SELECT count(*) FROM (
        SELECT {shared_lock("g.mode")}
        FROM (SELECT DISTINCT mode FROM unnest(CAST(%(modes)s AS varchar[])) AS u(mode) ORDER BY mode) AS g
    ) AS locks
"""

# The stored rows of the ids already taken (a retry is compared with what is stored) and, for
# the matches whose id is free, the players whose rating in the mode is missing or behind the
# mode's season, inserted at the mode's prior, all on one snapshot. Nothing is written to
# `matches` here: a free id's row is inserted whole by the write, and the unique index on
# match_id decides between concurrent posts of one id there (`Raced`). Inserts go in one
# sorted order (mode, player id), so concurrent claimers wait in one order and never deadlock.
# `conservative` always takes k from the modes row.
#
# A rating behind its season goes through the insert: its BEFORE INSERT trigger
# (season_stamp) catches it up before _LOCK reads it. Judging "behind" (and "missing") on
# this statement's snapshot is sound because _GUARD ran as a statement of its own before it:
# a season switch, and an erasure (the only deleter of ratings), hold the mode's lock
# exclusively until they commit, so this snapshot sees them; and no rating row goes behind
# (or away) while the lock is held shared. A current rating skips the insert and its
# trigger, which were most of the claim's time (docs/benchmarks.md).
_CLAIM = f"""
    WITH taken AS (
        SELECT match_id, body_hash, played_at, response, void FROM matches
        WHERE match_id = ANY(CAST(%(match_ids)s AS varchar[]))
    ), wanted AS (
        SELECT DISTINCT w.mode, w.player_id, prior.mu, prior.sigma
        FROM unnest(
            CAST(%(match_ids_of)s AS varchar[]), CAST(%(modes_of)s AS varchar[]),
            CAST(%(players)s AS varchar[])
        ) AS w(match_id, mode, player_id)
        JOIN unnest(CAST(%(prior_modes)s AS varchar[]), CAST(%(prior_mu)s AS float8[]),
                    CAST(%(prior_sigma)s AS float8[])) AS prior(mode, mu, sigma) ON prior.mode = w.mode
        WHERE w.match_id NOT IN (SELECT match_id FROM taken)
          AND NOT EXISTS (
              SELECT 1 FROM ratings AS r JOIN modes AS m ON m.name = r.mode
              WHERE r.player_id = w.player_id AND r.mode = w.mode AND r.season >= m.season)
    ), new_players AS (
        INSERT INTO players (id)
        SELECT DISTINCT player_id FROM wanted ORDER BY player_id
        ON CONFLICT DO NOTHING
    ), new_ratings AS (
        INSERT INTO ratings (player_id, mode, mu, sigma, conservative, tier_version)
        SELECT w.player_id, w.mode, w.mu, w.sigma, {conservative_sql("w.mu", "w.sigma")}, m.tier_version
        FROM wanted w JOIN modes m ON m.name = w.mode
        ORDER BY w.mode, w.player_id
        ON CONFLICT DO NOTHING
    )
    SELECT match_id, body_hash, played_at, response, void FROM taken
"""

# One fixed lock order (mode, player id) for every transaction: no deadlocks (docs/design.md). A
# statement of its own, after the claim: in one statement the order of the two would not be
# fixed. Rows of matches that turn out to be retries are locked for nothing until commit.
# The order is SQL's, in the database's default collation (not the code point order `pairs`
# is sorted in, which only builds the arrays): every other writer of ratings rows locks in it
# too (the re-tier and re-score batches, the season catch-up since migration 0018), since two
# collations order some ids differently and two orders can deadlock.
#
# A row whose tier is behind the mode's tier settings (changed, its re-tier job not there yet:
# app.leaderboards.retier) reads as the tier the job would give it, so the match steps from
# where the new settings place the player.
_LOCK = f"""
    SELECT r.mode, r.player_id, r.mu, r.sigma, r.matches, {current_tier_sql()},
           CAST(extract(epoch FROM r.last_played_at) * 1000000 AS int8)
    FROM ratings r JOIN modes m ON m.name = r.mode
    WHERE (r.mode, r.player_id) IN (
        SELECT * FROM unnest(CAST(%(modes)s AS varchar[]), CAST(%(players)s AS varchar[])))
    ORDER BY r.mode, r.player_id
    FOR UPDATE OF r
"""

# Drawn after the locks are held, so matches that share a player get increasing applied_seq
# values in the order their ratings were applied (GET /v1/players/{id}/matches lists by it);
# the match rows' keys with them, so that participants need no join back to their match.
_SEQUENCE = "SELECT nextval('match_applied_seq'), nextval('matches_id_seq') FROM generate_series(1, %(n)s)"

# For the write, the transaction's last statement. A group touches up to a few thousand rows by
# key. Told the arrays' lengths, the planner hashes the whole ratings and matches tables to join
# them (a scan of every row per group, growing with the tables); by key through the indexes it
# is a probe per row. SET LOCAL after the savepoint: a claim undone and sent again sends them
# again.
_PLANNER = ("SET LOCAL enable_hashjoin = off", "SET LOCAL enable_mergejoin = off")

# WITHIN: a key's modes as LIKE patterns (app.ids.ModeScope), NULL for every mode.
_WITHIN = "(CAST(:within AS varchar[]) IS NULL OR mode LIKE ANY (CAST(:within AS varchar[])))"
_STORED = text(
    f"SELECT body_hash, played_at, response, void FROM matches WHERE match_id = :match_id AND {_WITHIN}"
)

# A player in several matches of the group has one ratings row: the last rating and the
# summed counters. `v` holds (mode, player_id, mu, sigma, matches, win, loss, draw, played_at,
# tier). `conservative` is drifted from the last played instant to the mode's drift_as_of
# (app.db.conservative): a match posted late drifts from its played_at.
_LAST = "GREATEST(r.last_played_at, v.played_at)"
# The tier the rating step computed, when it read the mode's tier settings as they are now
# (`v.tier_version`: the version of the tier settings its cached rules held, migration 0016).
# Rules cached before a change of the tiers (up to app.modes.service.CACHE_SECONDS in another
# process) would store a tier of the old list: that write places the player afresh from the new
# settings instead. Only a change of the tier settings moves the version: any other PUT of the
# mode leaves the walked tier, and its demotion margin, in place.
_TIER = f"""CASE WHEN v.tier_version = m.tier_version THEN v.tier
             WHEN r.matches + v.matches >= m.min_matches_for_leaderboard
             THEN {base_tier_sql(conservative_sql("v.mu", "v.sigma"))} END"""
_UPDATE_RATINGS = f"""
    UPDATE ratings AS r
    SET mu = v.mu, sigma = v.sigma, conservative = {conservative_sql("v.mu", "v.sigma", last=_LAST)},
        matches = r.matches + v.matches, wins = r.wins + v.win, losses = r.losses + v.loss,
        draws = r.draws + v.draw,
        last_played_at = {_LAST}, tier = {_TIER}, tier_version = m.tier_version,
        updated_at = now()
    FROM v, modes AS m
    WHERE r.mode = v.mode AND r.player_id = v.player_id AND m.name = v.mode
"""

_PARTICIPANTS = """
    INSERT INTO match_players
        (match_pk, player_id, mode, team, rank, weight, coefficient,
         mu_before, sigma_before, mu_after, sigma_after)
"""

# The writes as columns: each column one array, numbers in binary and identifiers as one
# literal (no per-row JSON keys), and the responses one JSON array whose n-th element goes
# with the n-th element of the matches' columns (ROWS FROM zips them by position; the array is
# read once, each element kept as its text: matches.response is json, migration 0012). A
# played_at arrives as microseconds since 1970 (exact integers).
#
# The match rows go in whole, once (no row claimed first and completed later), in match_id
# order: concurrent writers of one id wait on the unique index in one order, after every row
# lock they take, so they never deadlock; the later one fails with the index's unique
# violation (`Raced`) and nothing of its statement (or the COMMIT sent after it) applies.
_APPLY = f"""
    WITH v AS (
        SELECT v.mode, v.player_id, v.mu, v.sigma, v.matches, v.win, v.loss, v.draw,
               TIMESTAMPTZ 'epoch' + v.played_us * INTERVAL '1 microsecond' AS played_at,
               CAST(NULLIF(v.tier, -1) AS smallint) AS tier, v.tier_version
        FROM unnest(
            CAST(%(r_mode)s AS varchar[]), CAST(%(r_player_id)s AS varchar[]), CAST(%(r_mu)s AS float8[]),
            CAST(%(r_sigma)s AS float8[]), CAST(%(r_matches)s AS int[]), CAST(%(r_win)s AS int[]),
            CAST(%(r_loss)s AS int[]), CAST(%(r_draw)s AS int[]), CAST(%(r_played_us)s AS int8[]),
            CAST(%(r_tier)s AS int[]), CAST(%(r_tier_version)s AS int8[])
        ) AS v(mode, player_id, mu, sigma, matches, win, loss, draw, played_us, tier, tier_version)
    ), changed AS ({_UPDATE_RATINGS}
    ), participants AS ({_PARTICIPANTS}
        SELECT p.match_pk, p.player_id, p.mode, p.team, p.rank, p.weight,
               NULLIF(p.coefficient, 'NaN'), p.mu_before, p.sigma_before, p.mu_after, p.sigma_after
        FROM unnest(
            CAST(%(p_match_pk)s AS int8[]), CAST(%(p_player_id)s AS varchar[]), CAST(%(p_mode)s AS varchar[]),
            CAST(%(p_team)s AS int[]), CAST(%(p_rank)s AS float8[]), CAST(%(p_weight)s AS float8[]),
            CAST(%(p_coefficient)s AS float8[]), CAST(%(p_mu_before)s AS float8[]),
            CAST(%(p_sigma_before)s AS float8[]), CAST(%(p_mu_after)s AS float8[]),
            CAST(%(p_sigma_after)s AS float8[])
        ) AS p(match_pk, player_id, mode, team, rank, weight, coefficient, mu_before, sigma_before,
               mu_after, sigma_after)
    )
    INSERT INTO matches (id, match_id, mode, played_at, body_hash, quality, response, applied_seq)
    SELECT u.pk, u.match_id, u.mode, TIMESTAMPTZ 'epoch' + u.played_us * INTERVAL '1 microsecond',
           u.body_hash, u.quality, u.response, u.seq
    FROM ROWS FROM (
        unnest(CAST(%(m_pk)s AS int8[])), unnest(CAST(%(m_match_id)s AS varchar[])),
        unnest(CAST(%(m_mode)s AS varchar[])), unnest(CAST(%(m_played_us)s AS int8[])),
        unnest(CAST(%(m_body_hash)s AS varchar[])), unnest(CAST(%(m_quality)s AS float8[])),
        unnest(CAST(%(m_seq)s AS int8[])), json_array_elements(CAST(%(m_responses)s AS json))
    ) AS u(pk, match_id, mode, played_us, body_hash, quality, seq, response)
    ORDER BY u.match_id
"""


@dataclass(frozen=True, slots=True)
class StoredMatch:
    body_hash: str
    played_at: dt.datetime
    response: dict[str, Any]
    void: bool


@dataclass(frozen=True, slots=True)
class Claim:
    """A match id to claim, with what the claim stores and the players it would create."""

    match_id: str
    mode: str
    played_at: dt.datetime
    body_hash: str
    player_ids: Sequence[str]
    prior: tuple[float, float]  # the mode's (mu, sigma) for players it has not seen


@dataclass(frozen=True, slots=True)
class Standing:
    """What a locked rating row holds beside the rating: the matches played, the tier (None:
    none) and the last played instant (microseconds since 1970; None: never)."""

    matches: int
    tier: int | None
    last_us: int | None


@dataclass(frozen=True, slots=True)
class Claimed:
    """What the claim found: the free ids with the keys their rows will take (id -> key), the
    stored rows of ids taken before, the locked ratings ((mode, player) -> (mu, sigma)) with
    their standings, and applied_seq values, in increasing order."""

    new: dict[str, int]
    taken: dict[str, StoredMatch]
    ratings: dict[tuple[str, str], tuple[float, float]]
    sequence: list[int]
    standings: dict[tuple[str, str], Standing] = field(default_factory=dict)


class Raced(Exception):
    """A match id of the write was recorded by another transaction after this one's claim
    read it as free. The transaction is to go back to the claim's savepoint
    (`rollback_claims`) and claim again: the id then reads as taken."""


MATCH_ID_KEY = "uq_matches_match_id"


@contextlib.asynccontextmanager
async def _raced() -> AsyncIterator[None]:
    try:
        yield
    except psycopg.errors.UniqueViolation as exc:
        if exc.diag.constraint_name == MATCH_ID_KEY:
            raise Raced(exc.diag.message_detail) from exc
        raise


SAVEPOINT = "claims"


async def claim(conn: AsyncConnection[Any], claims: Sequence[Claim], setup: Sequence[str] = ()) -> Claimed:
    """Claim every match id in one round trip (after a savepoint `rollback_claims` returns to),
    and lock the players' ratings of all of them. `setup`: statements that go first, in the
    same round trip (BEGIN and the transaction's settings, when the claim begins it)."""
    pairs = sorted({(c.mode, p) for c in claims for p in c.player_ids})
    priors = {c.mode: c.prior for c in claims}
    literal = _literals(conn)
    ids = literal(_array([c.match_id for c in claims]))
    # Each column one array literal (identifiers need no escaping inside it: app.ids).
    participants = {
        "match_ids_of": literal(_array([c.match_id for c in claims for _ in c.player_ids])),
        "modes_of": literal(_array([c.mode for c in claims for _ in c.player_ids])),
        "players": literal(_array([p for c in claims for p in c.player_ids])),
        "prior_modes": literal(_array(list(priors))),
        "prior_mu": literal(_array([mu for mu, _ in priors.values()])),
        "prior_sigma": literal(_array([sigma for _, sigma in priors.values()])),
    }
    *_, taken, locked, sequence, _, _ = await _one_message(
        conn,
        [
            *setup,
            f"SAVEPOINT {SAVEPOINT}",
            _TABLES,
            _GUARD % {"modes": literal(_array(sorted({c.mode for c in claims})))},
            _CLAIM % {"match_ids": ids, **participants},
            _LOCK
            % {
                "modes": literal(_array([m for m, _ in pairs])),
                "players": literal(_array([p for _, p in pairs])),
            },
            _SEQUENCE % {"n": len(claims)},
            *_PLANNER,
        ],
    )
    stored = {row[0]: StoredMatch(row[1], row[2], row[3], row[4]) for row in taken}
    keys = iter(int(row[1]) for row in sequence)
    return Claimed(
        new={c.match_id: next(keys) for c in claims if c.match_id not in stored},
        taken=stored,
        ratings={(row[0], row[1]): (row[2], row[3]) for row in locked},
        sequence=sorted(int(row[0]) for row in sequence),
        standings={(row[0], row[1]): Standing(row[4], row[5], row[6]) for row in locked},
    )


def _literals(conn: AsyncConnection[Any]) -> Callable[[str], str]:
    """A text as an SQL string literal, quoted by libpq for `conn` (PQescapeLiteral)."""
    escaping = Escaping(conn.pgconn)
    return lambda value: escaping.escape_literal(value.encode()).decode()


async def _one_message(conn: AsyncConnection[Any], statements: Sequence[str]) -> list[list[Any]]:
    """Run `statements` as one simple-protocol query, one round trip whatever their number:
    the rows of each in order ([] for a statement that returns none). The first that fails
    raises, and the ones after it do not run.

    Values come in as literals quoted by libpq (_literals), not as parameters: a query with
    parameters takes the extended protocol, one statement a message, and in a pipeline each
    message is a send and a wakeup of its own (most of a group's time in the driver)."""
    results: list[list[Any]] = []
    async with conn.cursor() as cursor:
        await cursor.execute(";\n".join(statements).encode())
        while True:
            results.append(await cursor.fetchall() if cursor.description is not None else [])
            if not cursor.nextset():
                return results


async def rollback_claims(conn: AsyncConnection[Any]) -> None:
    """Undo the last `claim` (its rows and its locks), to claim again without some matches."""
    await conn.execute(f"ROLLBACK TO SAVEPOINT {SAVEPOINT}")


# Numbers go as NumPy columns of the statement's element types (int4 = int32, int8 =
# int64, float8 = float64; the server refuses another), text as sequences of identifiers.
Float8 = npt.NDArray[np.float64]
Int8 = npt.NDArray[np.int64]
Int4 = npt.NDArray[np.int32]


@dataclass(frozen=True, slots=True)
class RatingColumns:
    """Each written player's last rating and summed counters, one element per player."""

    mode: Sequence[str]
    player_id: Sequence[str]
    mu: Float8
    sigma: Float8
    matches: Int4
    win: Int4
    loss: Int4
    draw: Int4
    played_us: Int8  # the latest played_at, in microseconds since 1970 UTC
    tier: Int4  # the tier after the group (-1: none)
    tier_version: Int8  # the version of the mode's tier settings that tiered it (migration 0016)


@dataclass(frozen=True, slots=True)
class ParticipantColumns:
    """The match_players rows, one element per participant."""

    match_pk: Int8
    player_id: Sequence[str]
    mode: Sequence[str]
    team: Int4
    rank: Float8
    weight: Float8
    coefficient: Float8  # NaN for none (a coefficient is finite: app.matches.schemas)
    mu_before: Float8
    sigma_before: Float8
    mu_after: Float8
    sigma_after: Float8


@dataclass(frozen=True, slots=True)
class MatchColumns:
    """The rated matches' rows, and their stored responses as one JSON array in the same order."""

    pk: Int8
    match_id: Sequence[str]
    mode: Sequence[str]
    played_us: Int8  # microseconds since 1970 UTC
    body_hash: Sequence[str]
    quality: Float8
    seq: Int8
    responses: str


# Each kind's array columns, by name (the responses go as one JSON array).
_COLUMNS = {
    kind: [column.name for column in fields(kind) if column.name != "responses"]
    for kind in (RatingColumns, ParticipantColumns, MatchColumns)
}


@dataclass(frozen=True, slots=True)
class Write:
    """A rated group's rows."""

    ratings: RatingColumns
    participants: ParticipantColumns
    matches: MatchColumns


async def write(conn: AsyncConnection[Any], rows: Write) -> None:
    """Write a rated group and commit, in one round trip: one statement, no object per row on
    either side (numbers cross in binary, app.db.bulk.column_param), then the COMMIT, which
    does not run when the statement fails."""
    params: dict[str, str | ColumnParam] = {"m_responses": rows.matches.responses}
    for prefix, columns in (("r_", rows.ratings), ("p_", rows.participants), ("m_", rows.matches)):
        for name in _COLUMNS[type(columns)]:
            values = getattr(columns, name)
            params[prefix + name] = column_param(values) if isinstance(values, np.ndarray) else _array(values)
    async with _raced(), conn.pipeline():
        await conn.execute(_APPLY, params)
        await conn.execute("COMMIT")


def _array(values: Sequence[Any]) -> str:
    """A PostgreSQL array literal. Floats by repr, the shortest text that reads back to the
    same double; identifiers (app.ids: no quote, backslash, comma or space) quoted, so that
    none reads as NULL. (A batch's numbers go in binary: app.db.bulk.column_param.)"""
    if not values:
        return "{}"
    first = values[0]
    if isinstance(first, str):
        return '{"' + '","'.join(values) + '"}'
    return "{" + ",".join(map(repr, values)) + "}"


async def stored(session: AsyncSession, match_id: str, within: list[str] | None = None) -> StoredMatch | None:
    """The stored match, if its mode is one of `within` (LIKE patterns; None: any)."""
    row = (await session.execute(_STORED, {"match_id": match_id, "within": within})).first()
    return None if row is None else StoredMatch(row[0], row[1], row[2], row[3])


_VOID = text(f"UPDATE matches SET void = true WHERE match_id = :match_id AND {_WITHIN} RETURNING response")


async def void(
    session: AsyncSession, match_id: str, within: list[str] | None = None
) -> dict[str, Any] | None:
    """Void the match, if its mode is one of `within` (LIKE patterns; None: any)."""
    row = (await session.execute(_VOID, {"match_id": match_id, "within": within})).first()
    return None if row is None else dict(row[0])
