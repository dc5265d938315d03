"""The team-tournament evaluation of seed 002 §4 (app/evaluation)."""

from __future__ import annotations

import pytest

from app.cli import main
from app.evaluation import chgk, synthetic
from app.evaluation.tournaments import Parameters, compare, wrong_pair_share
from tests.conftest import SHARED

CHGK = SHARED / "datasets" / "chgk"


def test_wrong_pair_share_counts_pairs_in_different_places() -> None:
    # Places: a first, b and c tied, d last. Pairs in different places: 5.
    ranks = [1, 2, 2, 3]
    assert wrong_pair_share([4, 3, 2, 1], ranks) == 0.0
    assert wrong_pair_share([1, 2, 3, 4], ranks) == 1.0
    # Only d above c is wrong; a equal to b is half wrong.
    assert wrong_pair_share([5, 5, 1, 2], ranks) == pytest.approx(1.5 / 5)
    assert wrong_pair_share([1, 2], [1, 1]) is None


def test_loaders_read_the_chgk_files() -> None:
    cup = chgk.european_cup(CHGK)
    assert len(cup) == 15
    assert all(4 <= len(roster) <= 8 for t in cup for roster in t.rosters)
    assert sum(len(t.rosters) for t in cup) == 396
    site = chgk.rating_site(CHGK)
    assert len(site) == 1009, "the dated tournaments"
    assert sum(len(t.rosters) for t in site) == 146_585
    assert all(len(r) == 1 for t in site[:50] for r in t.rosters)
    assert any(len(set(t.ranks)) < len(t.ranks) for t in site), "shared places are kept"


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
    results = {r.label.split("(")[-1].rstrip(")"): r for r in compare(tournaments, Parameters())}
    last = {name: r.mean_of_last(20) for name, r in results.items()}
    assert last["TS2a"] < last["TSa"]  # type: ignore[operator]
    assert last["TS2b"] < last["TSb"]  # type: ignore[operator]


def test_the_command_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["evaluate-tournaments", "--source", "chgk-ec", "--chgk-dir", str(CHGK)]) == 0
    out = capsys.readouterr().out
    assert "## chgk-ec: 15 tournaments, 396 team entries" in out
    assert "| tie layer, size-penalised mean (TS2b) |" in out


def test_history_loaders_read_the_match_files() -> None:
    from app.evaluation import histories

    football = histories.football(SHARED / "datasets")
    assert len(football.composition) == 49_520
    assert football.draw_share == pytest.approx(0.2273, abs=1e-4)
    atp = histories.atp(SHARED / "datasets")
    assert 193_000 < len(atp.composition) < 194_996, "walkovers and the placeholder are dropped"
    assert all(r == [1.0, 0.0] for r in atp.results[:100])
    assert atp.times == sorted(atp.times)
