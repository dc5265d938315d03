"""SQL for leaderboards: keyset pages, exact ranks, and the per-bucket counts behind them.

Ranks read `leaderboard_deltas`, a histogram of eligible players per bucket of
`conservative` that a trigger on ratings keeps in the writing transaction (migration
0003). Everything one answer needs is read by one statement, so it is one snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.conservative import base_tier_sql, conservative_sql, current_tier_sql
from app.db.locks import COMPACT_LOCK_CLASS

_RULES = text(
    "SELECT min_matches_for_leaderboard, tiers, rescore_after IS NOT NULL FROM modes WHERE name = :mode"
)


# Pages. A page of a mode with tiers reads each row's tier (its index into the mode's tiers,
# named by the service); one without reads NULL, so its page is an index-only scan of
# ix_ratings_leaderboard (the tier is not in that index). One tier's page reads ix_ratings_tier.
#
# A row a re-tier job has not reached yet (migration 0016) shows the tier the current settings
# place it in, and is left off the tier pages until placed, as the tier counts leave it off.
def _page_sql(tiered: bool, one_tier: bool, following: bool) -> TextClause:
    tier = current_tier_sql() if tiered else "CAST(NULL AS smallint)"
    where = "r.tier = :tier AND r.tier_version = m.tier_version" if one_tier else "r.matches >= :min_matches"
    after = (
        "AND r.conservative <= :after_c AND (r.conservative < :after_c OR r.player_id > :after_id)"
        if following
        else ""
    )
    # Each row says whether a re-score is under way in the page's own snapshot, so the flag
    # answered with the rows is theirs (the rules were read by a statement before).
    return text(f"""
        SELECT r.player_id, r.mu, r.sigma, r.conservative, r.matches, {tier},
               (SELECT rescore_after IS NOT NULL FROM modes WHERE name = :mode) AS rescoring
        FROM ratings r {"JOIN modes m ON m.name = r.mode" if tiered or one_tier else ""}
        WHERE r.mode = :mode AND {where} {after}
        ORDER BY r.conservative DESC, r.player_id
        LIMIT :limit
    """)


_PAGES = {
    (tiered, one_tier, following): _page_sql(tiered, one_tier, following)
    for tiered in (False, True)
    for one_tier in (False, True)
    for following in (False, True)
}

# Each tier's count: the sum of its deltas of the current tier settings (migration 0016);
# the deltas of older versions (tier NULL here) sum to the players a re-tier has yet to reach.
_TIER_COUNTS = text("""
    SELECT CASE WHEN d.version = m.tier_version THEN d.tier END, coalesce(sum(d.delta), 0)
    FROM tier_deltas d JOIN modes m ON m.name = d.mode
    WHERE d.mode = :mode GROUP BY 1
""")

# The player's row, their rank (1 + eligible players ahead: the buckets ahead from the
# counts, the rest of their own bucket from the index), the total, and `around`
# neighbours on each side, all from one snapshot.
_STANDING = text(f"""
    WITH mo AS (
        SELECT min_matches_for_leaderboard AS min_matches, leaderboard_bucket_width AS w, tiers,
               rescore_after IS NOT NULL AS rescoring
        FROM modes WHERE name = :mode
    ), me AS (
        SELECT r.player_id, r.mu, r.sigma, r.conservative AS c, r.matches, {current_tier_sql()} AS tier,
               leaderboard_bucket(r.conservative, mo.w) AS b,
               -- Above every value of the bucket, by a margin far wider than rounding.
               CASE WHEN abs(leaderboard_bucket(r.conservative, mo.w)) < 1e9
                    THEN (leaderboard_bucket(r.conservative, mo.w) + 1.001) * mo.w
                    ELSE 'infinity'::float8 END AS top
        FROM ratings r JOIN modes m ON m.name = r.mode, mo
        WHERE r.mode = :mode AND r.player_id = :player_id
    ), ahead AS (
        SELECT (SELECT coalesce(sum(d.delta), 0) FROM leaderboard_deltas d
                WHERE d.mode = :mode AND d.bucket > me.b)
             + (SELECT count(*) FROM ratings r, mo
                WHERE r.mode = :mode AND r.conservative >= me.c AND r.conservative < me.top
                  AND leaderboard_bucket(r.conservative, mo.w) = me.b
                  AND r.matches >= mo.min_matches
                  AND (r.conservative > me.c OR r.player_id < me.player_id)) AS n,
               (SELECT coalesce(sum(d.delta), 0) FROM leaderboard_deltas d WHERE d.mode = :mode) AS total
        FROM me
    )
    SELECT 0 AS side, me.player_id, me.mu, me.sigma, me.c AS conservative, me.matches,
           ahead.n AS ahead, ahead.total, mo.min_matches, mo.tiers -> me.tier ->> 'name' AS tier,
           mo.rescoring
    FROM me, ahead, mo
    UNION ALL
    SELECT -1, n.player_id, n.mu, n.sigma, n.conservative, n.matches, 0, 0, 0, mo.tiers -> n.tier ->> 'name',
           false
    FROM me, mo, LATERAL (
        SELECT r.player_id, r.mu, r.sigma, r.conservative, r.matches, {current_tier_sql()} AS tier
        FROM ratings r JOIN modes m ON m.name = r.mode
        WHERE r.mode = :mode AND r.conservative >= me.c AND r.matches >= mo.min_matches
          AND (r.conservative > me.c OR r.player_id < me.player_id)
        ORDER BY r.conservative, r.player_id DESC
        LIMIT :around
    ) AS n
    UNION ALL
    SELECT 1, n.player_id, n.mu, n.sigma, n.conservative, n.matches, 0, 0, 0, mo.tiers -> n.tier ->> 'name',
           false
    FROM me, mo, LATERAL (
        SELECT r.player_id, r.mu, r.sigma, r.conservative, r.matches, {current_tier_sql()} AS tier
        FROM ratings r JOIN modes m ON m.name = r.mode
        WHERE r.mode = :mode AND r.conservative <= me.c AND r.matches >= mo.min_matches
          AND (r.conservative < me.c OR r.player_id > me.player_id)
        ORDER BY r.conservative DESC, r.player_id
        LIMIT :around
    ) AS n
