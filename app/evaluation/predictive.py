"""Predictive performance of Elo, TrueSkill and TrueSkill Through Time (seed 001 §3.9).

The data is split by count: the first 70% of the games train, the last 30% (from the first
day that starts at or after the 70% mark) are predicted. Every game of a day is predicted
with the data up to the day before, as the probability each model gave the observed result
beforehand. A model's geometric mean is exp(mean log probability) over the predicted games
(seed 001 eq. 9); its log2 Bayes factor against TTT is (Σ log P_TTT − Σ log P_model)/ln 2
(eq. 8, with no prior preference between models).

- **Elo** (seed 000 §1): Gaussian performances with noise beta, ratings without uncertainty,
  the linearised update Δ = αβ√π·((y + 1)/2 − Φ((s1 − s2)/(√2·beta))) with α = 0.07 (a K
  factor of 24 on the Elo scale), s1 += Δ and s2 −= Δ. (The seed prints s1 ← s1 + yΔ, but Δ
  already carries the outcome's sign.) Teams use the duelling heuristic: each player moves by
  the mean of their Δs against every player of every other team. Draws are predicted with
  the same draw margin as the Bayesian models, so that Elo gives a probability to a draw.
- **TrueSkill**: the online pass of TrueSkill Through Time (each skill the filtered posterior,
  drifting by gamma² per day), i.e. TrueSkill with time-based dynamics.
- **TTT**: the first 70% smoothed (10 sweeps), then one day at a time: predict the day, add
  it with `add_events`, one sweep, as the paper did. When times fall within a day (ATP
  rounds), every time is predicted from the times before it, and the sweep comes once a
  calendar day, after its last time (the times between get the online update of `add_events`).

Every model predicts the same games from the same information (the times before), and its
hyperparameters can be chosen on the first 70% alone by its own prior predictions there:
Elo's α by its predictions of the training days (`fit_elo`), TrueSkill's sigma and gamma by
its online evidence (`fit_trueskill`), TTT's by its smoothed evidence (`fit-history`).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from app.evaluation.histories import MatchHistory
from app.progress import Progress
from app.rating import normal
from app.rating.golden_section import golden_section_max
from app.rating.history import Gaussian, History
from app.rating.history.tuning import Trial, fit_hyperparameters

ELO_ALPHA = 0.07
# Days between two progress reports of Elo's pass.
TICK_DAYS = 256
# Seconds per game of building a history (its online pass), for the bar's pace while it runs
# (docs/benchmarks.md, "Long work's progress").
BUILD_S = 15e-6
TRAIN_SHARE = 0.7
TRAIN_SWEEPS = 10


@dataclass(frozen=True, slots=True)
class Parameters:
    sigma: float
    gamma: float
    p_draw: float
    beta: float = 1.0
    mu: float = 0.0
    elo_alpha: float = ELO_ALPHA


@dataclass(frozen=True, slots=True)
class Score:
    model: str
    # ln P(observed result) of each predicted game, in the data's order (the predicted games
    # are the last ones, from index len(data) − len(log_probabilities)).
    log_probabilities: tuple[float, ...]

    @property
    def games(self) -> int:
        return len(self.log_probabilities)

    @property
    def log_probability(self) -> float:
        return math.fsum(self.log_probabilities)

    @property
    def geometric_mean(self) -> float:
        return math.exp(self.log_probability / self.games)

    def where(self, keep: Sequence[bool]) -> Score:
        """The score over the predicted games `keep` marks (one flag per predicted game)."""
        kept = tuple(p for p, k in zip(self.log_probabilities, keep, strict=True) if k)
        return Score(self.model, kept)

    def log2_bayes_factor(self, reference: Score) -> float:
        """log2 of P(data | reference) / P(data | this model)."""
        return (reference.log_probability - self.log_probability) / math.log(2.0)


def days(data: MatchHistory) -> list[range]:
    """The games of each day, in order (the histories are sorted by time)."""
    out: list[range] = []
    start = 0
    for g in range(1, len(data.times) + 1):
        if g == len(data.times) or data.times[g] != data.times[start]:
            out.append(range(start, g))
            start = g
    if any(data.times[a.start] > data.times[b.start] for a, b in itertools.pairwise(out)):
        raise ValueError("the history must be sorted by time")
    return out


def first_test_day(schedule: Sequence[range], games: int, share: float = TRAIN_SHARE) -> int:
    mark = share * games
    for number, day in enumerate(schedule):
        if day.start >= mark:
            return number
    return len(schedule)


def outcome_probability(mean: float, sd: float, margin: float, result: Sequence[float]) -> float:
    """ln P(result) for d = first − second ~ N(mean, sd²) with a draw margin."""
    first, second = result
    if first == second:
        return normal.log_outcome_probability(mean, sd, margin, True)
    if first < second:
        mean = -mean
    return normal.log_outcome_probability(mean, sd, margin, False)


def _two_players(game: Sequence[Sequence[str]]) -> tuple[str, str]:
    (a,), (b,) = game
    return a, b


def elo(
    data: MatchHistory,
    settings: Parameters,
    test_from: int,
    schedule: Sequence[range],
    progress: Callable[[float], None] = lambda _: None,
) -> Score:
    ratings: dict[str, float] = {}
    beta = settings.beta
    k = settings.elo_alpha * beta * math.sqrt(math.pi)
    scale = math.sqrt(2.0) * beta
    margin = normal.draw_margin(settings.p_draw, scale)
    predicted: list[float] = []
    for number, day in enumerate(schedule):
        if number % TICK_DAYS == 0:
            progress(number / len(schedule))
        if number >= test_from:
            for g in day:
                a, b = _two_players(data.composition[g])
                d = ratings.get(a, settings.mu) - ratings.get(b, settings.mu)
                predicted.append(outcome_probability(d, scale, margin, data.results[g]))
        for g in day:
            _elo_update(ratings, data.composition[g], data.results[g], k, scale, settings.mu)
    return Score("Elo", tuple(predicted))


def _elo_update(
    ratings: dict[str, float],
    teams: Sequence[Sequence[str]],
    result: Sequence[float],
    k: float,
    scale: float,
    mu: float,
) -> None:
    """The duelling heuristic (seed 000 §4.1): every player against every player of the other
    teams, moved by the mean of those Δs (one opponent in a duel: plain Elo)."""
    moves: dict[str, float] = {}
    for t, team in enumerate(teams):
        for name in team:
            deltas = []
            for u, other in enumerate(teams):
                if u == t:
                    continue
                y = 0.0 if result[t] == result[u] else (1.0 if result[t] > result[u] else -1.0)
                for opponent in other:
                    d = ratings.get(name, mu) - ratings.get(opponent, mu)
                    deltas.append(k * ((y + 1.0) / 2.0 - normal.cdf(d / scale)))
            moves[name] = sum(deltas) / len(deltas)
    for name, move in moves.items():
        ratings[name] = ratings.get(name, mu) + move


def _predict_day(
    history: History | None, data: MatchHistory, day: range, settings: Parameters
) -> list[float]:
    """ln P of each of the day's games, each player's skill as `history` knew it the day before."""
    out: list[float] = []
    now = data.times[day.start]
    beta2 = 2.0 * settings.beta * settings.beta
    margin = normal.draw_margin(settings.p_draw, math.sqrt(beta2))
    for g in day:
        a, b = _two_players(data.composition[g])
        sa = history.prior(a, now) if history is not None else Gaussian(settings.mu, settings.sigma)
        sb = history.prior(b, now) if history is not None else Gaussian(settings.mu, settings.sigma)
        sd = math.sqrt(sa.sigma**2 + sb.sigma**2 + beta2)
        out.append(outcome_probability(sa.mu - sb.mu, sd, margin, data.results[g]))
    return out


def bayesian(
    data: MatchHistory,
    settings: Parameters,
    test_from: int,
    schedule: Sequence[range],
    smooth: bool,
    progress: Progress | None = None,
    sweep_every: int = 1,
) -> Score:
    """TrueSkill (smooth=False: the online pass only) or TTT (one sweep per added calendar
    day, or per `sweep_every` of them: a cheaper TTT, whose days between sweeps get only the
    online update; the paper's procedure is 1). `progress` moves through the training
    history's build, its sweeps, and the predicted days."""
    progress = progress or Progress()
    first = schedule[test_from].start if test_from < len(schedule) else len(data.times)

    def games(lo: int, hi: int) -> tuple[list[list[list[str]]], list[list[float]], list[float]]:
        return data.composition[lo:hi], data.results[lo:hi], data.times[lo:hi]

    def start(lo: int, hi: int) -> History:
        return History(
            *games(lo, hi),
            mu=settings.mu,
            sigma=settings.sigma,
            beta=settings.beta,
            gamma=settings.gamma,
            p_draw=settings.p_draw,
        )

    history: History | None = None
    # The training history's build (its online pass), then its sweeps, then the test days.
    with progress.part(0.15 if smooth else 0.3, expect=BUILD_S * first):
        history = start(0, first) if first else None
    with progress.part(0.3) as sweeping:
        if smooth and history is not None:
            history.convergence(
                epsilon=0.0,
                iterations=TRAIN_SWEEPS,
                progress=lambda done, _: sweeping.update(done / TRAIN_SWEEPS),
            )
    predicted: list[float] = []
    test_days = schedule[test_from:]
    calendar_days = 0
    with progress.part(1.0) as predicting:
        for number, day in enumerate(test_days):
            predicted.extend(_predict_day(history, data, day, settings))
            if history is None:
                history = start(day.start, day.stop)
            else:
                history.add_events(*games(day.start, day.stop))
            following = test_days[number + 1] if number + 1 < len(test_days) else None
            if following is None or _calendar_day(data, following) != _calendar_day(data, day):
                calendar_days += 1
                if smooth and (following is None or calendar_days % sweep_every == 0):
                    history.iteration()
            predicting.update((number + 1) / len(test_days))
    return Score("TTT" if smooth else "TrueSkill", tuple(predicted))


def _calendar_day(data: MatchHistory, day: range) -> int:
    return math.floor(data.times[day.start])


MODELS = ("Elo", "TrueSkill", "TTT")


# Each model's share of an evaluation's time, for its share of the progress: TTT sweeps the
# whole history once a predicted day, so it takes most of it.
MODEL_COST = {"Elo": 1.0, "TrueSkill": 2.0, "TTT": 20.0}


def evaluate(
    data: MatchHistory,
    settings: Parameters,
    progress: Progress | None = None,
    models: Sequence[str] = MODELS,
    sweep_every: int = 1,
) -> list[Score]:
    """Elo, TrueSkill and TTT (or those of `models`) on the last 30% of `data` (one against
    one games), moving `progress` model by model (labelled with the model's name)."""
    progress = progress or Progress()
    unknown = [model for model in models if model not in MODELS]
    if unknown:
        raise ValueError(f"unknown model {unknown[0]!r}: one of {', '.join(MODELS)}")
    schedule = days(data)
    test_from = first_test_day(schedule, len(data.times))
    out: list[Score] = []
    total, done = sum(MODEL_COST[model] for model in models), 0.0
    for model in models:
        done += MODEL_COST[model]
        with progress.part(done / total, model) as part:
            if model == "Elo":
                out.append(elo(data, settings, test_from, schedule, part.update))
            else:
                smooth = model == "TTT"
                out.append(bayesian(data, settings, test_from, schedule, smooth, part, sweep_every))
    return out


def experience(data: MatchHistory, schedule: Sequence[range]) -> list[tuple[int, int]]:
    """For every game, how many games each of its two players had played on the days before."""
    played: dict[str, int] = {}
    out: list[tuple[int, int]] = []
    for day in schedule:
        for g in day:
            a, b = _two_players(data.composition[g])
            out.append((played.get(a, 0), played.get(b, 0)))
        for g in day:
            for name in _two_players(data.composition[g]):
                played[name] = played.get(name, 0) + 1
    return out


def fit_elo(
    data: MatchHistory, settings: Parameters, steps: int = 14, bounds: tuple[float, float] = (1e-3, 1.0)
) -> tuple[float, float]:
    """Elo's α (and its Σ ln P) that best predicts the first 70%, day by day from the start:
    golden-section search on log α. Only training days are read."""
    schedule = days(data)
    test_from = first_test_day(schedule, len(data.times))
    training = schedule[:test_from]

    def loss(log_alpha: float) -> tuple[float, float]:
        trial = dataclasses.replace(settings, elo_alpha=math.exp(log_alpha))
        return log_alpha, elo(data, trial, 0, training).log_probability

    log_alpha, best = golden_section_max(
        loss, math.log(bounds[0]), math.log(bounds[1]), steps, lambda trial: trial[1]
    )
    return math.exp(log_alpha), best


def fit_trueskill(data: MatchHistory, settings: Parameters) -> Trial:
    """TrueSkill's sigma and gamma by its online evidence on the first 70% (the prior
    prediction of every training game given the ones before it): `fit_hyperparameters`
    with no sweeps, so the evidence is the filter's."""
    schedule = days(data)
    first = schedule[first_test_day(schedule, len(data.times))].start
    best, _ = fit_hyperparameters(
        data.composition[:first],
        data.results[:first],
        data.times[:first],
        sigma=settings.sigma,
        gamma=settings.gamma,
        p_draw=settings.p_draw,
        mu=settings.mu,
        beta=settings.beta,
        iterations=0,
    )
    return best


def table(scores: Sequence[Score]) -> str:
    """Each model's geometric mean and log2 Bayes factor against TTT (or, without TTT, the
    last model listed)."""
    reference = next((s for s in scores if s.model == "TTT"), scores[-1])
    lines = [
        f"| model | games predicted | geometric mean | log2 Bayes factor ({reference.model} vs model) |",
        "|---|---|---|---|",
    ]
    for score in scores:
        lines.append(
            f"| {score.model} | {score.games:,} | {score.geometric_mean:.4f} | "
            f"{score.log2_bayes_factor(reference):,.0f} |"
        )
    return "\n".join(lines)
