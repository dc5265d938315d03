"""The issue's targets, and the two measures they rest on besides the waits (pure).

- Fairness (seed 000 §4.1, "even players with very few games got mostly fair matches, with a
  winning probability within 35% to 65%"): the share of players whose score is within 35–65%,
  by the least games played, beside what chance alone allows.
- Convergence: the games it takes the displayed rating to reach a rank correlation with the
  true skills, and seed 000's information-theoretic limit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.simulation.measures import skill_deciles
from app.simulation.record import Checkpoint, Run
from app.simulation.scenario import Scenario
from app.simulation.truth import DRAW

# The targets (seed 000 §4.1: "a winning probability within 35% to 65%").
FAIR_LOW, FAIR_HIGH = 0.35, 0.65
FAIR_GAMES = 10
FAIR_SHARE = 0.80
CONVERGED = 0.8
# Checkpoints up to this many games are "the first few results" when Elo keeps pace.
EARLY_GAMES = 5
FAIRNESS_GAMES = (1, 2, 3, 5, 10, 15, 20, 30, 50, 75, 100, 150, 200)


@dataclass(frozen=True, slots=True)
class FairnessRow:
    games: int  # players with at least this many games
    players: int
    within: float  # share whose score ratio is within 35–65%
    fair_coin: float  # the share fair matches would give the same players (binomial spread)
    deviation: float  # mean |score ratio − ½| (seed 000's measure)


def _fair_within(games: int, draw_rate: float, teams: int = 2) -> float:
    """The share of players FAIR_LOW ≤ score/n ≤ FAIR_HIGH gives over n fair games. Two teams: a
    draw with draw_rate, else a coin flip, so 2·score is a sum of n values 0, 1, 2 with
    probabilities ((1 − d)/2, d, (1 − d)/2). More teams: each place equally likely (ties left
    out), the score of place k from the bottom being k/(teams − 1)."""
    if teams == 2:
        step = np.array([(1 - draw_rate) / 2, draw_rate, (1 - draw_rate) / 2])
    else:
        step = np.zeros(2 * (teams - 1) + 1)
        step[::2] = 1.0 / teams
    distribution = np.array([1.0])
    for _ in range(games):
        distribution = np.convolve(distribution, step)
    points = np.arange(len(distribution)) / ((len(step) - 1) * games)
    inside = (points >= FAIR_LOW - 1e-12) & (points <= FAIR_HIGH + 1e-12)
    return float(distribution[inside].sum())


def fairness(run: Run) -> list[FairnessRow]:
    """Seed 000 §4.1's win-probability experiment, by the least games a player has played: the
    share of players whose score ratio (wins + draws/2 over games; with more teams, the share of
    the other teams beaten) is within 35–65%."""
    draws = float((run.match_outcome == DRAW).mean()) if (run.match_outcome >= 0).any() else 0.0
    played = run.games > 0
    ratio = np.zeros(len(run.games))
    ratio[played] = run.score[played] / run.games[played]
    coin: dict[int, float] = {}
    rows = []
    for least in FAIRNESS_GAMES:
        chosen = run.games >= least
        if not chosen.any():
            break
        counts = run.games[chosen]
        for n in np.unique(counts).tolist():
            if n not in coin:
                coin[n] = _fair_within(n, draws, run.teams)
        reference = float(np.mean([coin[n] for n in counts.tolist()]))
        r = ratio[chosen]
        rows.append(
            FairnessRow(
                least,
                int(chosen.sum()),
                float(((r >= FAIR_LOW - 1e-12) & (r <= FAIR_HIGH + 1e-12)).mean()),
                reference,
                float(np.abs(r - 0.5).mean()),
            )
        )
    return rows


def fairness_by_skill(run: Run, least: int = FAIR_GAMES) -> list[tuple[str, int, float]]:
    """Among players with at least `least` games: per decile of true skill, (label, players,
    share within 35–65%)."""
    chosen = run.games >= least
    if not chosen.any():
        return []
    edges = skill_deciles(run.skill)
    decile = np.clip(np.searchsorted(edges, run.skill, side="right") - 1, 0, 9)
    ratio = np.where(run.games > 0, run.score / np.maximum(run.games, 1), 0.0)
    within = (ratio >= FAIR_LOW - 1e-12) & (ratio <= FAIR_HIGH + 1e-12)
    rows = []
    for d in range(10):
        mine = chosen & (decile == d)
        rows.append(
            (
                f"{d + 1} ({edges[d]:.1f} to {edges[d + 1]:.1f})",
                int(mine.sum()),
                float(within[mine].mean()) if mine.any() else math.nan,
            )
        )
    return rows


def _within_middle(run: Run, least: int = FAIR_GAMES) -> float:
    """The share within 35–65% of the players with `least` games in true-skill deciles 2–9."""
    edges = skill_deciles(run.skill)
    chosen = (run.games >= least) & (run.skill >= edges[1]) & (run.skill < edges[9])
    ratio = run.score[chosen] / run.games[chosen]
    return (
        float(((ratio >= FAIR_LOW - 1e-12) & (ratio <= FAIR_HIGH + 1e-12)).mean())
        if chosen.any()
        else math.nan
    )


def information_limit(scenario: Scenario, players: int) -> float:
    """Seed 000 §4.1's information-theoretic limit in games per player: a ranking of n players
    takes log2(n!) ≈ n·log2(n) bits, and a match of k players tells at most log2 of its number
    of possible outcomes (2 or 3 for two teams, without or with draws; the orderings of the
    teams, ties allowed or not, for more). Seed 000's 8-player free-for-all: log(n)/log(8)."""
    mode = scenario.mode
    teams = mode.teams
    outcomes = _ordered_partitions(teams) if mode.draw_probability > 0 else math.factorial(teams)
    bits = math.lgamma(players + 1) / math.log(2)
    return bits / math.log2(outcomes) * mode.players_per_match / players


