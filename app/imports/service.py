"""Bulk import of historical matches: validate the whole file, then load it in one
transaction with COPY (all of it or none), then replay the mode so the matches are rated.

An import can be repeated: a row whose match id is already recorded with the same meaning
and instant is already there and is counted, not loaded again; so is a row whose stored match
differs only where a player has been erased since (app.erasure renamed them to a pseudonym:
the row is skipped, so the erased id never comes back). A file all of whose rows are already
there changes nothing (no load, no replay). A used id with another meaning is a wrong row, and
then nothing is written."""

from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app import collection
from app.db.bulk import unbounded
from app.ids import ID_PATTERN, is_pseudonym
from app.imports import repository
from app.imports.reading import Parsed, Read, Skip
from app.imports.reading import read_file as reading_file
from app.jobs import service as jobs
from app.modes import service as modes
from app.modes.schemas import ModeUpdate
from app.progress import Progress

_ID = re.compile(ID_PATTERN)


@dataclass
class ImportRejected(Exception):
    """Nothing was written: these rows (by line) are wrong."""

    errors: list[str]
    total: int = 0

    def __str__(self) -> str:
        """One wrong row a line (at most reading.MAX_ERRORS of them), then their count."""
        text = "nothing was imported:\n" + "\n".join(self.errors)
        if not self.total:  # not rows of the file (a match id taken meanwhile)
            return text
        listed = f", the first {len(self.errors)} listed" if self.total > len(self.errors) else ""
        return text + f"\n{self.total} {'row is' if self.total == 1 else 'rows are'} wrong{listed}"


@dataclass
class Imported:
    matches: int  # loaded by this import
    players: int
    skipped: int
    created_mode: bool
    already_recorded: int = 0  # rows of the file that an earlier import (or post) recorded
    # Rows whose stored match names, where the row names a player, that player's pseudonym:
    # they were erased since it was recorded (skipped; also counted in already_recorded).
    erased_since: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    replay: dict[str, Any] | None = None


CHUNK = 20_000


def erased_since(match: Parsed, stored: list[repository.Participant]) -> bool:
    """Whether the stored match says what `match` says but for players erased since: each
    participant the same (team, rank, weight, coefficient; a score as its negated rank, as
    the fingerprint reads it), the players the same except where the stored one is a
    pseudonym (app.erasure), at least one."""
    if not any(is_pseudonym(player) for _, player, _, _, _ in stored):
        return False
    kept = {(team, player) for team, player, _, _, _ in stored if not is_pseudonym(player)}

    def line(
        team: int, player: str, rank: float, weight: float, coefficient: float | None
    ) -> tuple[Any, ...]:
        named = player if (team, player) in kept else ""
        return (team, named, rank + 0.0, weight + 0.0, 1.0 if coefficient is None else coefficient + 0.0)

    ours = sorted(
        line(team, player, rank, weight, coefficient)
        for team, (members, rank) in enumerate(zip(match.teams, match.ranks, strict=True))
        for player, weight, coefficient in members
    )
    theirs = sorted(line(*participant) for participant in stored)
    return ours == theirs


@dataclass
class Loaded:
    """What one chunk's load found already recorded."""

    already: int = 0
    erased_since: int = 0


async def _load(
    session: AsyncSession,
    mode: str,
    chunk: list[Parsed],
    prior: tuple[float, float],
    weighted: bool,
    read: Read,
    players: set[str],
) -> Loaded:
    """Copy one chunk's new matches, unless it has a coefficient the mode cannot use or a match
    id taken by another match; what of it was already recorded."""
    if not weighted:
        for match in chunk:
            if any(c is not None for team in match.teams for _, _, c in team):
                read.error(match.line, "coefficients need a mode with team_performance 'weighted'")
    recorded = await repository.taken(session, [m.match_id for m in chunk])
    new, differing = [], []
    for match in chunk:
        stored = recorded.get(match.match_id)
        if stored is None:
            new.append(match)
        elif stored != (match.body_hash, match.played_at):
            differing.append(match)
    found = Loaded(already=len(chunk) - len(new))
    if differing:
        bodies = await repository.participants(session, [m.match_id for m in differing])
        for match in differing:
            if recorded[match.match_id][1] == match.played_at and erased_since(match, bodies[match.match_id]):
                found.erased_since += 1
            else:
                read.error(match.line, f"match_id {match.match_id!r} is already recorded with another body")
    if read.error_count:
        return found
    if new:
        await repository.load(session, mode, new, prior)
        players.update(p for match in new for team in match.teams for p, _, _ in team)
    return found


