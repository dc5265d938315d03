"""Reading historical matches from CSV or JSONL files, with every bad row named by line.

Formats (a `.gz` file is read through gzip):
- JSONL: one match per line, the body of `POST /v1/matches` (`mode` may be omitted).
- CSV, one match per row (1v1): `played_at`, `winner`, `loser`; optional `match_id` and
  `draw` (1/true: the two tied).
- CSV, one player per row: `match_id`, `played_at`, `team`, `player`, and `rank` or
  `score`; optional `weight` and `coefficient`. A match's rows share its match_id.

`played_at` is RFC 3339, or a date (read as 00:00 UTC); a time without a zone is UTC.
Without a `match_id`, a row's match id comes from what it says (`content_id`), so a renamed
copy of a file gives the same ids and importing it again adds nothing. `columns` renames the
file's columns to these names, and `skips` drops rows whose column matches a regex.
"""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import hashlib
import io
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from app.ids import ID_PATTERN, is_pseudonym
from app.matches.fingerprint import match_fingerprint
from app.matches.schemas import FUTURE_SLACK, MatchIn, consistency_errors
from app.matches.service import body_hash, team_ranks

MAX_ERRORS = 50
# Lines read between two progress reports: a small share of a second of reading
# (docs/benchmarks.md, "Long work's progress").
TICK_LINES = 2_000
_ID = re.compile(ID_PATTERN)
# The mode's share of a derived id (the digest covers all of it): ids stay within 128 characters.
_MODE_PREFIX = 64


def content_id(mode: str, played_at: dt.datetime, fingerprint: str, occurrence: int) -> str:
    """The match id of a row that gives none: from its meaning (the mode, the instant and the
    fingerprint POST /v1/matches computes) and `occurrence`, how many rows of the same file
    said the same before it (a football file repeats a date, home and away). The line number
    and the file's name play no part, so a renamed or re-read copy gives the same ids."""
    instant = played_at.astimezone(dt.UTC).isoformat()
    digest = hashlib.sha256(f"{instant}\n{fingerprint}".encode()).hexdigest()[:24]
    return f"{mode[:_MODE_PREFIX]}:{digest}:{occurrence}"


@dataclass(frozen=True, slots=True)
class Skip:
    column: str
    pattern: re.Pattern[str]

    @classmethod
    def parse(cls, text: str) -> Skip:
        column, sep, pattern = text.partition("~")
        if not sep or not column:
            raise ValueError(f"--skip {text!r}: expected COLUMN~REGEX")
        try:
            return cls(column, re.compile(pattern))
        except re.error as exc:
            raise ValueError(f"--skip {text!r}: bad regex: {exc}") from None


@dataclass(slots=True)
class Parsed:
    """One valid match, as the loader needs it."""

    line: int
    match_id: str
    played_at: dt.datetime
    teams: list[list[tuple[str, float, float | None]]]  # (player, weight, coefficient)
    ranks: list[float]  # lower is better (scores negated)
    body_hash: str  # as POST /v1/matches computes it, so a later post of the same body is a retry

    @classmethod
    def of(cls, line: int, match: MatchIn) -> Parsed:
        assert match.played_at is not None  # every reader sets it
        return cls(
            line,
            match.match_id,
            match.played_at,
            [[(p.id, p.weight, p.coefficient) for p in team.players] for team in match.teams],
            team_ranks(match),
            body_hash(match),
        )


@dataclass(slots=True)
class Read:
    """The matches of a file, in file order, and what was wrong with it."""

    matches: list[Parsed] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    error_count: int = 0
    skipped: int = 0

    def error(self, line: int, message: str) -> None:
        self.error_count += 1
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(f"line {line}: {message}")


def _open(path: Path) -> tuple[IO[bytes], IO[str]]:
    """The file as stored (whose position says how far the reading is) and its text."""
    raw = path.open("rb")
    if path.suffix == ".gz":
        return raw, io.TextIOWrapper(gzip.GzipFile(fileobj=raw, mode="rb"), encoding="utf-8", newline="")
    return raw, io.TextIOWrapper(raw, encoding="utf-8", newline="")


def _reporting(
    lines: Iterable[str], raw: IO[bytes], size: int, progress: Callable[[float], None]
) -> Iterator[str]:
    """`lines`, reporting every TICK_LINES the share of the stored file read so far."""
    for number, line in enumerate(lines):
        if number % TICK_LINES == 0:
            progress(raw.tell() / size)
        yield line


