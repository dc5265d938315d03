"""SQL for erasing a player: what is removed, and what is renamed to the player's pseudonym.

Removed: the players row, ratings in every mode (the leaderboard and tier triggers of
migrations 0003 and 0015 count them out in the same statement, so ranks and counts are exact
at commit), learning curves, and their rows of every archived season's standings (the ranks
below close up, the season's counts drop by one: issue 39). Renamed: every stored row of match
history that names the player (`pseudonymise`), so other players' before/after values, stored
responses and a replay stay as they were.
"""

from __future__ import annotations

from sqlalchemy import TextClause, text
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.locks import lock_mode
from app.matches.fingerprint import fingerprint_sql
from app.seasons import repository as seasons

_EXISTS = text("SELECT 1 FROM players WHERE id = :old")
_MODES = text("SELECT name FROM modes ORDER BY name")

_RENAMED = "CASE WHEN p.player_id = :old THEN CAST(:new AS varchar) ELSE p.player_id END"

# One statement for the player's matches: their participant rows are renamed, and each match's
# stored response (the player's entry in "players") and fingerprint (app.matches.fingerprint,
# over the participants as renamed) rewritten. Every part reads the snapshot from before the
# rename, hence the CASE in the fingerprint. A match imported and not yet rated has an empty
# response and keeps it. The response is stored as json (migration 0012) and edited as jsonb.
_MATCHES = text(f"""
    WITH moved AS (
        UPDATE match_players SET player_id = :new WHERE player_id = :old RETURNING match_pk
    ), fingerprints AS (
        SELECT m.id, {fingerprint_sql(_RENAMED)} AS fingerprint
        FROM moved JOIN matches m ON m.id = moved.match_pk JOIN match_players p ON p.match_pk = m.id
        GROUP BY m.id, m.mode
    )
    UPDATE matches m
    SET body_hash = f.fingerprint,
        response = CASE WHEN json_typeof(m.response -> 'players') = 'array' THEN CAST(jsonb_set(
            CAST(m.response AS jsonb), '{{players}}', (
                SELECT jsonb_agg(
                    CASE WHEN e.player ->> 'player_id' = :old
                         THEN jsonb_set(e.player, '{{player_id}}', to_jsonb(CAST(:new AS text)))
                         ELSE e.player END
                    ORDER BY e.n)
                FROM jsonb_array_elements(CAST(m.response AS jsonb) -> 'players')
                     WITH ORDINALITY AS e(player, n)))
            AS json)
        ELSE m.response END
    FROM fingerprints f WHERE m.id = f.id
""")

# A seed stays under the pseudonym: a replay starts the pseudonym where it started the
# player (migration 0008).
_SEEDS = text("UPDATE rating_seeds SET player_id = :new WHERE player_id = :old")

# Ratings first, by a statement of their own: the leaderboard trigger counts them out.
_REMOVE = [
    text("DELETE FROM ratings WHERE player_id = :old"),
    text("DELETE FROM learning_curves WHERE player_id = :old"),
    text("DELETE FROM players WHERE id = :old"),
]


async def exists(session: AsyncSession, player_id: str) -> bool:
    return (await session.execute(_EXISTS, {"old": player_id})).first() is not None


async def lock_every_mode(session: AsyncSession) -> None:
    """Every mode's rating lock, exclusively, in name order (one order for every taker of more
    than one). A match post holds its mode's lock shared from its claim to its commit, so once
    these are held no post is half-way, and posts for the player wait and then find them
    erased: each lands wholly before the erasure or wholly after it. Every mode, not only the
    player's: a post giving them a first rating in another mode races the same way. Rating
    overrides take the shared lock too; imports (COPY, no lock) do not, so an import naming
    the player should not run during their erasure."""
    for (mode,) in (await session.execute(_MODES)).all():
        await lock_mode(session, mode)


# An erased player has no place on any leaderboard, archived ones included: their row leaves
# every ranked season's standings, the ranked rows below theirs move up one, and the season's
# counts (players archived, players ranked) drop by one. Nothing keeps "last season's number
# one" to re-identify them by. A row of an archive still being filled is deleted, and the
# archive ranked later without it; a rating still waiting for its switch's archive is caught
# up first (archived there, and reset as the switch's counts expect), then deleted with it.
_ARCHIVE_PENDING = text(
    "SELECT season_catch_up(mode, ARRAY[CAST(:old AS varchar)]) FROM ratings WHERE player_id = :old"
)
_STANDINGS = text("""
    WITH gone AS (
        DELETE FROM season_standings WHERE player_id = :old RETURNING season_id, rank
    ), closed AS (
        UPDATE season_standings s SET rank = s.rank - 1
        FROM gone g WHERE s.season_id = g.season_id AND g.rank IS NOT NULL AND s.rank > g.rank
    )
    UPDATE seasons s SET players = s.players - 1,
                         ranked = s.ranked - CASE WHEN g.rank IS NULL THEN 0 ELSE 1 END
    FROM gone g WHERE s.id = g.season_id
""")


def _filling_standings(season_id: int) -> TextClause:
    return text(f"DELETE FROM {seasons.partition(season_id)} WHERE player_id = :old")


# Every table that keeps match history naming a player, renamed in this order.
_RENAMES = [_ARCHIVE_PENDING, _MATCHES, _SEEDS]


async def hold_filling_archives(session: AsyncSession) -> None:
    """Keep the archives being filled from being ranked until commit: the rename below must
    reach their rows. Taken before the modes' locks, so that waiting for a ranking under way
    (seconds, on a big mode) holds no match post."""
    for season_id in await seasons.filling(session):
        await seasons.hold_filling(session, season_id)


async def pseudonymise(session: AsyncSession, player_id: str, pseudonym: str) -> None:
    """Rename the player to the pseudonym in every stored row that keeps match history
    (_RENAMES), and take them out of every season's archive, ranked or being filled. The
    caller holds every mode's lock: no switch starts an archive meanwhile."""
    params = {"old": player_id, "new": pseudonym}
    for statement in _RENAMES:
        await session.execute(statement, params)
    await session.execute(_STANDINGS, params)
    for season_id in await seasons.filling(session):
        # Held already, unless its switch committed after hold_filling_archives listed them.
        await seasons.hold_filling(session, season_id)
        await session.execute(_filling_standings(season_id), params)


async def remove(session: AsyncSession, player_id: str) -> None:
    """Delete the player, their ratings in every mode and their learning curves."""
    for statement in _REMOVE:
        await session.execute(statement, {"old": player_id})
