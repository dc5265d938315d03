"""Oracle: trueskill 0.4.5 on 2,000 random matches (2-10 teams of 1-5, ties, weights, priors).

The oracle runs with exact normal functions (its built-in erfc is only good to 1e-7) and
min_delta = 1e-12, so it iterates to its cap of 10 sweeps. For the 2,000 matches they are the
standard library's (`math.erfc`, `statistics.NormalDist`), handed to it as a backend tuple
(the largest difference from ours is then 6.9e-9 in a rating). Its scipy backend is as exact,
but its call overhead per value made this one test take two minutes instead of 15 s.
"""

from __future__ import annotations

import math
import random
from statistics import NormalDist

import pytest
import trueskill

from app.rating import Rating, TrueSkill, quality_1vs1, rate_1vs1

CASES = 2000
# The matches are checked in this many tests, every SHARES-th each, so that pytest-xdist
# spreads them over its workers.
SHARES = 8
_NORMAL = NormalDist()


def _cdf(x: float, mu: float = 0.0, sigma: float = 1.0) -> float:
    return 0.5 * math.erfc((mu - x) / (sigma * math.sqrt(2.0)))


def _pdf(x: float, mu: float = 0.0, sigma: float = 1.0) -> float:
    return math.exp(-0.5 * ((x - mu) / sigma) ** 2) / (sigma * math.sqrt(2.0 * math.pi))


def _ppf(p: float, mu: float = 0.0, sigma: float = 1.0) -> float:
    return mu + sigma * _NORMAL.inv_cdf(p)


EXACT = (_cdf, _pdf, _ppf)


def random_match(
    rng: random.Random,
) -> tuple[list[list[tuple[float, float]]], list[int], list[list[float]], float]:
    draw_probability = rng.choice([0.0, 0.05, 0.1, 0.25, 0.5])
    count = rng.randint(2, 10)
    teams = [
        [(rng.uniform(-10, 60), rng.uniform(0.3, 12)) for _ in range(rng.randint(1, 5))] for _ in range(count)
    ]
    if draw_probability > 0:
        ranks = [rng.randint(0, count - 1) for _ in range(count)]
    else:
        ranks = rng.sample(range(count), count)
    weights = [[rng.choice([1.0, 1.0, rng.uniform(0.05, 1.0)]) for _ in team] for team in teams]
    return teams, ranks, weights, draw_probability


@pytest.mark.parametrize("share", range(SHARES))
def test_rate_and_quality_agree_with_trueskill(share: int) -> None:
    rng = random.Random(20261122)
    matches = [random_match(rng) for _ in range(CASES)]
    worst_rating = 0.0
    worst_quality = 0.0
    for teams, ranks, weights, p in matches[share::SHARES]:
        ours = TrueSkill(draw_probability=p)
        peer = trueskill.TrueSkill(draw_probability=p, backend=EXACT)
        mine = ours.rate([[Rating(*r) for r in t] for t in teams], ranks, weights)
        theirs = peer.rate(
            [[peer.create_rating(*r) for r in t] for t in teams], ranks, weights, min_delta=1e-12
        )
        for a, b in zip(mine, theirs, strict=True):
            for x, y in zip(a, b, strict=True):
                worst_rating = max(worst_rating, abs(x.mu - y.mu), abs(x.sigma - y.sigma))
        q_mine = ours.quality([[Rating(*r) for r in t] for t in teams], weights)
        q_theirs = peer.quality([[peer.create_rating(*r) for r in t] for t in teams], weights)
        worst_quality = max(worst_quality, abs(q_mine - q_theirs))
    assert worst_rating <= 1e-6
    assert worst_quality <= 1e-9


@pytest.mark.parametrize("drawn", [False, True])
def test_rate_1vs1_and_expose_match_the_peer(drawn: bool) -> None:
    peer = trueskill.TrueSkill(backend="scipy")
    ours = TrueSkill()
    a, b = rate_1vs1(Rating(30, 4), Rating(22, 7), drawn=drawn, env=ours)
    pa, pb = trueskill.rate_1vs1(peer.create_rating(30, 4), peer.create_rating(22, 7), drawn=drawn, env=peer)
    assert a.mu == pytest.approx(pa.mu, abs=1e-12)
    assert b.sigma == pytest.approx(pb.sigma, abs=1e-12)
    assert ours.expose(a) == pytest.approx(peer.expose(pa), abs=1e-12)
    assert quality_1vs1(a, b, env=ours) == pytest.approx(peer.quality_1vs1(pa, pb), abs=1e-12)
