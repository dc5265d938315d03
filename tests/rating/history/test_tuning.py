"""Hyperparameters by evidence (seed 001 Fig. 4b) on the 1850s chess games."""

from __future__ import annotations

import pytest

from app.cli import main
from app.evaluation import histories
from app.rating.history.tuning import fit_hyperparameters
from tests.conftest import DATASETS


def test_the_search_raises_the_evidence_and_reports_its_path() -> None:
    data = histories.chess(DATASETS)
    best, path = fit_hyperparameters(
        data.composition, data.results, data.times, p_draw=0.135, fit_p_draw=True, rounds=1, steps=6
    )
    assert path[0].sigma == 6.0 and path[0].gamma == 0.03
    assert best.log_evidence == max(t.log_evidence for t in path)
    assert best.log_evidence > path[0].log_evidence + 10.0
    assert best.sigma < 6.0, "six skill units is far wider than these players' spread"
    assert 0.05 < best.p_draw < 0.3, "near the 13.5% of games drawn"


def test_the_search_reports_its_progress_after_every_trial() -> None:
    data = histories.chess(DATASETS)
    shares: list[float] = []
    _, path = fit_hyperparameters(
        data.composition[:200],
        data.results[:200],
        data.times[:200],
        p_draw=0.135,
        rounds=1,
        steps=3,
        progress=shares.append,
    )
    most = 1 + 2 * (2 + 3)  # the first point, then per parameter two points and one per step
    assert len(shares) == most and shares[-1] == 1.0
    assert shares == sorted(shares)
    assert len(path) <= most  # a point tried again is not run again, but is counted


def test_fit_history_command(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["fit-history", "--source", "chess", "--limit", "300", "--rounds", "1", "--iterations", "3"])
    assert code == 0
    out = capsys.readouterr().out
    assert out.startswith("chess: 300 games, draws")
    assert "| trial | sigma | gamma | p_draw | log evidence |" in out
    assert "best: sigma=" in out