def _ordered_partitions(n: int) -> int:
    """Weak orderings of n teams (the Fubini number): 3 for two teams."""
    table = [1]
    for m in range(1, n + 1):
        table.append(sum(math.comb(m, k) * table[m - k] for k in range(1, m + 1)))
    return table[n]


def sampling_error(rho: float, players: int) -> float:
    """The standard error of a rank correlation `rho` over `players` (Fisher's z, with the
    1.06 of Spearman's rho: Fieller, Hartley and Pearson 1957)."""
    return (1.0 - rho * rho) * math.sqrt(1.06 / max(players - 3, 1))


def games_to(checkpoints: Sequence[Checkpoint], field: str, level: float = CONVERGED) -> float | None:
    """Games played at which the correlation first reaches `level`, interpolated linearly
    between the checkpoints around it (from 0 at no games); None when it never does."""
    games, value = 0.0, 0.0
    for point in checkpoints:
        reached = float(getattr(point, field))
        if reached >= level:
            return games + (point.games - games) * (level - value) / (reached - value)
        games, value = point.games, reached
    return None


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    passed: bool
    figure: str
    why: str  # on a failure, what the figures say about it


def targets(run: Run, baseline: Run | None) -> list[Target]:
    """The issue's three targets on a run (and, for the third, its random-pairing baseline)."""
    found = []
    rows = {row.games: row for row in fairness(run)}
    row = rows.get(FAIR_GAMES)
    fair_name = f"≥{FAIR_SHARE:.0%} of players with ≥{FAIR_GAMES} games win 35–65%"
    if row is None:
        found.append(Target(fair_name, False, f"no player played {FAIR_GAMES} games", "the run is too short"))
    else:
        passed = row.within >= FAIR_SHARE
        why = ""
        if not passed:
            by_skill = fairness_by_skill(run)
            middle = _within_middle(run)
            lowest, highest = by_skill[0][2], by_skill[-1][2]
            why = (
                "chance alone (perfectly even matches, each a coin flip) would leave "
                f"{1 - row.fair_coin:.0%} of these players outside 35–65% over the games they played; "
                "the rest of the shortfall is at the ends of the skill range, where no equal opponent "
                f"exists: the lowest and highest true-skill deciles have {lowest:.0%} and {highest:.0%} "
                f"of their players within, deciles 2–9 together {middle:.0%}"
            )
        found.append(
            Target(
                fair_name,
                passed,
                f"{row.within:.1%} of {row.players} players (fair coin flips: {row.fair_coin:.1%})",
                why,
            )
        )
    points = list(run.checkpoints)
    behind = [p for p in points if p.displayed <= p.elo]
    figure = (
        "; ".join(
            f"after {p.games} game{'s' if p.games != 1 else ''} {p.displayed:.3f} vs {p.elo:.3f}"
            for p in behind[:5]
        )
        if behind
        else f"above at all {len(points)} checkpoints"
    )
    why = ""
    if behind:
        why = (
            f"Elo is level or ahead at {len(behind)} of {len(points)} checkpoints "
            f"(TrueSkill vs Elo: {figure})"
        )
        noise = [sampling_error(p.elo, p.players) for p in behind]
        widest = max(p.elo - p.displayed for p in behind)
        if widest < min(noise):
            why += (
                f"; Elo's lead is at most {widest:.3f}, within the sampling error of a rank correlation"
                f" over these players (about {min(noise):.3f})"
            )
            if max(p.games for p in behind) <= EARLY_GAMES:
                why += (
                    ": after the same few results both systems move every new player of a team alike,"
                    " so they order the players almost alike"
                )
            else:
                fewest = min(behind, key=lambda p: p.players)
                why += f": only {fewest.players} players had played {fewest.games} games"
    found.append(
        Target(
            "TrueSkill's rank correlation above Elo's at every checkpoint",
            bool(points) and not behind,
            figure if points else "no checkpoint reached",
            why,
        )
    )
    if baseline is not None:
        mine, theirs = games_to(run.checkpoints, "displayed"), games_to(baseline.checkpoints, "displayed")
        passed = mine is not None and (theirs is None or mine < theirs)
        text = f"{_games(mine)} games played (random pairing: {_games(theirs)})"
        why = ""
        if not passed:
            why = (
                "the quality-matched loop never reached 0.8 in this run"
                if mine is None
                else "random pairing reached 0.8 as fast or faster: " + text
            )
            if mine is not None:
                why += _crossing(run.checkpoints, baseline.checkpoints, mine)
        found.append(Target("rank correlation 0.8 in fewer games than random pairing", passed, text, why))
    return found


def _crossing(mine: Sequence[Checkpoint], theirs: Sequence[Checkpoint], games: float) -> str:
    """Where the quality-matched loop crossed 0.8: how many players had played that many games,
    the sampling error there against the gap between the loops, and at how many of the earlier
    checkpoints the quality-matched loop led."""
    random = {p.games: p for p in theirs}
    after = next(p for p in mine if p.games >= games)
    text = f"; the loop crosses 0.8 by {after.games} games, which {after.players} players reached"
    other = random.get(after.games)
    if other is not None:
        error = sampling_error(after.displayed, after.players)
        gap = other.displayed - after.displayed
        text += f" (random pairing there: {other.displayed:.3f} against {after.displayed:.3f}"
        where = "within" if abs(gap) < error else "beyond"
        text += f", a gap {where} the sampling error of about {error:.3f})"
    earlier = [(p, random[p.games]) for p in mine if p.games < after.games and p.games in random]
    if earlier:
        ahead = sum(p.displayed > q.displayed for p, q in earlier)
        text += f"; before it the quality-matched loop is ahead at {ahead} of {len(earlier)} checkpoints"
    return text


def _games(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f}"
