"""Leaderboards: pages by mu − k·sigma and a player's exact rank with neighbours."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from app import pagination
from app.errors import NotFound, UnknownMode, ValidationFailed
from app.leaderboards import repository
from app.leaderboards.repository import Row
from app.leaderboards.schemas import Entry, LeaderboardPage, Standing, TierCount, TierCounts
from app.schemas import RatingOut


def entry(rank: int, row: Row) -> Entry:
    """A leaderboard row as answered (live boards and archived seasons alike)."""
    return Entry(
        rank=rank,
        player_id=row.player_id,
        rating=RatingOut(mu=row.mu, sigma=row.sigma, conservative=row.conservative),
        matches=row.matches,
        tier=row.tier,
    )


def _encode(row: Row, rank: int) -> str:
    return pagination.encode_values([row.conservative, row.player_id, rank])


def _decode(cursor: str) -> tuple[float, str, int]:
    conservative, player_id, rank = pagination.decode_values(cursor, ((float, int), str, int))
    return float(conservative), player_id, rank


async def _min_matches(session: AsyncSession, mode: str) -> int:
    least = await repository.min_matches(session, mode)
    if least is None:
        raise UnknownMode(mode)
    return least


async def _rules(session: AsyncSession, mode: str) -> repository.Rules:
    found = await repository.rules(session, mode)
    if found is None:
        raise UnknownMode(mode)
    return found


async def leaderboard(
    session: AsyncSession, mode: str, limit: int, cursor: str | None, tier: str | None = None
) -> LeaderboardPage:
    """A page of the leaderboard; with `tier`, of that tier's players, ranked within it."""
    rules = await _rules(session, mode)
    min_matches, tiers = rules.min_matches, rules.tiers
    index = None
    if tier is not None:
        names = [t["name"] for t in tiers]
        if tier not in names:
            msg = f"mode {mode!r} has no tier {tier!r}" + (
                f" (its tiers: {', '.join(names)})" if names else ""
            )
            raise ValidationFailed(f"query.tier: {msg}", errors=[{"loc": ["query", "tier"], "msg": msg}])
        index = names.index(tier)
    after = None if cursor is None else _decode(cursor)
    names = [t["name"] for t in tiers]
    found = await repository.page(
        session, mode, min_matches, after and (after[0], after[1]), limit + 1, names, index
    )
    rows = found.rows
    first = 1 if after is None else after[2] + 1
    page = rows[:limit]
    entries = [entry(first + i, row) for i, row in enumerate(page)]
    more = len(rows) > limit
    return LeaderboardPage(
        entries=entries,
        next_cursor=_encode(page[-1], entries[-1].rank) if more else None,
        rescoring=rules.rescoring if found.rescoring is None else found.rescoring,
    )


async def tier_counts(session: AsyncSession, mode: str) -> TierCounts:
    """How many ranked players each of the mode's tiers holds, from the counts the writes keep."""
    tiers = (await _rules(session, mode)).tiers
    counts = await repository.tier_counts(session, mode)
    return TierCounts(
        tiers=[
            TierCount(name=t["name"], min=t["min"], players=counts.get(i, 0)) for i, t in enumerate(tiers)
        ],
        retiering=counts.get(None, 0),
    )


async def sizes(session: AsyncSession) -> dict[str, int]:
    return await repository.sizes(session)


async def size(session: AsyncSession, mode: str) -> int:
    await _min_matches(session, mode)
    return await repository.size(session, mode)


async def standing(session: AsyncSession, mode: str, player_id: str, around: int) -> Standing:
    # One statement reads everything (the mode's rules too); only a miss asks whether the
    # mode exists, to say which of the two is unknown.
    found = await repository.standing(session, mode, player_id, around)
    if found is None:
        await _min_matches(session, mode)
        raise NotFound(f"player {player_id!r} has no rating in mode {mode!r}")
    if found.me.matches < found.min_matches:
        raise NotFound(
            f"player {player_id!r} is not on the leaderboard of {mode!r}: "
            f"{found.me.matches} matches of the {found.min_matches} it needs"
        )
    rank = found.ahead + 1
    entries = [entry(rank - 1 - i, row) for i, row in enumerate(found.above)][::-1]
    entries.append(entry(rank, found.me))
    entries += [entry(rank + 1 + i, row) for i, row in enumerate(found.below)]
    return Standing(
        rank=rank,
        total=found.total,
        percentile=100.0 * (found.total - rank) / found.total,
        entries=entries,
        rescoring=found.rescoring,
    )