""")


@dataclass(frozen=True, slots=True)
class Row:
    player_id: str
    mu: float
    sigma: float
    conservative: float
    matches: int
    tier: str | None = None  # the tier's name


@dataclass(frozen=True, slots=True)
class StandingRows:
    me: Row
    ahead: int
    total: int
    min_matches: int
    above: list[Row]  # nearest first
    below: list[Row]  # nearest first
    rescoring: bool = False


@dataclass(frozen=True, slots=True)
class Rules:
    """What a leaderboard read needs of its mode."""

    min_matches: int
    tiers: list[dict[str, Any]]  # [] for none
    # A re-score is under way (app.leaderboards.rescore): some stored scores are the old settings'.
    rescoring: bool


async def min_matches(session: AsyncSession, mode: str) -> int | None:
    """The mode's min_matches_for_leaderboard, or None for an unknown mode."""
    found = await rules(session, mode)
    return None if found is None else found.min_matches


async def rules(session: AsyncSession, mode: str) -> Rules | None:
    """The mode's leaderboard rules, or None for an unknown mode."""
    row = (await session.execute(_RULES, {"mode": mode})).first()
    return None if row is None else Rules(int(row[0]), list(row[1] or []), bool(row[2]))


async def tier_counts(session: AsyncSession, mode: str) -> dict[int | None, int]:
    """How many players each tier of the current settings holds (by index; tiers with none may
    be absent), and under None those still tiered by older settings."""
    rows = (await session.execute(_TIER_COUNTS, {"mode": mode})).all()
    return {None if tier is None else int(tier): int(count) for tier, count in rows}


_SIZE = text("SELECT coalesce(sum(delta), 0) FROM leaderboard_deltas WHERE mode = :mode")


_SIZES = text("SELECT mode, sum(delta) FROM leaderboard_deltas GROUP BY mode")


async def sizes(session: AsyncSession) -> dict[str, int]:
    """Every mode's leaderboard size in one read (modes with nobody on it are absent)."""
    return {mode: int(total) for mode, total in (await session.execute(_SIZES)).all()}


async def size(session: AsyncSession, mode: str) -> int:
    """How many players the mode's leaderboard holds (the sum of its bucket counts)."""
    return int((await session.execute(_SIZE, {"mode": mode})).scalar_one())


@dataclass(frozen=True, slots=True)
class Page:
    rows: list[Row]
    rescoring: bool | None  # as the rows' snapshot saw it; None for no rows


