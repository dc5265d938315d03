"""SQL for erasing a player: what is removed, and what is renamed to the player's pseudonym.

Removed: the players row, ratings in every mode (the leaderboard trigger of migration 0003
counts them out in the same statement, so ranks and counts are exact at commit) and learning
curves. Renamed: every stored row of history that names the player (`pseudonymise`), so
other players' before/after values, stored responses and a replay stay as they were.
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


# A rating still waiting for its season switch's archive (migration 0009) is archived (and
# reset) first, so that the ended season's standings keep the player's row, under the pseudonym.
_ARCHIVE_PENDING = text(
    "SELECT season_catch_up(mode, ARRAY[CAST(:old AS varchar)]) FROM ratings WHERE player_id = :old"
)
# Archived season standings keep rank, rating and counts under the pseudonym: those attached
# (ranked), and those of a switch still filling its archive (not a partition yet).
_STANDINGS = text("UPDATE season_standings SET player_id = :new WHERE player_id = :old")


def _filling_standings(season_id: int) -> TextClause:
    return text(f"UPDATE {seasons.partition(season_id)} SET player_id = :new WHERE player_id = :old")


# Every table that keeps history naming a player, renamed in this order.
_RENAMES = [_ARCHIVE_PENDING, _MATCHES, _SEEDS, _STANDINGS]


async def hold_filling_archives(session: AsyncSession) -> None:
    """Keep the archives being filled from being ranked until commit: the rename below must
    reach their rows. Taken before the modes' locks, so that waiting for a ranking under way
    (seconds, on a big mode) holds no match post."""
    for season_id in await seasons.filling(session):
        await seasons.hold_filling(session, season_id)


async def pseudonymise(session: AsyncSession, player_id: str, pseudonym: str) -> None:
    """Rename the player to the pseudonym in every stored row that keeps history (_RENAMES,
    then the archives being filled). The caller holds every mode's lock: no switch starts an
    archive meanwhile."""
    params = {"old": player_id, "new": pseudonym}
    for statement in _RENAMES:
        await session.execute(statement, params)
    for season_id in await seasons.filling(session):
        # Held already, unless its switch committed after hold_filling_archives listed them.
        await seasons.hold_filling(session, season_id)
        await session.execute(_filling_standings(season_id), params)


async def remove(session: AsyncSession, player_id: str) -> None:
    """Delete the player, their ratings in every mode and their learning curves."""
    for statement in _REMOVE:
        await session.execute(statement, {"old": player_id})