def _played_at(text: str) -> dt.datetime:
    """Dates become midnight UTC, zone-less times UTC."""
    text = text.strip()
    if not text:
        raise ValueError("played_at is empty")
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"played_at {text!r} is not a date or an RFC 3339 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return moment


def _message(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}"


def _validated(read: Read, line: int, body: dict[str, Any]) -> None:
    try:
        match = MatchIn.model_validate(body)
    except ValidationError as exc:
        read.error(line, _message(exc))
        return
    problems = consistency_errors(match)
    if problems:
        where = ".".join(str(p) for p in problems[0]["loc"][1:])  # type: ignore[index]
        read.error(line, f"{where}: {problems[0]['msg']}")
        return
    read.matches.append(Parsed.of(line, match))


def _jsonl(handle: Iterable[str], mode: str, read: Read) -> None:
    for line, text in enumerate(handle, start=1):
        if not text.strip():
            continue
        try:
            body = json.loads(text)
        except json.JSONDecodeError as exc:
            read.error(line, f"not JSON: {exc.msg}")
            continue
        if not isinstance(body, dict):
            read.error(line, "expected a JSON object (a match)")
            continue
        if body.setdefault("mode", mode) != mode:
            read.error(line, f"mode {body['mode']!r} is not the mode being imported ({mode!r})")
            continue
        _validated(read, line, body)


def _rows(
    reader: Any, header: list[str], skips: list[tuple[int, re.Pattern[str]]], read: Read
) -> Iterator[tuple[int, list[str]]]:
    """(line, cells) of the rows that no skip drops; a short row is padded with empty cells."""
    width = len(header)
    for cells in reader:
        line = reader.line_num
        if not cells:
            continue
        if len(cells) < width:
            cells = cells + [""] * (width - len(cells))
        dropped = False
        for index, pattern in skips:
            if pattern.search(cells[index]):
                dropped = True
                break
        if dropped:
            read.skipped += 1
            continue
        yield line, cells


def _duels(rows: Iterator[tuple[int, list[str]]], where: dict[str, int], mode: str, read: Read) -> None:
    """One 1v1 match per row. Valid rows take a path without pydantic: the same checks, and
    the fingerprint POST /v1/matches would compute (tested against body_hash)."""
    latest = dt.datetime.now(dt.UTC) + FUTURE_SLACK
    at, win, lose = where["played_at"], where["winner"], where["loser"]
    ident, draw = where.get("match_id"), where.get("draw")
    dates: dict[str, dt.datetime | None] = {}
    seen: dict[tuple[dt.datetime, str], int] = {}
    for line, cells in rows:
        text = cells[at].strip()
        if text not in dates:
            try:
                parsed = _played_at(text)
                dates[text] = parsed if parsed <= latest else None
            except ValueError as exc:
                read.error(line, str(exc))
                continue
        winner, loser = cells[win].strip(), cells[lose].strip()
        given = cells[ident].strip() if ident is not None else ""
        drawn = draw is not None and cells[draw].strip().lower() in ("1", "true", "yes")
        moment = dates[text]
        teams: list[list[tuple[str, float, float | None]]] = [[(winner, 1.0, None)], [(loser, 1.0, None)]]
        ranks = [0.0, 0.0 if drawn else 1.0]
        fingerprint = match_fingerprint(mode, teams, ranks)
        match_id = given
        if not given and moment is not None:
            occurrence = seen.get((moment, fingerprint), 0)
            seen[moment, fingerprint] = occurrence + 1
            match_id = content_id(mode, moment, fingerprint, occurrence)
        if (
            moment is None
            or winner == loser
            or not (_ID.match(match_id) and _ID.match(winner) and _ID.match(loser))
            or is_pseudonym(winner)
            or is_pseudonym(loser)
        ):
            body = {
                "match_id": match_id or "-",  # the id is not what is wrong with the row
                "mode": mode,
                "played_at": _played_at(text).isoformat(),
                "teams": [
                    {"players": [{"id": winner}], "rank": 0},
                    {"players": [{"id": loser}], "rank": 0 if drawn else 1},
                ],
            }
            _validated(read, line, body)  # the full validation, for its messages
            continue
        read.matches.append(Parsed(line, match_id, moment, teams, ranks, fingerprint))


def _number(row: dict[str, str], name: str) -> float | None:
    text = row.get(name, "")
    return None if text == "" else float(text)