async def page(
    session: AsyncSession,
    mode: str,
    min_matches: int,
    after: tuple[float, str] | None,
    limit: int,
    tiers: Sequence[str] = (),
    tier: int | None = None,
) -> Page:
    """A page of the leaderboard after the (conservative, player id) `after`, each row's tier
    named from the mode's `tiers`; of one tier's players when `tier` (an index) is given."""
    params: dict[str, Any] = {"mode": mode, "min_matches": min_matches, "limit": limit}
    if tier is not None:
        params["tier"] = tier
    if after is not None:
        params |= {"after_c": after[0], "after_id": after[1]}
    statement = _PAGES[bool(tiers), tier is not None, after is not None]
    rows = (await session.execute(statement, params)).all()
    return Page(
        [
            Row(
                row[0],
                row[1],
                row[2],
                row[3],
                row[4],
                None if row[5] is None or row[5] >= len(tiers) else tiers[row[5]],
            )
            for row in rows
        ],
        bool(rows[0][6]) if rows else None,
    )


async def standing(session: AsyncSession, mode: str, player_id: str, around: int) -> StandingRows | None:
    """The player's rank and neighbours; None when the player has no rating in the mode."""
    rows = (await session.execute(_STANDING, {"mode": mode, "player_id": player_id, "around": around})).all()
    mine = [r for r in rows if r.side == 0]
    if not mine:
        return None
    me = mine[0]
    return StandingRows(
        me=Row(me.player_id, me.mu, me.sigma, me.conservative, me.matches, me.tier),
        ahead=int(me.ahead),
        total=int(me.total),
        min_matches=int(me.min_matches),
        above=[
            Row(r.player_id, r.mu, r.sigma, r.conservative, r.matches, r.tier) for r in rows if r.side == -1
        ],
        below=[
            Row(r.player_id, r.mu, r.sigma, r.conservative, r.matches, r.tier) for r in rows if r.side == 1
        ],
        rescoring=bool(me.rescoring),
    )


_BULK = text("SELECT set_config('app.leaderboard_bulk', :on, true)")
_RECOUNT = text("""
    WITH gone AS (DELETE FROM leaderboard_deltas WHERE mode = :mode)
    INSERT INTO leaderboard_deltas (mode, bucket, delta)
    SELECT r.mode, leaderboard_bucket(r.conservative, m.leaderboard_bucket_width), count(*)
    FROM ratings r JOIN modes m ON m.name = r.mode
    WHERE r.mode = :mode AND r.matches >= m.min_matches_for_leaderboard
    GROUP BY 1, 2
""")


# Tiers placed again from scratch (no hysteresis history), by the mode's current settings:
# each ranked player in the tier their rating after their last match lies in
# (app.rating.tiers.Tiers.base); the others none. The version says which settings placed it.
RETIERED = f"""tier = CASE WHEN r.matches >= m.min_matches_for_leaderboard
                             THEN {base_tier_sql(conservative_sql("r.mu", "r.sigma"))} END,
               tier_version = m.tier_version"""
# Every row of the mode behind its tier settings, in one statement: for writers that hold the
# mode's exclusive lock already (a replay that rated with settings changed since it read them).
_RETIER_BEHIND = text(f"""
    UPDATE ratings r SET {RETIERED}
    FROM modes m WHERE m.name = :mode AND r.mode = :mode AND r.tier_version <> m.tier_version
""")
_RECOUNT_TIERS = text("""
    WITH gone AS (DELETE FROM tier_deltas WHERE mode = :mode)
    INSERT INTO tier_deltas (mode, tier, version, delta)
    SELECT mode, tier, tier_version, count(*) FROM ratings WHERE mode = :mode AND tier IS NOT NULL
    GROUP BY 1, 2, 3
""")


# -- a re-tier in batches (app.leaderboards.retier) -----------------------------------------

_TIER_VERSION = text("SELECT tier_version FROM modes WHERE name = :mode")
# The rows behind the mode's tier settings, as ranges of ids [first, last) of about `size`
# each (the first open below, the last above).
_BEHIND_BOUNDS = text("""
    SELECT player_id FROM (
        SELECT r.player_id, row_number() OVER (ORDER BY r.player_id) AS n
        FROM ratings r JOIN modes m ON m.name = r.mode
        WHERE r.mode = :mode AND r.tier_version <> m.tier_version
    ) AS behind WHERE n % :size = 1 ORDER BY player_id
""")
# In the order match posts lock ratings (app.matches.repository: mode, player id), so a batch
# and a post that share players never deadlock; only the rows still behind.
_LOCK_BEHIND = text("""
    SELECT r.player_id FROM ratings r JOIN modes m ON m.name = r.mode
    WHERE r.mode = :mode AND r.tier_version <> m.tier_version
      AND (CAST(:first AS varchar) IS NULL OR r.player_id >= :first)
      AND (CAST(:last AS varchar) IS NULL OR r.player_id < :last)
    ORDER BY r.mode, r.player_id
    FOR UPDATE OF r
""")
# A row a match re-tiered meanwhile is at the mode's version already and is left alone. Per
# row, a pure function of its rating and the settings: the tier triggers count each move.
_RETIER_LOCKED = text(f"""
    UPDATE ratings r SET {RETIERED}
    FROM modes m WHERE m.name = :mode AND r.mode = :mode AND r.player_id = ANY(CAST(:players AS varchar[]))
      AND r.tier_version <> m.tier_version
""")