# Seconds per match of the load's statements (a chunk's COPY, the players, the commit), for
# the bar's pace while they run (app/progress.py), measured by bench/progress.py
# (docs/benchmarks.md, "Long work's progress").
LOAD_S = 25e-6
COMMIT_S = 5e-6
# Where reading and loading end, as shares of an import's progress (the replay takes the rest).
READ_END, LOAD_END = 0.3, 0.55


async def import_file(
    sessions: async_sessionmaker[AsyncSession],
    path: Path,
    mode: str,
    columns: dict[str, str] | None = None,
    skips: list[Skip] | None = None,
    replay: bool = True,
    progress: Progress | None = None,
) -> Imported:
    """Import every match of `path` into `mode` (created with the defaults if missing), moving
    `progress` as it goes: reading and validating, loading, replaying."""
    progress = progress or Progress()
    started = time.perf_counter()
    if not _ID.match(mode):
        raise ValueError(f"--mode {mode!r}: a mode name is 1-128 characters from [A-Za-z0-9._:@-]")
    # Records without cycles, one per row, held until loaded (app/collection.py).
    with collection.paused():
        return await _import(sessions, path, mode, columns, skips, replay, progress, started)


async def _import(
    sessions: async_sessionmaker[AsyncSession],
    path: Path,
    mode: str,
    columns: dict[str, str] | None,
    skips: list[Skip] | None,
    replay: bool,
    progress: Progress,
    started: float,
) -> Imported:
    ends = (READ_END, LOAD_END) if replay else (READ_END / LOAD_END, 1.0)
    with progress.part(ends[0], "reading") as reading_part:
        read = await asyncio.to_thread(reading_file, path, mode, columns, skips, reading_part.update)
    if read.error_count:
        raise ImportRejected(read.errors, read.error_count)
    await progress.reached()
    players: set[str] = set()
    already = erased = 0
    count = len(read.matches)
    try:
        with progress.part(ends[1], "loading", expect=COMMIT_S * count) as loading:
            async with sessions() as session, session.begin():
                await unbounded(session)
                existing = await modes.find_mode(session, mode)
                created = existing is None
                row = existing or (await modes.put_mode(session, mode, ModeUpdate())).mode
                weighted = row.team_performance == "weighted"
                share = LOAD_S / (LOAD_S + COMMIT_S)
                # In chunks: every taken match id is found (and reported) before anything is kept.
                for start in range(0, count, CHUNK):
                    chunk = read.matches[start : start + CHUNK]
                    end = share * (start + len(chunk)) / count
                    with loading.part(end, expect=LOAD_S * len(chunk)):
                        found = await _load(
                            session, mode, chunk, (row.mu, row.sigma), weighted, read, players
                        )
                    already += found.already
                    erased += found.erased_since
                if read.error_count:
                    raise ImportRejected(read.errors, read.error_count)
                await repository.add_players(session, sorted(players))
    except psycopg.errors.UniqueViolation as exc:
        raise ImportRejected([f"a match id of the file was recorded while importing: {exc}"]) from None
    await progress.reached()
    loaded = time.perf_counter()
    result = Imported(count - already, len(players), read.skipped, created, already, erased)
    result.seconds = {"read_and_load": round(loaded - started, 3)}
    if replay and result.matches:
        with progress.part(1.0, "replaying") as replaying:
            result.replay = await jobs.run_replay(sessions, mode, replaying)
        result.seconds["replay"] = round(time.perf_counter() - loaded, 3)
    return result
