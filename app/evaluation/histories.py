"""Match histories of a datasets directory (app/evaluation/datasets.py) in the shape History
takes: composition, results (higher is better) and times (days since 1970, or the year for the
chess file)."""

from __future__ import annotations

import csv
import datetime as dt
import gzip
from dataclasses import dataclass
from pathlib import Path

WALKOVERS = ("W/O", "Walkover")
PLACEHOLDER = "199999"


@dataclass(frozen=True, slots=True)
class MatchHistory:
    name: str
    composition: list[list[list[str]]]
    results: list[list[float]]
    times: list[float]

    @property
    def draw_share(self) -> float:
        return sum(1 for r in self.results if r[0] == r[1]) / max(len(self.results), 1)


def _day(text: str) -> float:
    return float((dt.date.fromisoformat(text) - dt.date(1970, 1, 1)).days)


def chess(datasets: Path) -> MatchHistory:
    """1850s chess (1,000 games, year granularity), white first; white_score 1, ½ or 0."""
    out = MatchHistory("chess", [], [], [])
    with (datasets / "chess" / "small_chessbase_1850_1855.csv").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            score = float(row["white_score"])
            out.composition.append([[row["white"]], [row["black"]]])
            out.results.append([score, 1.0 - score])
            out.times.append(float(row["year"]))
    return out


def football(datasets: Path) -> MatchHistory:
    """International football: home first, goals as scores (equal goals are a draw)."""
    out = MatchHistory("football", [], [], [])
    path = datasets / "football" / "international_results.csv"
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if not row["home_score"] or not row["away_score"]:
                continue
            home, away = float(row["home_score"]), float(row["away_score"])
            out.composition.append([[row["home_team"]], [row["away_team"]]])
            out.results.append(
                [float(home > away) + float(home == away), float(away > home) + float(home == away)]
            )
            out.times.append(_day(row["date"]))
    return out


# A tournament's rounds in the order they are played; ATP rows carry the tournament's start date
# only, so `rounds=True` places round k at start + k·ROUND_STEP days (the next tournament starts
# a whole day later at least). "ER" (early rounds) and "RR" (round robin, Davis Cup ties) come
# first, the bronze match with the final.
ROUNDS = {"ER": 0, "RR": 0, "R128": 1, "R64": 2, "R32": 3, "R16": 4, "QF": 5, "SF": 6, "F": 7, "BR": 7}
ROUND_STEP = 1.0 / 8.0
RETIREMENTS = ("RET", "DEF", "ABD")
DAVIS_CUP = "D"


@dataclass(frozen=True, slots=True)
class AtpExtract:
    """Which ATP singles matches a history holds, and at what times (the defaults are the
    evaluation's: tournament start dates, no walkovers, everything else kept)."""

    rounds: bool = False  # each round its own time within the tournament
    walkovers: bool = False  # keep matches never played (W/O)
    retirements: bool = True  # keep matches ended by a retirement, default or abandonment
    davis_cup: bool = True  # keep Davis Cup rubbers (tourney_level D)
    # Keep only matches between players who each play at least this many matches of the
    # extract (a population without occasional players; it reads the future, so it is a
    # control, not a way to predict).
    regulars: int = 0

    @property
    def label(self) -> str:
        parts = ["rounds" if self.rounds else "tournament dates"]
        parts += ["with walkovers"] if self.walkovers else []
        parts += [] if self.retirements else ["no retirements"]
        parts += [] if self.davis_cup else ["no Davis Cup"]
        parts += [f"players with ≥ {self.regulars} matches only"] if self.regulars else []
        return ", ".join(parts)


def atp(datasets: Path, extract: AtpExtract = AtpExtract()) -> MatchHistory:
    """ATP singles, winner first, without the 199999 placeholder (and, by default, without
    walkovers), in time order."""
    rows: list[tuple[float, str, str]] = []
    with gzip.open(
        datasets / "atp" / "atp_singles_1968_2024.csv.gz", "rt", encoding="utf-8", newline=""
    ) as handle:
        for row in csv.DictReader(handle):
            score = row["score"]
            if PLACEHOLDER in (row["winner_id"], row["loser_id"]):
                continue
            if not extract.walkovers and any(mark in score for mark in WALKOVERS):
                continue
            if not extract.retirements and any(mark in score for mark in RETIREMENTS):
                continue
            if not extract.davis_cup and row.get("tourney_level") == DAVIS_CUP:
                continue
            time = _day(row["date"])
            if extract.rounds:
                time += ROUND_STEP * ROUNDS.get(row.get("round", ""), 0)
            rows.append((time, row["winner_id"], row["loser_id"]))
    if extract.regulars:
        matches: dict[str, int] = {}
        for _, winner, loser in rows:
            matches[winner] = matches.get(winner, 0) + 1
            matches[loser] = matches.get(loser, 0) + 1
        rows = [r for r in rows if min(matches[r[1]], matches[r[2]]) >= extract.regulars]
    rows.sort(key=lambda r: r[0])  # stable: the file's order within a time
    out = MatchHistory("atp", [], [], [])
    for time, winner, loser in rows:
        out.composition.append([[winner], [loser]])
        out.results.append([1.0, 0.0])
        out.times.append(time)
    return out


LOADERS = {"chess": chess, "football": football, "atp": atp}
