"""Bulk import of historical matches: validate the whole file, then load it in one
transaction with COPY (all of it or none), then replay the mode so the matches are rated."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.imports import reading, repository
from app.imports.reading import Read, Skip
from app.jobs import repository as jobs_repository
from app.jobs import service as jobs
from app.modes import service as modes
from app.modes.schemas import ModeUpdate
from app.progress import Bar


@dataclass
class ImportRejected(Exception):
    """Nothing was written: these rows (by line) are wrong."""

    errors: list[str]
    total: int = 0

    def __str__(self) -> str:
        more = f"\n... and {self.total - len(self.errors)} more" if self.total > len(self.errors) else ""
        return "nothing was imported:\n" + "\n".join(self.errors) + more


@dataclass
class Imported:
    matches: int
    players: int
    skipped: int
    created_mode: bool
    seconds: dict[str, float] = field(default_factory=dict)
    replay: dict[str, Any] | None = None


def _rows(
    read: Read, mu: float, sigma: float, weighted: bool
) -> tuple[list[repository.MatchRow], list[repository.PlayerRow], set[str]]:
    matches: list[repository.MatchRow] = []
    players: list[repository.PlayerRow] = []
    names: set[str] = set()
    for match in read.matches:
        if not weighted and any(c is not None for team in match.teams for _, _, c in team):
            read.error(match.line, "coefficients need a mode with team_performance 'weighted'")
            continue
        for team, (members, rank) in enumerate(zip(match.teams, match.ranks, strict=True)):
            for player, weight, coefficient in members:
                names.add(player)
                players.append((match.match_id, player, team, rank, weight, coefficient, mu, sigma))
        # Unrated until a replay: no stored response, and before = after = the prior.
        matches.append((match.line, match.match_id, match.played_at, match.body_hash, "{}"))
    return matches, players, names


async def import_file(
    sessions: async_sessionmaker[AsyncSession],
    path: Path,
    mode: str,
    columns: dict[str, str] | None = None,
    skips: list[Skip] | None = None,
    replay: bool = True,
    show: Callable[[str, float], Bar] | None = None,
) -> Imported:
    """Import every match of `path` into `mode` (created with the defaults if missing)."""
    started = time.perf_counter()
    read = reading.read_file(path, mode, columns, skips)
    if read.error_count:
        raise ImportRejected(read.errors, read.error_count)
    parsed = time.perf_counter()
    async with sessions() as session, session.begin():
        await jobs_repository.unbounded(session)
        existing = await modes.find_mode(session, mode)
        created = existing is None
        row = existing or await modes.put_mode(session, mode, ModeUpdate())
        rules = modes.rules_of(row)
        matches, players, names = _rows(read, row.mu, row.sigma, rules.env.team_performance == "weighted")
        if read.error_count:
            raise ImportRejected(read.errors, read.error_count)
        bar = show("loading", len(matches)) if show else None
        await repository.stage(session, matches, players, bar.advance if bar else lambda _: None)
        clashes = await repository.taken(session)
        if clashes:
            raise ImportRejected(
                [f"line {line}: match_id {mid!r} is already recorded" for line, mid in clashes]
            )
        await repository.insert(session, mode)
        if bar:
            bar.finish()
    loaded = time.perf_counter()
    result = Imported(len(matches), len(names), read.skipped, created)
    result.seconds = {"read": round(parsed - started, 3), "load": round(loaded - parsed, 3)}
    if replay:
        bar = show("replaying", 1.0) if show else None

        async def report(value: float) -> None:
            if bar:
                bar.set(value)

        result.replay = await jobs.run_replay(sessions, mode, report)
        if bar:
            bar.finish()
        result.seconds["replay"] = round(time.perf_counter() - loaded, 3)
    return result
