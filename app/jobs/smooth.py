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
import math
from dataclasses import dataclass

from app import collection
from app.jobs.repository import Played
from app.progress import Progress
from app.rating.history import Gaussian, History, Player

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
# Defaults of a smooth job and of the `smooth` command.
EPSILON = 1e-6
ITERATIONS = 1000
# Seconds per match of building the history (its online pass) and of reading the curves out,
# for the bar's pace while they run (app/progress.py; bench/progress.py measures them on ATP
# singles: docs/benchmarks.md, "Long work's progress").
BUILD_S = 15e-6
CURVES_S = 2e-6


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


class Way:
    """The share of a smooth's sweeps done. Those left are estimated from how fast the distance
    to the fixed point shrinks: by about a constant factor r a sweep, so log(distance/epsilon)
    / -log(r) remain, r measured over the last WINDOW sweeps (accelerated sweeps make one
    sweep's ratio noisy). Each sweep moves the share at least by its part of what is left at
    the iteration cap, so it moves every sweep even while the estimate falls back."""

    WINDOW = 8

    def __init__(self, epsilon: float, iterations: int) -> None:
        self.epsilon, self.iterations = epsilon, iterations
        self.distances: list[float] = []
        self.share = 0.0

    def __call__(self, sweeps: int, distance: float) -> float:
        self.distances.append(distance)
        floor = self.share + (1.0 - self.share) / max(self.iterations - sweeps + 1, 1)
        self.share = min(1.0, max(floor, 1.0 if distance <= self.epsilon else self._estimate(sweeps)))
        return self.share

    def _estimate(self, sweeps: int) -> float:
        recent = self.distances[-self.WINDOW - 1 :]
        then, now = recent[0], recent[-1]
        # No rate: a distance not measured (inf) at either end of the window, or one that grew
        # over it (an extrapolation overshot).
        if len(recent) < 2 or not (0.0 < self.epsilon < now < then < math.inf):
            return 0.0
        rate = (now / then) ** (1.0 / (len(recent) - 1))
        left = max(math.log(now / self.epsilon) / -math.log(rate), 1.0)  # one sweep at least
        return sweeps / (sweeps + min(left, self.iterations - sweeps))


def smooth(
    matches: list[Played],
    seeds: dict[str, tuple[float, float]],
    params: Params,
    progress: Progress | None = None,
) -> Smoothed:
    """Smooth the history, moving `progress`: the history built (a share of 0.3), the sweeps
    (to 0.9, by those done of those estimated: `Way`) and the curves read out."""
    progress = progress or Progress()
    if not matches:
        return Smoothed([], 0.0, 0, 0.0, 0.0, False)
    count = len(matches)
    priors = {
        name: Player(Gaussian(mu, sigma), params.beta, params.gamma) for name, (mu, sigma) in seeds.items()
    }
    # The collector paused while the history is built and its curves read out: many objects,
    # few with cycles (app/collection.py). Not through the sweeps (NumPy), which may be long.
    with progress.part(0.3, "building", expect=BUILD_S * count), collection.paused():
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
    way = Way(params.epsilon, params.iterations)
    with progress.part(0.9, "sweeping") as sweeping:
        step, done = history.convergence(
            params.epsilon,
            params.iterations,
            progress=lambda sweeps, distance: sweeping.update(way(sweeps, distance)),
        )
    with progress.part(1.0, "curves", expect=CURVES_S * count), collection.paused():
        curves = [
            (name, [t for t, _ in points], [g.mu for _, g in points], [g.sigma for _, g in points])
            for name, points in history.learning_curves().items()
        ]
        evidence = history.log_evidence()
    return Smoothed(curves, evidence, done, max(step), history.distance, history.capped)
