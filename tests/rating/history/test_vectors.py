"""tests/data/vectors/ttt_vectors.json: the trueskillthroughtime package's own tests."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.rating.history import Game, Gaussian, History, Player
from tests.conftest import VECTORS as VECTOR_DIR

VECTORS = json.loads((VECTOR_DIR / "ttt_vectors.json").read_text())


def close(got: float, expected: float, places: int | None) -> bool:
    if places is None:
        return abs(got - expected) < 1e-4  # the package's isapprox
    return round(abs(got - expected), places) == 0


def player(spec: dict[str, float]) -> Player:
    return Player(Gaussian(spec["mu"], spec["sigma"]), spec["beta"], spec["gamma"])


@pytest.mark.parametrize("case", VECTORS["game_cases"], ids=lambda c: c["name"])
def test_game_cases(case: dict[str, Any]) -> None:
    teams = [[player(p) for p in team] for team in case["teams"]]
    game = Game(teams, case["result"], case["p_draw"], case["weights"])
    if "expected_evidence" in case:
        assert close(game.evidence, case["expected_evidence"], case["places"])
    for team, expected_team in zip(game.posteriors(), case["expected"] or [], strict=False):
        for got, expected in zip(team, expected_team or [], strict=False):
            if expected is None:
                continue
            for value, want in zip((got.mu, got.sigma), expected, strict=True):
                if want is not None:
                    assert close(value, want, case["places"]), (got, expected)


def test_history_three_games_after_convergence() -> None:
    (case, _) = VECTORS["history_cases"]
    history = History(
        case["composition"], case["results"], mu=25.0, sigma=25 / 3, beta=25 / 6, gamma=25 / 300
    )
    history.convergence()
    for key, (mu, sigma) in case["expected"].items():
        batch, name = key.split(".")
        got = history.batches[int(batch.removeprefix("batch"))].posterior(name)
        assert close(got.mu, mu, case["places"]) and close(got.sigma, sigma, case["places"])


def test_history_readme_example_before_and_after_convergence() -> None:
    """Seed 001 Codes 8 and 9: TrueSkill's curves, then TTT's N(0, 2.395) for everyone."""
    (_, case) = VECTORS["history_cases"]
    history = History(case["composition"], **case["env"])
    for stage in ("expected_before_convergence", "expected_after_convergence"):
        if stage == "expected_after_convergence":
            history.convergence()
        curves = history.learning_curves()
        for name, points in case[stage].items():
            assert [t for t, _ in curves[name]] == [t for t, _ in points]
            for (_, got), (_, (mu, sigma)) in zip(curves[name], points, strict=True):
                assert round(got.mu, 3) == pytest.approx(mu, abs=1e-9)
                assert round(got.sigma, 3) == pytest.approx(sigma, abs=1e-9)
