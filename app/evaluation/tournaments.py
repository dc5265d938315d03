"""Seed 002 §4: how well each model predicts team tournaments, replayed in time order.

Before a tournament is rated, every model predicts each team's performance as its
team-performance function at the players' current means (Σ α_i·mu_i). A pair of teams that
finished in different places is predicted wrongly when the prediction orders it the other
way; an equal prediction counts as half wrong (a coin toss). The share of wrong pairs is
averaged over tournaments, over all of them and over the last 300, 150 and 50, as in
seed 002 Table 2.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from app.rating import Rating, TrueSkill


@dataclass(frozen=True, slots=True)
class Tournament:
    name: str
    rosters: list[list[str]]
    # Lower is better; equal ranks share a place.
    ranks: list[float]


@dataclass(frozen=True, slots=True)
class Variant:
    label: str
    tie_model: str
    team_performance: str


# The four models of the comparison the issue asks for (seed 002: TSa, TSb, TS2a, TS2b).
VARIANTS = (
    Variant("TrueSkill, sum (TSa)", "chain", "sum"),
    Variant("TrueSkill, mean (TSb)", "chain", "mean"),
    Variant("tie layer, sum (TS2a)", "tie-layer", "sum"),
    Variant("tie layer, size-penalised mean (TS2b)", "tie-layer", "size-penalised-mean"),
)
WINDOWS = (300, 150, 50)


@dataclass(frozen=True, slots=True)
class TournamentParameters:
    """The paper's scale: players start at N(3000, 1000²) with beta = 400 (seed 002 §4)."""

    mu: float = 3000.0
    sigma: float = 1000.0
    beta: float = 400.0
    tau: float = 10.0
    draw_probability: float = 0.1

    def environment(self, variant: Variant) -> TrueSkill:
        return TrueSkill(
            self.mu,
            self.sigma,
            self.beta,
            self.tau,
            self.draw_probability,
            tie_model=variant.tie_model,
            team_performance=variant.team_performance,
        )


def wrong_pair_share(predicted: Sequence[float], ranks: Sequence[float]) -> float | None:
    """The share of pairs in different places that `predicted` (higher is better) orders
    wrongly, ties in the prediction counting half; None when every team shares one place."""
    p = np.asarray(predicted, dtype=np.float64)
    r = np.asarray(ranks, dtype=np.float64)
    better = r[:, None] < r[None, :]  # i finished ahead of j
    pairs = int(better.sum())
    if pairs == 0:
        return None
    diff = p[:, None] - p[None, :]
    wrong = np.count_nonzero(better & (diff < 0)) + 0.5 * np.count_nonzero(better & (diff == 0))
    return float(wrong) / pairs


@dataclass(frozen=True, slots=True)
class Result:
    label: str
    shares: list[float]
    seconds: float

    def mean_of_last(self, count: int | None) -> float | None:
        values = self.shares if count is None else self.shares[-count:]
        if count is not None and len(self.shares) < count:
            return None
        return sum(values) / len(values)


def replay(
    tournaments: Sequence[Tournament],
    env: TrueSkill,
    label: str,
    progress: Callable[[float], None] = lambda _: None,
) -> Result:
    """Predict, then rate, every tournament in order; the per-tournament wrong shares.
    `progress` hears the share of the tournaments done after each."""
    ratings: dict[str, Rating] = {}
    prior = env.create_rating()
    shares: list[float] = []
    elapsed = 0.0
    for number, tournament in enumerate(tournaments, 1):
        progress((number - 1) / max(len(tournaments), 1))
        groups = [[ratings.get(p, prior) for p in roster] for roster in tournament.rosters]
        alphas = env.performance.coefficients(groups, [[1.0] * len(g) for g in groups], None)
        predicted = [
            sum(a * r.mu for a, r in zip(al, g, strict=True)) for al, g in zip(alphas, groups, strict=True)
        ]
        share = wrong_pair_share(predicted, tournament.ranks)
        if share is None:
            continue
        shares.append(share)
        started = time.perf_counter()
        rated = env.rate(groups, tournament.ranks)
        elapsed += time.perf_counter() - started
        for roster, team in zip(tournament.rosters, rated, strict=True):
            for player, rating in zip(roster, team, strict=True):
                ratings[player] = rating
    return Result(label, shares, elapsed)


def compare(
    tournaments: Sequence[Tournament],
    parameters: TournamentParameters,
    progress: Callable[[float], None] = lambda _: None,
) -> list[Result]:
    """Every variant's replay; `progress` hears the share done after each tournament."""
    out = []
    for number, variant in enumerate(VARIANTS):

        def done(share: float, number: int = number) -> None:
            progress((number + share) / len(VARIANTS))

        out.append(replay(tournaments, parameters.environment(variant), variant.label, done))
    return out


def table(results: Sequence[Result]) -> str:
    """Seed 002 Table 2's layout: percent of wrongly predicted pairs."""
    count = len(results[0].shares) if results else 0
    lines = [
        f"| model ({count} tournaments) | all | last 300 | last 150 | last 50 | rating time |",
        "|---|---|---|---|---|---|",
    ]
    for result in results:
        cells = []
        for window in (None, *WINDOWS):
            value = result.mean_of_last(window)
            cells.append("—" if value is None else f"{100 * value:.1f}")
        lines.append(f"| {result.label} | {' | '.join(cells)} | {result.seconds:.1f} s |")
    return "\n".join(lines)
