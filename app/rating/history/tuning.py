"""Hyperparameters by evidence (seed 001 §3.8, Fig. 4b): the sigma and gamma, and optionally
the draw probability, under which the observed history is most probable.

The search is coordinate-wise: a golden-section search of log evidence over one parameter
at a time (on a log scale for sigma and gamma), for a few rounds. Log evidence is that of
the smoothed history after `iterations` sweeps. Every evaluation is recorded, so the
search path can be shown next to the answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from app.rating.golden_section import golden_section_max
from app.rating.history.history import Composition, History


@dataclass(frozen=True, slots=True)
class Trial:
    sigma: float
    gamma: float
    p_draw: float
    log_evidence: float


@dataclass(frozen=True, slots=True)
class Bounds:
    sigma: tuple[float, float] = (0.05, 50.0)
    gamma: tuple[float, float] = (1e-4, 3.0)
    p_draw: tuple[float, float] = (1e-3, 0.9)


def fit_hyperparameters(
    composition: Composition,
    results: Sequence[Sequence[float]] | None = None,
    times: Sequence[float] | None = None,
    *,
    sigma: float = 6.0,
    gamma: float = 0.03,
    p_draw: float = 0.0,
    fit_p_draw: bool = False,
    mu: float = 0.0,
    beta: float = 1.0,
    iterations: int = 10,
    rounds: int = 2,
    steps: int = 10,
    bounds: Bounds = Bounds(),
    progress: Callable[[float], None] = lambda _: None,
) -> tuple[Trial, list[Trial]]:
    """The best (sigma, gamma[, p_draw]) found and every trial on the way, in order.
    `progress` hears the share of the search done after each trial (of the most it can run:
    a point tried before is not run again)."""
    if fit_p_draw and p_draw <= 0.0:
        p_draw = 0.1
    path: list[Trial] = []
    cache: dict[tuple[float, float, float], Trial] = {}
    names = ["sigma", "gamma"] + (["p_draw"] if fit_p_draw else [])
    calls = [0]
    most = 1 + rounds * len(names) * (2 + steps)

    def evaluate(point: Trial) -> Trial:
        key = (point.sigma, point.gamma, point.p_draw)
        if key not in cache:
            history = History(
                composition,
                results,
                times,
                mu=mu,
                sigma=point.sigma,
                beta=beta,
                gamma=point.gamma,
                p_draw=point.p_draw,
            )
            history.convergence(iterations=iterations)
            cache[key] = replace(point, log_evidence=history.log_evidence())
            path.append(cache[key])
        calls[0] += 1
        progress(calls[0] / most)
        return cache[key]

    best = evaluate(Trial(sigma, gamma, p_draw, -math.inf))
    for _ in range(rounds):
        for name in names:
            low, high = getattr(bounds, name)
            logarithmic = name != "p_draw"

            def at(x: float, name: str = name, logarithmic: bool = logarithmic, start: Trial = best) -> Trial:
                value = math.exp(x) if logarithmic else x
                return evaluate(replace(start, **{name: value}))

            scale: Callable[[float], float] = math.log if logarithmic else float
            candidate = golden_section_max(at, scale(low), scale(high), steps, _evidence)
            if candidate.log_evidence > best.log_evidence:
                best = candidate
    return best, path


def _evidence(trial: Trial) -> float:
    return trial.log_evidence
