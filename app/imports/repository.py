"""SQL for bulk imports: COPY into temporary tables, then insert in one transaction."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from sqlalchemy.ext.asyncio import AsyncSession

from app.jobs.repository import driver

MatchRow = tuple[int, str, object, str, str]  # line, match_id, played_at, body_hash, response
PlayerRow = tuple[str, str, int, float, float, float | None, float, float]
# match_id, player_id, team, rank, weight, coefficient, mu, sigma


async def stage(
    session: AsyncSession,
    matches: Iterable[MatchRow],
    players: Iterable[PlayerRow],
    progress: Callable[[int], None],
) -> None:
    conn = await driver(session)
    await conn.execute("""
        CREATE TEMP TABLE import_matches (line int, match_id varchar(128), played_at timestamptz,
                                          body_hash varchar(64), response jsonb) ON COMMIT DROP
    """)
    await conn.execute("""
        CREATE TEMP TABLE import_players (match_id varchar(128), player_id varchar(128), team int,
                                          rank float8, weight float8, coefficient float8, mu float8,
                                          sigma float8) ON COMMIT DROP
    """)
    async with conn.cursor() as cursor:
        async with cursor.copy(
            "COPY import_matches (line, match_id, played_at, body_hash, response) FROM STDIN"
        ) as copy:
            for n, row in enumerate(matches, start=1):
                await copy.write_row(row)
                if n % 5000 == 0:
                    progress(5000)
        async with cursor.copy(
            "COPY import_players (match_id, player_id, team, rank, weight, coefficient, mu, sigma) FROM STDIN"
        ) as copy:
            for player in players:
                await copy.write_row(player)


async def taken(session: AsyncSession, limit: int = 5) -> list[tuple[int, str]]:
    """(line, match_id) of staged matches whose id is already recorded."""
    conn = await driver(session)
    async with conn.cursor() as cursor:
        await cursor.execute(
            "SELECT i.line, i.match_id FROM import_matches i JOIN matches m USING (match_id)"
            " ORDER BY i.line LIMIT %s",
            (limit,),
        )
        return [(row[0], row[1]) for row in await cursor.fetchall()]


async def insert(session: AsyncSession, mode: str) -> None:
    conn = await driver(session)
    await conn.execute(
        "INSERT INTO players (id) SELECT DISTINCT player_id FROM import_players ON CONFLICT DO NOTHING"
    )
    await conn.execute(
        """
        INSERT INTO matches (match_id, mode, played_at, body_hash, quality, response)
        SELECT match_id, %s, played_at, body_hash, 0, response FROM import_matches ORDER BY line
        """,
        (mode,),
    )
    await conn.execute(
        """
        INSERT INTO match_players (match_pk, player_id, mode, team, rank, weight, coefficient,
                                   mu_before, sigma_before, mu_after, sigma_after)
        SELECT m.id, p.player_id, %s, p.team, p.rank, p.weight, p.coefficient, p.mu, p.sigma, p.mu, p.sigma
        FROM import_players p JOIN matches m USING (match_id)
        """,
        (mode,),
    )
