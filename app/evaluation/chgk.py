"""Loaders for the team quiz ("What? Where? When?") tournaments: the `chgk/` folder
of a datasets directory (app/evaluation/datasets.py)."""

from __future__ import annotations

import csv
import gzip
from collections import defaultdict
from pathlib import Path

from app.evaluation.tournaments import Tournament


def rating_site(directory: Path) -> list[Tournament]:
    """rating.chgk.info results: team ids only, so each team plays as one player.

    Positions like 3.5 are places shared by tied teams. Tournaments are ordered by their
    start date (from rating_tournaments.csv when a result row has none), then id.
    """
    dates: dict[str, str] = {}
    with (directory / "rating_tournaments.csv").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            dates[row["tournament_id"]] = row["date_start"]
    teams: dict[str, list[tuple[str, float]]] = defaultdict(list)
    with gzip.open(directory / "rating_team_results.csv.gz", "rt", encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            if not row["position"]:
                continue
            tournament = row["tournament_id"]
            if row["date_start"] and tournament not in dates:
                dates[tournament] = row["date_start"]
            teams[tournament].append((f"team:{row['team_id']}", float(row["position"])))
    dated = sorted((t for t in teams if dates.get(t)), key=lambda t: (dates[t], int(t)))
    out = []
    for tournament in dated:
        entries = teams[tournament]
        if len(entries) < 2:
            continue
        out.append(
            Tournament(f"rating:{tournament}", [[team] for team, _ in entries], [r for _, r in entries])
        )
    return out


def european_cup(directory: Path) -> list[Tournament]:
    """European Cup team results with their rosters (teams without a roster are left out).

    Teams that shared a place have equal rank_min.
    """
    rosters: dict[tuple[str, str], list[str]] = defaultdict(list)
    with (directory / "ec_rosters.csv").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            rosters[(row["tournament_id"], row["team_entry_id"])].append(f"player:{row['player_rating_id']}")
    entries: dict[str, list[tuple[list[str], float]]] = defaultdict(list)
    dates: dict[str, str] = {}
    with (directory / "ec_chgk_results.csv").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle):
            roster = rosters.get((row["tournament_id"], row["team_entry_id"]))
            if not roster or not row["rank_min"]:
                continue
            dates[row["tournament_id"]] = row["date"]
            entries[row["tournament_id"]].append((roster, float(row["rank_min"])))
    out = []
    for tournament in sorted(entries, key=lambda t: (dates[t], int(t))):
        teams = entries[tournament]
        if len(teams) >= 2:
            out.append(Tournament(f"ec:{tournament}", [r for r, _ in teams], [rank for _, rank in teams]))
    return out
