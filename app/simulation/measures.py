"""The report's figures from a run (pure): time to match, match quality and draws, and
calibration (fairness, convergence and the targets: targets.py).

Predictions are the mode's own (seed 000): for two teams whose Σ mu differ by Δ with
c² = Σ (sigma² + β²) over both, P(first wins) = Φ(Δ/c) as the service's win probability
gives it, and P(draw) = Φ((ε − |Δ|)/c) − Φ((−ε − |Δ|)/c) with ε the mode's draw margin
(seed 000 §4.1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.rating.normal import draw_margin
from app.simulation.baselines import normal_cdf
from app.simulation.record import EXPIRED, MATCHED, Run
from app.simulation.scenario import Scenario
from app.simulation.truth import DRAW, FIRST_WINS, SECOND_WINS

FloatArray = npt.NDArray[np.float64]

PERCENTILES = (50.0, 90.0, 99.0)
WINDOW_STEPS = (60, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800)


@dataclass(frozen=True, slots=True)
class WaitRow:
    label: str
    tickets: int  # matched
    expired: int
    p50: float
    p90: float
    p99: float


def _waits(label: str, waited: FloatArray, expired: int) -> WaitRow:
    if len(waited):
        p50, p90, p99 = (float(v) for v in np.percentile(waited, PERCENTILES))
    else:
        p50 = p90 = p99 = math.nan
    return WaitRow(label, len(waited), expired, p50, p90, p99)


def window_seconds(duration: float) -> int:
    """The shortest of the usual steps cutting `duration` into at most 24 windows."""
    return next((step for step in WINDOW_STEPS if duration / step <= 24), WINDOW_STEPS[-1])


def span(seconds: float) -> str:
    """A duration in its largest whole unit: "3 days", "90 minutes", "40 s"."""
    for unit, name in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if seconds >= unit and seconds % unit == 0:
            count = int(seconds // unit)
            return f"{count} {name}{'s' if count != 1 else ''}"
    return f"{seconds:g} s"


def clock_label(seconds: float) -> str:
    """Simulated time as h:mm (h:mm:ss off the minute), after "Nd" past the first day."""
    days, rest = divmod(round(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{hours}:{minutes:02d}" + (f":{secs:02d}" if secs else "")
    return f"{days}d {text}" if days else text


def waits_over_time(run: Run) -> list[WaitRow]:
    """Per window of simulated time: the waits of the tickets matched in it, and those expired."""
    step = window_seconds(run.duration)
    left = run.ticket_enqueued + run.ticket_waited
    matched = run.ticket_outcome == MATCHED
    expired = run.ticket_outcome == EXPIRED
    rows = []
    for start in np.arange(0.0, run.duration, step).tolist():
        inside = (left >= start) & (left < start + step)
        label = f"{clock_label(start)}–{clock_label(min(start + step, run.duration))}"
        rows.append(_waits(label, run.ticket_waited[inside & matched], int((inside & expired).sum())))
    return rows


def skill_deciles(skill: FloatArray) -> FloatArray:
    """The 11 edges of the population's true-skill deciles."""
    return np.percentile(skill, np.linspace(0, 100, 11))


def waits_by_skill(run: Run, population_skill: FloatArray) -> list[WaitRow]:
    """Per decile of true skill (of the population; a party by its mean)."""
    edges = skill_deciles(population_skill)
    decile = np.clip(np.searchsorted(edges, run.ticket_skill, side="right") - 1, 0, 9)
    matched = run.ticket_outcome == MATCHED
    return [
        _waits(
            f"{d + 1} ({edges[d]:.1f} to {edges[d + 1]:.1f})",
            run.ticket_waited[(decile == d) & matched],
            int(((decile == d) & (run.ticket_outcome == EXPIRED)).sum()),
        )
        for d in range(10)
    ]


EXPERIENCE = (
    (0, 1, "0 (new players)"),
    (1, 5, "1–4"),
    (5, 10, "5–9"),
    (10, 20, "10–19"),
    (20, math.inf, "20 or more"),
)


def waits_by_experience(run: Run) -> list[WaitRow]:
    """By the games the ticket's players had played before it (a party by its mean): new players'
    ratings are uncertain, so their matches reach a lower quality and may wait for the
    relaxation."""
    matched = run.ticket_outcome == MATCHED
    expired = run.ticket_outcome == EXPIRED
    rows = []
    for low, high, label in EXPERIENCE:
        inside = (run.ticket_played >= low) & (run.ticket_played < high)
        rows.append(_waits(label, run.ticket_waited[inside & matched], int((inside & expired).sum())))
    return rows


@dataclass(frozen=True, slots=True)
class TicketKindRow:
    """Waits of one kind of ticket, and under roles how often its player got their first choice."""

    waits: WaitRow
    first_choice: float  # share of the matched seated in the role they list first (nan: no roles)


def waits_by_ticket(run: Run) -> list[TicketKindRow]:
    """Under roles, solo players by the role they list first (what a role queue's players wait
    for, and whether they play it); then parties by size, when there are any."""
    matched = run.ticket_outcome == MATCHED
    expired = run.ticket_outcome == EXPIRED
    rows = []
    for number, role in enumerate(run.roles):
        mine = (run.ticket_role == number) & (run.ticket_players == 1)
        seated = run.ticket_seated[mine & matched]
        rows.append(
            TicketKindRow(
                _waits(f"{role} first", run.ticket_waited[mine & matched], int((mine & expired).sum())),
                float((seated == number).mean()) if len(seated) else math.nan,
            )
        )
    sizes = np.unique(run.ticket_players).tolist()
    if max(sizes, default=1) > 1:
        for size in sizes:
            mine = run.ticket_players == size
            label = "solo" if size == 1 else f"party of {size}"
            rows.append(
                TicketKindRow(
                    _waits(label, run.ticket_waited[mine & matched], int((mine & expired).sum())), math.nan
                )
            )
    return rows


