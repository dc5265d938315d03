"""Golden vectors from established implementations (tests/data/vectors, see its README) and seed 004."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from app.rating import Gaussian, Rating, TrueSkill, calc_draw_margin, quality_1vs1, rate_1vs1
from app.rating.gaussian import log_product_normalization, log_ratio_normalization
from app.rating.normal import cdf, pdf
from tests.conftest import VECTORS


def load(name: str) -> dict[str, Any]:
    path = VECTORS / name
    if not path.exists():
        pytest.fail(f"missing golden vectors {path}")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def almost(actual: float, expected: float, prec: int) -> bool:
    """sublee's almost(): round both to `prec` decimals, compare as integers, allow ±1."""
    scale = 10.0**prec
    return abs(round(actual * scale) - round(expected * scale)) <= 1


def precision_of(case: dict[str, Any]) -> int:
    text = case.get("tolerance", "almost(prec=3)")
    return int(text.split("prec=")[1].split(")")[0])


def sublee_env(spec: Any) -> TrueSkill:
    if spec == "default" or "draw_probability" not in spec:
        return TrueSkill()
    return TrueSkill(draw_probability=spec["draw_probability"])


SUBLEE = load("sublee_vectors.json")["cases"]


@pytest.mark.parametrize("case", SUBLEE, ids=[c["name"] for c in SUBLEE])
def test_sublee_case(case: dict[str, Any]) -> None:
    env = sublee_env(case["env"])
    teams = [[Rating(mu, sigma) for mu, sigma in team] for team in case["teams"]]
    prec = precision_of(case)
    result = env.rate(teams, ranks=case["ranks"], weights=case["weights"])
    for team in result:
        for rating in team:
            assert math.isfinite(rating.mu) and math.isfinite(rating.sigma) and rating.sigma > 0
    if case["expected"] is not None:
        for got_team, want_team in zip(result, case["expected"], strict=True):
            for got, (mu, sigma) in zip(got_team, want_team, strict=True):
                assert almost(got.mu, mu, prec), (got, mu)
                assert almost(got.sigma, sigma, prec), (got, sigma)
    if case["expected_quality"] is not None:
        quality = env.quality(teams, weights=case["weights"])
        assert almost(quality, case["expected_quality"], 3 if prec > 0 else prec), quality


MOSERWARE = load("moserware_vectors.json")


def moserware_env(info: Any) -> TrueSkill:
    if info == "default":
        return TrueSkill()
    return TrueSkill(info["mu0"], info["sigma0"], info["beta"], info["tau"], info["draw_probability"])


RATED = MOSERWARE["rating_cases"]


@pytest.mark.parametrize("case", RATED, ids=[c["name"] for c in RATED])
def test_moserware_case(case: dict[str, Any]) -> None:
    env = moserware_env(case["game_info"])
    teams = [[Rating(mu, sigma) for mu, sigma in team] for team in case["teams"]]
    result = env.rate(teams, ranks=case["ranks"], weights=case.get("partial_play"))
    if case["expected"] is None:
        assert all(math.isfinite(r.mu) and r.sigma > 0 for team in result for r in team)
        return
    for got_team, want_team in zip(result, case["expected"], strict=True):
        for got, (mu, sigma) in zip(got_team, want_team, strict=True):
            assert got.mu == pytest.approx(mu, abs=1e-3)
            assert got.sigma == pytest.approx(sigma, abs=1e-3)
    if case["expected_match_quality"] is not None:
        assert env.quality(teams) == pytest.approx(case["expected_match_quality"], abs=5e-4)


@pytest.mark.parametrize("case", MOSERWARE["draw_margin_cases"])
def test_moserware_draw_margin(case: dict[str, float]) -> None:
    env = TrueSkill(beta=case["beta"], draw_probability=case["draw_probability"])
    assert calc_draw_margin(case["draw_probability"], 2, env) == pytest.approx(
        case["expected_margin"], abs=1e-6
    )


@pytest.mark.parametrize("case", MOSERWARE["gaussian_cases"], ids=lambda c: c["op"])
def test_moserware_gaussian(case: dict[str, Any]) -> None:
    op = case["op"]
    if op == "cdf":
        assert cdf(case["x"]) == pytest.approx(case["expected"], abs=1e-6)
        return
    if op == "pdf":
        assert pdf(case["x"]) == pytest.approx(case["expected"], abs=1e-6)
        return
    a, b = Gaussian(*case["a"]), Gaussian(*case["b"])
    if op in ("mul", "div"):
        got = a * b if op == "mul" else a / b
        assert got.mu == pytest.approx(case["expected"][0], abs=1e-6)
        assert got.sigma == pytest.approx(case["expected"][1], abs=1e-6)
    elif op == "log_product_normalization":
        assert log_product_normalization(a, b) == pytest.approx(case["expected"], abs=1e-6)
    elif op == "log_ratio_normalization":
        assert log_ratio_normalization(a, b) == pytest.approx(case["expected"], abs=1e-6)
    elif op == "absolute_difference":
        assert (a - b) == pytest.approx(case["expected"], abs=1e-6)
    else:
        pytest.fail(f"unknown gaussian op {op}")


def test_seed_004_worked_numbers() -> None:
    """The trueskill package docs (seed 004): 1v1, a draw, 1v2 and two qualities."""
    env = TrueSkill()
    r1, r2, r3 = Rating(), Rating(), Rating()
    new1, new2 = rate_1vs1(r1, r2, env=env)
    assert (round(new1.mu, 3), round(new1.sigma, 3)) == (29.396, 7.171)
    assert (round(new2.mu, 3), round(new2.sigma, 3)) == (20.604, 7.171)
    drew1, drew2 = rate_1vs1(r1, r2, drawn=True, env=env)
    assert (round(drew1.mu, 3), round(drew1.sigma, 3)) == (25.000, 6.458)
    assert (round(drew2.mu, 3), round(drew2.sigma, 3)) == (25.000, 6.458)
    (a,), (b, c) = env.rate([(r1,), (r2, r3)])
    assert (round(a.mu, 3), round(a.sigma, 3)) == (33.731, 7.317)
    assert (round(b.mu, 3), round(c.mu, 3)) == (16.269, 16.269)
    assert round(quality_1vs1(r1, r2, env=env), 3) == 0.447
    assert round(env.quality([(r1,), (r2, r3)]), 3) == 0.135