def _one_per_player(
    rows: Iterator[tuple[int, list[str]]],
    where: dict[str, int],
    mode: str,
    read: Read,
    progress: Callable[[float], None],
) -> None:
    grouped: dict[str, tuple[int, dict[str, Any]]] = {}
    for line, cells in rows:
        row = {name: cells[index].strip() for name, index in where.items()}
        match_id = row.get("match_id", "")
        try:
            team = int(row.get("team", ""))
            rank, score = _number(row, "rank"), _number(row, "score")
            weight, coefficient = _number(row, "weight"), _number(row, "coefficient")
            played_at = _played_at(row.get("played_at", ""))
        except ValueError as exc:
            read.error(line, f"{exc}")
            continue
        if team < 0 or team > 999:
            read.error(line, f"team {team} is outside 0..999")
            continue
        first, body = grouped.setdefault(
            match_id, (line, {"match_id": match_id, "mode": mode, "played_at": played_at, "teams": {}})
        )
        if body["played_at"] != played_at:
            read.error(line, f"played_at differs from line {first} of match {match_id!r}")
            continue
        entry = body["teams"].setdefault(team, {"players": []})
        for key, value in (("rank", rank), ("score", score)):
            if value is not None:
                entry[key] = value
        player: dict[str, Any] = {"id": row.get("player", "")}
        if weight is not None:
            player["weight"] = weight
        if coefficient is not None:
            player["coefficient"] = coefficient
        entry["players"].append(player)
    for number, (line, body) in enumerate(grouped.values()):
        if number % TICK_LINES == 0:
            progress(number / len(grouped))
        numbers = sorted(body["teams"])
        if numbers != list(range(len(numbers))):
            read.error(line, f"match {body['match_id']!r}: teams must be numbered 0..n-1, got {numbers}")
            continue
        body["teams"] = [body["teams"][n] for n in numbers]
        _validated(read, line, body)


def read_file(
    path: Path,
    mode: str,
    columns: dict[str, str] | None = None,
    skips: list[Skip] | None = None,
    progress: Callable[[float], None] = lambda _: None,
) -> Read:
    """Every match of the file, validated as POST /v1/matches validates a body; `progress`
    hears the share of the file read and validated every TICK_LINES lines."""
    read = Read()
    name = path.name.removesuffix(".gz")
    if not name.endswith((".csv", ".jsonl", ".ndjson")):
        raise ValueError(f"{path.name}: expected a .csv or .jsonl file (optionally .gz)")
    raw, handle = _open(path)
    size = max(path.stat().st_size, 1)
    with raw, handle:
        if name.endswith(".csv"):
            _csv(handle, raw, size, mode, columns or {}, skips or [], read, progress)
        else:
            _jsonl(_reporting(handle, raw, size, progress), mode, read)
    first_seen: dict[str, int] = {}
    for match in read.matches:
        if match.match_id in first_seen:
            read.error(
                match.line, f"match_id {match.match_id!r} is also on line {first_seen[match.match_id]}"
            )
        first_seen.setdefault(match.match_id, match.line)
    progress(1.0)
    return read


# A file of one player per row is read, then its matches validated: the share of its progress
# that the reading takes.
READ_SHARE = 0.6


def _csv(
    handle: IO[str],
    raw: IO[bytes],
    size: int,
    mode: str,
    columns: dict[str, str],
    skips: list[Skip],
    read: Read,
    progress: Callable[[float], None],
) -> None:
    per_player = False

    def reading(share: float) -> None:
        progress(share * READ_SHARE if per_player else share)

    reader = csv.reader(_reporting(handle, raw, size, reading))
    header = next(reader, None)
    if header is None:
        return
    renamed = {theirs: ours for ours, theirs in columns.items()}
    missing = [theirs for theirs in renamed if theirs not in header]
    missing += [s.column for s in skips if s.column not in header]
    if missing:
        raise ValueError(
            f"the file has no column {', '.join(map(repr, missing))}; it has {', '.join(header)}"
        )
    where = {renamed.get(name, name): index for index, name in enumerate(header)}
    rows = _rows(reader, header, [(header.index(s.column), s.pattern) for s in skips], read)
    if "winner" in where and "loser" in where and "played_at" in where:
        _duels(rows, where, mode, read)
    elif all(name in where for name in ("match_id", "played_at", "team", "player")):
        per_player = True
        _one_per_player(
            rows, where, mode, read, lambda share: progress(READ_SHARE + (1 - READ_SHARE) * share)
        )
    else:
        raise ValueError(
            "a CSV needs columns played_at, winner and loser (one match per row) or match_id, "
            f"played_at, team and player (one player per row); it has {', '.join(header)}"
        )
