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


def atp(datasets: Path) -> MatchHistory:
    """ATP singles, winner first, without walkovers and the 199999 placeholder."""
    out = MatchHistory("atp", [], [], [])
    with gzip.open(
        datasets / "atp" / "atp_singles_1968_2024.csv.gz", "rt", encoding="utf-8", newline=""
    ) as handle:
        for row in csv.DictReader(handle):
            score = row["score"]
            if any(mark in score for mark in WALKOVERS) or PLACEHOLDER in (row["winner_id"], row["loser_id"]):
                continue
            out.composition.append([[row["winner_id"]], [row["loser_id"]]])
            out.results.append([1.0, 0.0])
            out.times.append(_day(row["date"]))
    return out


LOADERS = {"chess": chess, "football": football, "atp": atp}
