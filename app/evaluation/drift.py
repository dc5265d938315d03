"""drift_per_day chosen by evidence: the service's online ratings over a match history.

Each game is rated as the service rates a replay of it (app.rating.levels with its Drift: sigma
drifted by gamma² per day since the player's last game, seed 001 eq. 4, then tau), at a
mode's defaults (mu 25, sigma 25/3, beta sigma/2, tau sigma/100, the history's draw share).
The online log evidence of a game is the log probability the ratings before it gave its
result (seed 001 eq. 1, as `fit_trueskill` scores TrueSkill by its prior predictions).
drift_per_day is chosen as `fit-history` chooses gamma: golden-section on a log scale for the
largest evidence of the first 70% (the hyperparameters never see the last 30%), then
compared with no drift on the first 70%, the last 30% and the whole.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.evaluation.histories import MatchHistory
from app.rating import TrueSkill, normal
from app.rating.drift import DAY_US, NEVER
from app.rating.golden_section import golden_section_max
from app.rating.levels import Drift, Matches, rate_levels

TRAIN_SHARE = 0.7
# log10 of the drift per day searched: from next to nothing to a prior sigma in ~a week.
SEARCH = (-4.0, 0.5)


@dataclass(frozen=True, slots=True)
class Evidence:
    """Mean online log evidence per game: over the first 70%, the last 30% and the whole."""

    gamma: float
    train: float
    test: float
    whole: float


def _matches(data: MatchHistory) -> tuple[Matches, int]:
    """Two-sided games as levels.Matches (lower rank is better: minus the score), and the
    number of players."""
    index: dict[str, int] = {}
    player, team, rank = [], [], []
    start = [0]
    for teams, results in zip(data.composition, data.results, strict=True):
        for t, (members, score) in enumerate(zip(teams, results, strict=True)):
            for name in members:
                player.append(index.setdefault(name, len(index)))
                team.append(t)
                rank.append(-score)
        start.append(len(player))
    n = len(player)
    return (
        Matches(
            np.array(start, dtype=np.int64),
            np.array(player, dtype=np.int64),
            np.array(team, dtype=np.int64),
            np.array(rank, dtype=np.float64),
            np.ones(n),
            np.full(n, np.nan),
        ),
        len(index),
    )


def log_evidence(data: MatchHistory, gamma: float) -> npt.NDArray[np.float64]:
    """Each game's online log evidence with drift `gamma` per day (games of one player per
    side, as football and ATP are)."""
    matches, players = _matches(data)
    sigma0 = 25.0 / 3.0
    env = TrueSkill(25.0, sigma0, sigma0 / 2.0, sigma0 / 100.0, data.draw_share)
    mu = np.full(players, env.mu)
    sigma = np.full(players, env.sigma)
    played = np.round(np.array(data.times) * DAY_US).astype(np.int64)
    drift = Drift(gamma, played, np.full(players, NEVER, dtype=np.int64)) if gamma > 0 else None
    rated = rate_levels(env, matches, mu, sigma, drift=drift)
    first = matches.start[:-1]
    second = first + 1
    mean = rated.before_mu[first] - rated.before_mu[second]
    tau2 = env.tau * env.tau
    var = rated.before_sigma[first] ** 2 + rated.before_sigma[second] ** 2 + 2.0 * tau2
    sd = np.sqrt(var + 2.0 * env.beta * env.beta)
    margin = normal.draw_margin(data.draw_share, math.sqrt(2.0) * env.beta)
    out = np.empty(matches.count)
    for i, (m, s, (a, b)) in enumerate(zip(mean.tolist(), sd.tolist(), data.results, strict=True)):
        if a == b:
            out[i] = normal.log_outcome_probability(m, s, margin, True)
        else:
            out[i] = normal.log_outcome_probability(m if a > b else -m, s, margin, False)
    return out


def evidence(data: MatchHistory, gamma: float) -> Evidence:
    scores = log_evidence(data, gamma)
    cut = int(len(scores) * TRAIN_SHARE)
    return Evidence(gamma, float(scores[:cut].mean()), float(scores[cut:].mean()), float(scores.mean()))


def fit(
    data: MatchHistory, rounds: int = 16, progress: Callable[[float], None] = lambda _: None
) -> tuple[Evidence, list[Evidence]]:
    """drift_per_day with the largest evidence of the first 70% (golden section on log10
    gamma over SEARCH), and every trial; `progress` hears the share of the most trials it can
    run (rounds + 2) after each."""
    trials: list[Evidence] = []

    def score(log_gamma: float) -> Evidence:
        trial = evidence(data, 10.0**log_gamma)
        trials.append(trial)
        progress(len(trials) / (rounds + 2))
        return trial

    best = golden_section_max(score, *SEARCH, rounds, lambda trial: trial.train)
    return best, trials
