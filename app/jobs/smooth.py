"""Smooth: TrueSkill Through Time over a mode's whole history (seed 001).

A mode's matches become one History: a batch per UTC day, drift gamma² per day between
a player's consecutive days, priors from seeds or the mode's prior, ranks as scores
(higher is better) and partial play as weights. The result is each player's smoothed
posterior on every day they played, and the model's log evidence.

A smooth converges by default: it sweeps until the curves are estimated to be within
EPSILON of the model's fixed point (History.convergence), or until ITERATIONS sweeps have
run; the result says which, and the distance reached.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from app.jobs.repository import Played
from app.rating.history import Gaussian, History, Player

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
# Defaults of a smooth job and of the `smooth` command.
EPSILON = 1e-6
ITERATIONS = 1000


@dataclass(frozen=True, slots=True)
class Params:
    mu: float
    sigma: float
    beta: float
    gamma: float
    p_draw: float
    iterations: int
    epsilon: float


@dataclass(frozen=True, slots=True)
class Smoothed:
    curves: list[tuple[str, list[float], list[float], list[float]]]  # player, days, mu, sigma
    log_evidence: float
    iterations: int
    last_step: float
    tolerance: float  # the estimated distance to the fixed point (inf if not yet measurable)
    capped: bool  # the iteration cap stopped it before the tolerance asked for


def day(at: dt.datetime) -> float:
    """Days since 1970-01-01 UTC of the match's UTC date: one batch per day."""
    return float((at.astimezone(dt.UTC).date() - EPOCH.date()).days)


def at_day(days: float) -> dt.datetime:
    return EPOCH + dt.timedelta(days=days)


def smooth(
    matches: list[Played],
    seeds: dict[str, tuple[float, float]],
    params: Params,
    progress: Callable[[float], None] = lambda _: None,
) -> Smoothed:
    if not matches:
        return Smoothed([], 0.0, 0, 0.0, 0.0, False)
    priors = {
        name: Player(Gaussian(mu, sigma), params.beta, params.gamma) for name, (mu, sigma) in seeds.items()
    }
    history = History(
        [m.teams for m in matches],
        results=[[-rank for rank in m.ranks] for m in matches],
        times=[day(m.played_at) for m in matches],
        priors=priors,
        mu=params.mu,
        sigma=params.sigma,
        beta=params.beta,
        gamma=params.gamma,
        p_draw=params.p_draw,
        weights=[m.weights for m in matches],
    )
    # The caller hands over its only reference (app/jobs/service.run_smooth): free the input now.
    del matches
    progress(0.1)
    step, done = history.convergence(
        params.epsilon,
        params.iterations,
        progress=lambda sweeps: progress(0.1 + 0.8 * sweeps / params.iterations),
    )
    curves = [
        (name, [t for t, _ in points], [g.mu for _, g in points], [g.sigma for _, g in points])
        for name, points in history.learning_curves().items()
    ]
    return Smoothed(curves, history.log_evidence(), done, max(step), history.distance, history.capped)