@dataclass(frozen=True, slots=True)
class SizeRow:
    players: int
    matches: int
    quality: float  # mean


def match_sizes(run: Run) -> list[SizeRow]:
    """Matches by their number of players (a mode may let them shrink with the wait)."""
    rows = []
    for players in sorted(np.unique(run.match_players).tolist(), reverse=True):
        mine = run.match_players == players
        rows.append(SizeRow(int(players), int(mine.sum()), float(run.match_quality[mine].mean())))
    return rows


def waits_by_region(run: Run, regions: Sequence[str]) -> list[WaitRow]:
    matched = run.ticket_outcome == MATCHED
    names = list(regions) or ["(one region)"]
    return [
        _waits(
            name,
            run.ticket_waited[(run.ticket_region == number) & matched],
            int(((run.ticket_region == number) & (run.ticket_outcome == EXPIRED)).sum()),
        )
        for number, name in enumerate(names)
    ]


@dataclass(frozen=True, slots=True)
class QualityBin:
    low: float
    high: float
    matches: int


def quality_histogram(run: Run, bins: int = 20) -> list[QualityBin]:
    counts, edges = np.histogram(run.match_quality, bins=bins, range=(0.0, 1.0))
    return [QualityBin(float(edges[i]), float(edges[i + 1]), int(counts[i])) for i in range(bins)]


def predictions(run: Run, scenario: Scenario) -> tuple[FloatArray, FloatArray]:
    """Per two-team match: the mode's P(first team wins) and P(draw), before it was played."""
    mode = scenario.mode
    c = np.sqrt(run.match_spread)
    # The margin of each match's own size (a mode may let matches shrink).
    sizes = run.match_players.astype(np.float64)
    margin = draw_margin(mode.draw_probability, mode.beta) * np.sqrt(sizes)
    gap = np.abs(run.match_gap)
    win = normal_cdf(run.match_gap / c)
    draw = normal_cdf((margin - gap) / c) - normal_cdf((-margin - gap) / c)
    return win, draw


@dataclass(frozen=True, slots=True)
class DrawRow:
    low: float  # quality range of the decile
    high: float
    matches: int
    predicted: float
    observed: float


def draws_by_quality(run: Run, scenario: Scenario) -> list[DrawRow]:
    """Per decile of match quality: the mode's predicted draw rate and the observed one."""
    two = run.match_outcome >= 0
    if not two.any():
        return []
    _, predicted = predictions(run, scenario)
    quality, predicted, drawn = run.match_quality[two], predicted[two], run.match_outcome[two] == DRAW
    edges = np.percentile(quality, np.linspace(0, 100, 11))
    decile = np.clip(np.searchsorted(edges, quality, side="right") - 1, 0, 9)
    rows = []
    for d in range(10):
        inside = decile == d
        if inside.any():
            rows.append(
                DrawRow(
                    float(edges[d]),
                    float(edges[d + 1]),
                    int(inside.sum()),
                    float(predicted[inside].mean()),
                    float(drawn[inside].mean()),
                )
            )
    return rows


def cumulative_draws(run: Run) -> tuple[FloatArray, FloatArray]:
    """Seed 003's plot: matches sorted by quality, best first; the share of all matches so far
    (x) and the share of all draws among them (y). A quality that ranks tight matches first
    bends the curve above the diagonal."""
    two = run.match_outcome >= 0
    drawn = (run.match_outcome[two] == DRAW).astype(np.float64)
    order = np.argsort(-run.match_quality[two], kind="stable")
    total = drawn.sum()
    if not len(drawn) or total == 0:
        return np.array([0.0, 1.0]), np.array([0.0, 1.0])
    x = np.arange(1, len(drawn) + 1) / len(drawn)
    y = np.cumsum(drawn[order]) / total
    return np.concatenate([[0.0], x]), np.concatenate([[0.0], y])


@dataclass(frozen=True, slots=True)
class CalibrationRow:
    low: float
    high: float
    matches: int
    predicted: float  # mean P(favourite wins)
    observed: float  # the favourite's mean score (win 1, draw ½)


def calibration(run: Run, scenario: Scenario, bins: int = 10) -> list[CalibrationRow]:
    """The favoured team's predicted win probability against its observed score, in bins."""
    two = run.match_outcome >= 0
    if not two.any():
        return []
    win, _ = predictions(run, scenario)
    win, outcome = win[two], run.match_outcome[two]
    first_score = np.where(outcome == FIRST_WINS, 1.0, np.where(outcome == SECOND_WINS, 0.0, 0.5))
    favoured = win >= 0.5
    predicted = np.where(favoured, win, 1.0 - win)
    observed = np.where(favoured, first_score, 1.0 - first_score)
    edges = np.linspace(0.5, 1.0, bins + 1)
    place = np.clip(np.searchsorted(edges, predicted, side="right") - 1, 0, bins - 1)
    rows = []
    for b in range(bins):
        inside = place == b
        if inside.any():
            rows.append(
                CalibrationRow(
                    float(edges[b]),
                    float(edges[b + 1]),
                    int(inside.sum()),
                    float(predicted[inside].mean()),
                    float(observed[inside].mean()),
                )
            )
    return rows
