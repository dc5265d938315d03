"""SQL for bulk imports: COPY straight into matches and match_players, in one transaction."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.bulk import driver
from app.imports.reading import Parsed

NULL = "\\N"  # COPY text's null


async def taken(session: AsyncSession, match_ids: list[str]) -> dict[str, tuple[str, dt.datetime]]:
    """The given match ids that are already recorded: their fingerprint and played_at."""
    conn = await driver(session)
    async with conn.cursor() as cursor:
        await cursor.execute(
            "SELECT match_id, body_hash, played_at FROM matches WHERE match_id = ANY(%s)", (match_ids,)
        )
        return {row[0]: (row[1], row[2]) for row in await cursor.fetchall()}


# A stored participant: (team, player id, rank, weight, coefficient).
Participant = tuple[int, str, float, float, float | None]


async def participants(session: AsyncSession, match_ids: list[str]) -> dict[str, list[Participant]]:
    """The stored participants of the given matches (by match id)."""
    conn = await driver(session)
    out: dict[str, list[Participant]] = {match_id: [] for match_id in match_ids}
    async with conn.cursor() as cursor:
        await cursor.execute(
            "SELECT m.match_id, mp.team, mp.player_id, mp.rank, mp.weight, mp.coefficient"
            " FROM matches m JOIN match_players mp ON mp.match_pk = m.id WHERE m.match_id = ANY(%s)",
            (match_ids,),
        )
        for match_id, *row in await cursor.fetchall():
            out[match_id].append((row[0], row[1], row[2], row[3], row[4]))
    return out


async def load(
    session: AsyncSession, mode: str, matches: Sequence[Parsed], prior: tuple[float, float]
) -> None:
    """COPY matches and their participants. Matches are unrated: no stored response, and
    before = after = the prior, until a replay rates them."""
    conn = await driver(session)
    async with conn.cursor() as cursor:
        # Keys drawn up front, so participants need no join back to their match.
        await cursor.execute("SELECT nextval('matches_id_seq') FROM generate_series(1, %s)", (len(matches),))
        keys = [row[0] for row in await cursor.fetchall()]
        # COPY text built directly: ids are validated to [A-Za-z0-9._:@-], so nothing needs
        # escaping, and one write per chunk costs a fraction of a write_row per row.
        async with cursor.copy(
            "COPY matches (id, match_id, mode, played_at, body_hash, quality, response) FROM STDIN"
        ) as copy:
            await copy.write(
                "".join(
                    f"{key}\t{m.match_id}\t{mode}\t{m.played_at.isoformat()}\t{m.body_hash}\t0\t{{}}\n"
                    for key, m in zip(keys, matches, strict=True)
                )
            )
        mu, sigma = prior
        tail = f"\t{mu!r}\t{sigma!r}\t{mu!r}\t{sigma!r}\n"
        async with cursor.copy(
            "COPY match_players (match_pk, player_id, mode, team, rank, weight, coefficient,"
            " mu_before, sigma_before, mu_after, sigma_after) FROM STDIN"
        ) as copy:
            await copy.write(
                "".join(
                    f"{key}\t{player}\t{mode}\t{team}\t{rank!r}\t{weight!r}\t"
                    f"{NULL if coefficient is None else repr(coefficient)}{tail}"
                    for key, m in zip(keys, matches, strict=True)
                    for team, (members, rank) in enumerate(zip(m.teams, m.ranks, strict=True))
                    for player, weight, coefficient in members
                )
            )


async def add_players(session: AsyncSession, names: list[str]) -> None:
    conn = await driver(session)
    await conn.execute(
        "INSERT INTO players (id) SELECT unnest(CAST(%s AS varchar[])) ON CONFLICT DO NOTHING",
        (sorted(names),),
    )
