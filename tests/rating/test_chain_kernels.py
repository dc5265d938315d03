"""The straight-line chain kernels against the loop they specialise (inference.chain_sweeps)."""

from __future__ import annotations

import math
import random

import pytest

from app.rating import Rating, TrueSkill
from app.rating.chain_kernels import MAX_LINKS, kernel
from app.rating.inference import ChainMessages, chain_sweeps, update_plain_ratings


def random_chain(rng: random.Random, links: int) -> tuple[list[float], list[float], list[float], list[bool]]:
    """Priors, margins and ties of a chain like a match's: teams of 1-5 players, some tied."""
    variances = [rng.uniform(0.5, 150.0) for _ in range(links + 1)]
    means = [rng.uniform(-40.0, 240.0) for _ in range(links + 1)]
    margins = [rng.choice([0.0, rng.uniform(0.05, 6.0)]) for _ in range(links)]
    ties = [margin > 0.0 and rng.random() < 0.4 for margin in margins]
    return variances, means, margins, ties


def loop_messages(
    variances: list[float],
    means: list[float],
    margins: list[float],
    ties: list[bool],
    tolerance: float,
    sweeps: int,
) -> tuple[list[float], list[float]]:
    messages = ChainMessages.empty(len(variances))
    prior_pi = [1.0 / v for v in variances]
    prior_tau = [m / v for m, v in zip(means, variances, strict=True)]
    chain_sweeps(prior_pi, prior_tau, margins, ties, messages, tolerance, sweeps)
    return messages.received()


def posteriors(
    variances: list[float], means: list[float], msg_pi: list[float], msg_tau: list[float]
) -> list[tuple[float, float]]:
    """Each variable's posterior (mean, standard deviation)."""
    out = []
    for v, m, p, t in zip(variances, means, msg_pi, msg_tau, strict=True):
        pi = 1.0 / v + p
        out.append(((m / v + t) / pi, math.sqrt(1.0 / pi)))
    return out


@pytest.mark.parametrize("links", range(1, MAX_LINKS + 1))
def test_every_kernel_reaches_the_loops_fixed_point(links: int) -> None:
    rng = random.Random(links)
    for _ in range(20):
        chain = random_chain(rng, links)
        fixed = posteriors(*chain[:2], *loop_messages(*chain, 0.0, 400))
        ours = posteriors(*chain[:2], *kernel(links)(*chain, 0.0, 400))
        for (m1, s1), (m2, s2) in zip(ours, fixed, strict=True):
            assert m1 == pytest.approx(m2, rel=1e-11, abs=1e-10)
            assert s1 == pytest.approx(s2, rel=1e-11)


def test_the_kernels_stopping_rule_stays_within_the_tolerance_of_the_fixed_point() -> None:
    rng = random.Random(7)
    worst = 0.0
    for _ in range(600):
        links = rng.randint(2, 12)
        chain = random_chain(rng, links)
        fixed = posteriors(*chain[:2], *kernel(links)(*chain, 0.0, 1000))
        stopped = posteriors(*chain[:2], *kernel(links)(*chain, 1e-9, 200))
        loop = posteriors(*chain[:2], *loop_messages(*chain, 1e-9, 200))
        for (m1, s1), (m2, s2), (m3, s3) in zip(stopped, fixed, loop, strict=True):
            worst = max(worst, abs(m1 - m2), abs(s1 - s2))
            # no further from the fixed point than the loop's whole-sweep test leaves it
            assert abs(m1 - m2) <= max(10 * abs(m3 - m2), 1e-9)
            assert abs(s1 - s2) <= max(10 * abs(s3 - s2), 1e-9)
    assert worst <= 1e-8


def test_straddling_draws_are_rated_alike_from_either_side() -> None:
    """The kernel writes out straddling draws with signed t; mirroring a chain (negating
    every mean and reversing it) must mirror the posteriors exactly."""
    rng = random.Random(3)
    for links in (1, 2, 5):
        for _ in range(50):
            variances, means, margins, _ = random_chain(rng, links)
            margins = [rng.uniform(0.5, 6.0) for _ in margins]
            ties = [True] * links
            means = [rng.uniform(-3.0, 3.0) for _ in means]
            ours = posteriors(variances, means, *kernel(links)(variances, means, margins, ties, 0.0, 60))
            mirrored_means = [-m for m in reversed(means)]
            mirrored = posteriors(
                variances[::-1],
                mirrored_means,
                *kernel(links)(variances[::-1], mirrored_means, margins[::-1], ties, 0.0, 60),
            )
            for (m1, s1), (m2, s2) in zip(ours, reversed(mirrored), strict=True):
                assert m1 == pytest.approx(-m2, abs=1e-12)
                assert s1 == pytest.approx(s2, rel=1e-12)


def test_the_plain_path_equals_the_weighted_path_with_unit_weights_bit_for_bit() -> None:
    rng = random.Random(11)
    env = TrueSkill(draw_probability=0.2)
    for _ in range(300):
        count = rng.randint(3, 30)
        groups = [
            tuple(Rating(rng.uniform(0, 50), rng.uniform(0.5, 9)) for _ in range(rng.randint(1, 4)))
            for _ in range(count)
        ]
        ranks = [rng.randint(0, count // 2) for _ in range(count)]
        plain = update_plain_ratings(
            groups, ranks, env.beta, env.tau**2, env.draw_z, env.tolerance, env.max_sweeps
        )
        weighted = env.rate(groups, ranks, weights=[[1.0] * len(g) for g in groups])
        # Bit for bit: the service posts with weights and replays without them.
        assert [tuple(team) for team in weighted] == plain


def test_kernels_cover_only_their_lengths() -> None:
    with pytest.raises(ValueError, match="1 to 24 factors"):
        kernel(0)
    with pytest.raises(ValueError, match="1 to 24 factors"):
        kernel(MAX_LINKS + 1)
    assert kernel(3) is kernel(3)
