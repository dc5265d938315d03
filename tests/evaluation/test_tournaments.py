"""The team-tournament evaluation of seed 002 §4 (app/evaluation)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from app.cli import main
from app.evaluation import chgk, synthetic
from app.evaluation.tournaments import VARIANTS, TournamentParameters, compare, wrong_pair_share
from tests.conftest import DATASETS

CHGK = DATASETS / "chgk"


def test_wrong_pair_share_counts_pairs_in_different_places() -> None:
    # Places: a first, b and c tied, d last. Pairs in different places: 5.
    ranks = [1, 2, 2, 3]
    assert wrong_pair_share([4, 3, 2, 1], ranks) == 0.0
    assert wrong_pair_share([1, 2, 3, 4], ranks) == 1.0
    # Only d above c is wrong; a equal to b is half wrong.
    assert wrong_pair_share([5, 5, 1, 2], ranks) == pytest.approx(1.5 / 5)
    assert wrong_pair_share([1, 2], [1, 1]) is None


def test_the_european_cup_loader_reads_the_shipped_files() -> None:
    cup = chgk.european_cup(CHGK)
    assert len(cup) == 15
    assert all(4 <= len(roster) <= 8 for t in cup for roster in t.rosters)
    assert sum(len(t.rosters) for t in cup) == 396
    assert all(player.startswith("player:") for t in cup for r in t.rosters for player in r)
    assert any(len(set(t.ranks)) < len(t.ranks) for t in cup), "shared places are kept"


def test_the_rating_site_loader_keeps_dated_tournaments_in_date_order(tmp_path: Path) -> None:
    """rating.chgk.info results are not shipped (no licence stated), so rows in their layout:
    a date from the tournament list or the result row, shared places as midpoints."""
    (tmp_path / "rating_tournaments.csv").write_text(
        "tournament_id,name,date_start,date_end,type,questions_total,n_teams\n"
        "7,Late,2004-05-01,2004-05-01,x,36,3\n"
        "9,Undated,,,x,36,2\n"
        "11,Alone,2003-01-01,2003-01-01,x,36,1\n"
    )
    rows = [
        "tournament_id,date_start,team_id,team_name,questions_total,position,included_in_rating",
        "7,,1,A,20,1,1",
        "7,,2,B,18,2.5,1",
        "7,,3,C,18,2.5,1",
        "7,,4,D,0,,1",  # no position: left out
        "8,2003-09-01,2,B,30,1,1",  # dated by its result rows only
        "8,2003-09-01,5,E,10,2,1",
        "9,,1,A,10,1,1",  # no date anywhere: left out
        "9,,2,B,5,2,1",
        "11,2003-01-01,1,A,10,1,1",  # a single team: nothing to compare
    ]
    with gzip.open(tmp_path / "rating_team_results.csv.gz", "wt", encoding="utf-8") as handle:
        handle.write("\n".join(rows) + "\n")
    site = chgk.rating_site(tmp_path)
    assert [t.name for t in site] == ["rating:8", "rating:7"]
    assert site[0].rosters == [["team:2"], ["team:5"]]
    assert site[1].rosters == [["team:1"], ["team:2"], ["team:3"]]
    assert site[1].ranks == [1.0, 2.5, 2.5], "shared places are kept"


def test_synthetic_tournaments_have_the_asked_shape() -> None:
    tournaments = synthetic.tournaments(6, min_teams=100, max_teams=300, seed=3)
    for tournament in tournaments:
        assert 100 <= len(tournament.rosters) <= 300
        assert all(1 <= len(r) <= 6 for r in tournament.rosters)
        assert 30 <= len(set(tournament.ranks)) <= 60


def test_the_tie_layer_gets_fewer_pairs_wrong_when_ties_are_common() -> None:
    """Seed 002's finding on data whose skills are known: both tie-layer variants beat
    TrueSkill's chain with the same team function."""
    tournaments = synthetic.tournaments(40, players=1500, min_teams=100, max_teams=200, seed=5)
    results = {r.label.split("(")[-1].rstrip(")"): r for r in compare(tournaments, TournamentParameters())}
    last = {name: r.mean_of_last(20) for name, r in results.items()}
    assert last["TS2a"] < last["TSa"]  # type: ignore[operator]
    assert last["TS2b"] < last["TSb"]  # type: ignore[operator]


def test_a_comparison_reports_its_progress_after_every_tournament() -> None:
    tournaments = synthetic.tournaments(5, min_teams=60, max_teams=80, seed=4)
    shares: list[float] = []
    compare(tournaments, TournamentParameters(), shares.append)
    assert len(shares) == 5 * len(VARIANTS)
    assert shares == sorted(shares) and shares[0] == 0.0 and shares[-1] < 1.0


def test_the_command_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate-tournaments", "--source", "chgk-ec", "--datasets", str(DATASETS)]) == 0
    out = capsys.readouterr().out
    assert "## chgk-ec: 15 tournaments, 396 team entries" in out
    assert "| tie layer, size-penalised mean (TS2b) |" in out


def test_history_loaders_read_the_shipped_match_files() -> None:
    """(The ATP loader is checked on rows in its layout in tests/imports/test_import.py.)"""
    from app.evaluation import histories

    football = histories.football(DATASETS)
    assert len(football.composition) == 49_520
    assert football.draw_share == pytest.approx(0.2273, abs=1e-4)
    assert football.times == sorted(football.times)
    chess = histories.chess(DATASETS)
    assert len(chess.composition) == 1000
    assert chess.draw_share == pytest.approx(0.135)
    assert {tuple(r) for r in chess.results} == {(1.0, 0.0), (0.5, 0.5), (0.0, 1.0)}