async def tier_version(session: AsyncSession, mode: str) -> int | None:
    """The mode's tier settings' version; None for an unknown mode."""
    return (await session.execute(_TIER_VERSION, {"mode": mode})).scalar_one_or_none()


async def behind_ranges(session: AsyncSession, mode: str, size: int) -> list[tuple[str | None, str | None]]:
    """The rows behind the mode's tier settings as ranges of about `size` ids ([] for none)."""
    bounds: list[str | None] = [
        row[0] for row in (await session.execute(_BEHIND_BOUNDS, {"mode": mode, "size": size}))
    ]
    if not bounds:
        return []
    bounds[:1] = [None]
    return list(zip(bounds, [*bounds[1:], None], strict=True))


async def retier_range(session: AsyncSession, mode: str, first: str | None, last: str | None) -> int:
    """Re-tier the rows behind the mode's tier settings with ids in [first, last): lock them in
    the posts' order, then place each afresh. The number re-tiered."""
    locked = [
        row[0] for row in await session.execute(_LOCK_BEHIND, {"mode": mode, "first": first, "last": last})
    ]
    if not locked:
        return 0
    result = await session.execute(_RETIER_LOCKED, {"mode": mode, "players": locked})
    return int(result.rowcount)  # type: ignore[attr-defined]


async def bulk(session: AsyncSession, on: bool) -> None:
    """Stop (or resume) the per-statement counting, for a rewrite that recounts after."""
    await session.execute(_BULK, {"on": "on" if on else "off"})


async def recount(session: AsyncSession, mode: str, retier: bool = False) -> None:
    """Rebuild the mode's counts (leaderboard and tiers) from its ratings, and the tiers of rows
    behind the mode's tier settings from scratch when asked (`retier`: one statement;
    app.leaderboards.retier does it in batches without the exclusive lock).

    The caller holds app.db.locks.lock_mode, so no writer counts concurrently."""
    await bulk(session, True)
    if retier:
        await session.execute(_RETIER_BEHIND, {"mode": mode})
    await session.execute(_RECOUNT, {"mode": mode})
    await session.execute(_RECOUNT_TIERS, {"mode": mode})
    await bulk(session, False)


# A mode whose leaderboard or tier deltas have many rows to fold (a re-tier job adds tier
# deltas only, a few per batch).
_BLOATED = text("""
    SELECT mode FROM leaderboard_deltas GROUP BY mode
    HAVING count(*) > 2 * count(DISTINCT bucket) + 64
    UNION
    SELECT mode FROM tier_deltas GROUP BY mode
    HAVING count(*) > 2 * count(DISTINCT (tier, version)) + 64
""")
_TRY_LOCK = text(f"SELECT pg_try_advisory_xact_lock({COMPACT_LOCK_CLASS}, hashtext(CAST(:mode AS varchar)))")
# Deltas committed so far fold into one row per bucket. Deltas of transactions still
# in flight are not visible to the DELETE and stay as they are: the sums never change.
_COMPACT = text("""
    WITH gone AS (DELETE FROM leaderboard_deltas WHERE mode = :mode RETURNING bucket, delta)
    INSERT INTO leaderboard_deltas (mode, bucket, delta)
    SELECT :mode, bucket, sum(delta) FROM gone GROUP BY bucket HAVING sum(delta) <> 0
""")


_COMPACT_TIERS = text("""
    WITH gone AS (DELETE FROM tier_deltas WHERE mode = :mode RETURNING tier, version, delta)
    INSERT INTO tier_deltas (mode, tier, version, delta)
    SELECT :mode, tier, version, sum(delta) FROM gone GROUP BY tier, version HAVING sum(delta) <> 0
""")


async def modes_to_compact(session: AsyncSession) -> list[str]:
    return [row[0] for row in (await session.execute(_BLOATED)).all()]


async def compact(session: AsyncSession, mode: str) -> bool:
    """Fold the mode's deltas; False when another process is already at it."""
    if not (await session.execute(_TRY_LOCK, {"mode": mode})).scalar_one():
        return False
    await session.execute(_COMPACT, {"mode": mode})
    await session.execute(_COMPACT_TIERS, {"mode": mode})
    return True
