"""One game of TrueSkill Through Time: the likelihood each player receives, and the evidence.

Seed 001 §2 (and the `trueskillthroughtime` package's Game): teams of players with priors
N(mu, sigma²) and performance noise beta; team performance t = Σ w·p; teams sorted by result
(higher is better) and compared pairwise along a chain with a draw margin
Φ⁻¹((1 + p_draw)/2)·sqrt(Σ beta² of both teams). There is no dynamics inside a game (gamma
belongs to History). Two teams with unit weights have a closed form; otherwise the chain is
solved by expectation propagation, at most 10 forward–backward sweeps (the package's
schedule, so that results match it). The truncation moments come from app.rating.truncation,
which stays finite where a naive evaluation divides by zero (extreme upsets and draws).

The evidence is the prior probability of the result, P(d > margin) or P(|d| <= margin) for
each comparison, taken along the first forward sweep (each comparison given the ones before).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from app.rating import normal, truncation
from app.rating.history.gaussian import INF, Gaussian, Ninf
from app.rating.normal import log_outcome_probability

# The package's defaults, under its public names (trueskillthroughtime 1.1.0).
BETA = 1.0
MU = 0.0
SIGMA = BETA * 6
GAMMA = BETA * 0.03
P_DRAW = 0.0

INNER_SWEEPS = 10
INNER_EPSILON = 1e-6
# A truncation whose variance factor w is below this leaves the difference's variance
# unchanged in floating point: its message is the flat one (as the package finds it).
NEGLIGIBLE_W = 2.0**-52


class Player:
    """A player's prior skill, performance noise beta and skill drift gamma per time unit.

    `prior_draw` is accepted for the package's call shape and kept; like the package's,
    nothing here reads it."""

    __slots__ = ("beta", "gamma", "prior", "prior_draw")

    def __init__(
        self,
        prior: Gaussian | None = None,
        beta: float = BETA,
        gamma: float = GAMMA,
        prior_draw: Gaussian = Ninf,
    ) -> None:
        self.prior = Gaussian(MU, SIGMA) if prior is None else prior
        self.prior_draw = prior_draw
        if not (beta >= 0.0 and math.isfinite(beta)):
            raise ValueError(f"beta must be zero or positive and finite, got {beta!r}")
        if not (gamma >= 0.0 and math.isfinite(gamma)):
            raise ValueError(f"gamma must be zero or positive and finite, got {gamma!r}")
        self.beta = float(beta)
        self.gamma = float(gamma)

    def performance(self) -> Gaussian:
        return Gaussian(self.prior.mu, math.sqrt(self.prior.sigma**2 + self.beta**2))

    def __repr__(self) -> str:
        return f"Player({self.prior!r}, beta={self.beta:.3f}, gamma={self.gamma:.3f})"


def draw_margin(p_draw: float, sd: float) -> float:
    return 0.0 if p_draw == 0.0 else normal.half_width(p_draw) * sd


def truncation_message(mean: float, var: float, margin: float, tie: bool) -> tuple[float, float]:
    """The truncation factor's message to d ~ N(mean, var), as (precision, precision·mean):
    the moment-matched posterior divided by the prior (seed 000 Table 1)."""
    c = math.sqrt(var)
    if tie:
        v, w, rest = truncation.draw(mean / c, margin / c)
    else:
        v, w, rest = truncation.win((mean - margin) / c, 0.0)
    if w <= NEGLIGIBLE_W:
        return 0.0, 0.0
    denom = var * rest
    return w / denom, (mean * w + c * v) / denom


class Game:
    """`Game(teams, result=None, p_draw=0.0, weights=None)`: teams are lists of Players;
    result gives each team's score (higher is better, equal is a draw; default: the listed
    order is the finishing order)."""

    def __init__(
        self,
        teams: Sequence[Sequence[Player]],
        result: Sequence[float] | None = None,
        p_draw: float = 0.0,
        weights: Sequence[Sequence[float]] | None = None,
    ) -> None:
        result = list(result) if result is not None and len(result) else []
        weights = [list(w) for w in weights] if weights is not None and len(weights) else []
        if len(teams) < 2:
            raise ValueError(f"a game needs at least 2 teams, got {len(teams)}")
        if any(len(team) == 0 for team in teams):
            raise ValueError("every team needs at least one player")
        if result and len(result) != len(teams):
            raise ValueError(f"result has {len(result)} entries for {len(teams)} teams")
        if not 0.0 <= p_draw < 1.0:
            raise ValueError(f"p_draw must be in [0, 1), got {p_draw!r}")
        if p_draw == 0.0 and result and len(set(result)) != len(result):
            raise ValueError("a draw needs p_draw > 0")
        if weights and (
            len(weights) != len(teams) or any(len(w) != len(t) for w, t in zip(weights, teams, strict=True))
        ):
            raise ValueError("weights must have one entry per player of every team")
        if any(not math.isfinite(w) for team in weights for w in team):
            raise ValueError("weights must be finite")
        self.teams = [list(team) for team in teams]
        self.result = result
        self.p_draw = float(p_draw)
        self.weights = weights or [[1.0] * len(team) for team in teams]
        self.evidence = 1.0
        self.log_evidence = 0.0
        self.likelihoods: list[list[Gaussian]] = []
        self._compute()

    def __len__(self) -> int:
        return len(self.teams)

    def size(self) -> list[int]:
        return [len(team) for team in self.teams]

    def performance(self, team: int) -> Gaussian:
        mean = var = 0.0
        for player, w in zip(self.teams[team], self.weights[team], strict=True):
            mean += w * player.prior.mu
            var += w * w * (player.prior.sigma**2 + player.beta**2)
        return Gaussian(mean, math.sqrt(var))

    def posteriors(self) -> list[list[Gaussian]]:
        return [
            [likelihood * player.prior for likelihood, player in zip(lk, team, strict=True)]
            for lk, team in zip(self.likelihoods, self.teams, strict=True)
        ]

    def _compute(self) -> None:
        count = len(self.teams)
        scores = self.result or [float(count - 1 - i) for i in range(count)]
        # Best first; equal scores keep their listed order.
        order = sorted(range(count), key=lambda i: -scores[i])
        perf = [self.performance(i) for i in order]
        links = count - 1
        ties = [scores[order[e]] == scores[order[e + 1]] for e in range(links)]
        margins = [
            draw_margin(
                self.p_draw,
                math.sqrt(
                    sum(p.beta**2 for p in self.teams[order[e]])
                    + sum(p.beta**2 for p in self.teams[order[e + 1]])
                ),
            )
            for e in range(links)
        ]
        unit = all(w == 1.0 for team in self.weights for w in team)
        if count == 2 and unit:
            team_messages = self._two_teams(perf, margins[0], ties[0])
        else:
            team_messages = self._chain(perf, margins, ties)
        by_team: list[Gaussian] = [Ninf] * count
        for position, team in enumerate(order):
            by_team[team] = team_messages[position]
        self.likelihoods = [self._to_players(team, by_team[team]) for team in range(count)]

    def _two_teams(self, perf: list[Gaussian], margin: float, tie: bool) -> list[Gaussian]:
        mean = perf[0].mu - perf[1].mu
        var = perf[0].sigma ** 2 + perf[1].sigma ** 2
        self.log_evidence = log_outcome_probability(mean, math.sqrt(var), margin, tie)
        self.evidence = math.exp(self.log_evidence)
        pi, tau = truncation_message(mean, var, margin, tie)
        if pi == 0.0:
            return [Ninf, Ninf]
        d = Gaussian(tau / pi, math.sqrt(1.0 / pi))
        # t_0 = t_1 + d and t_1 = t_0 − d, each with the other team's prior.
        return [perf[1] + d, perf[0] - d]

    def _chain(self, perf: list[Gaussian], margins: list[float], ties: list[bool]) -> list[Gaussian]:
        """EP along the chain with the package's schedule: forward over links 0..n−3 setting
        the lower team's message, backward over links n−2..1 setting the upper team's."""
        count = len(perf)
        links = count - 1
        lose = [Ninf] * count  # message from the link above (the team lost it)
        win = [Ninf] * count  # message from the link below (the team won it)
        link_msg = [(0.0, 0.0)] * links
        log_evidence = 0.0

        def link(e: int, first: bool) -> None:
            nonlocal log_evidence
            upper = perf[e] * lose[e]  # everything t_e knows except its own win message
            lower = perf[e + 1] * win[e + 1]
            mean = upper.mu - lower.mu
            var = upper.sigma**2 + lower.sigma**2
            if first:
                log_evidence += log_outcome_probability(mean, math.sqrt(var), margins[e], ties[e])
            link_msg[e] = truncation_message(mean, var, margins[e], ties[e])

        def message(e: int) -> Gaussian:
            pi, tau = link_msg[e]
            return Gaussian(tau / pi, math.sqrt(1.0 / pi)) if pi > 0.0 else Ninf

        sweep = 0
        step = INF
        while step > INNER_EPSILON and sweep < INNER_SWEEPS:
            step = 0.0
            for e in range(links - 1):
                link(e, sweep == 0)
                new = perf[e] * lose[e] - message(e)
                step = max(step, *new.delta(lose[e + 1])) if lose[e + 1].sigma < INF else INF
                lose[e + 1] = new
            for e in range(links - 1, 0, -1):
                link(e, sweep == 0 and e == links - 1)
                new = perf[e + 1] * win[e + 1] + message(e)
                step = max(step, *new.delta(win[e])) if win[e].sigma < INF else INF
                win[e] = new
            sweep += 1
        if links == 1:
            link(0, True)
        win[0] = perf[1] * win[1] + message(0)
        lose[count - 1] = perf[count - 2] * lose[count - 2] - message(links - 1)
        self.log_evidence = log_evidence
        self.evidence = math.exp(log_evidence)
        return [win[e] * lose[e] for e in range(count)]

    def _to_players(self, team: int, message: Gaussian) -> list[Gaussian]:
        """t = Σ w_j·p_j, so player i's skill receives (t − everything else)/w_i."""
        if message.sigma == INF:
            return [Ninf] * len(self.teams[team])
        total = self.performance(team)
        out = []
        for player, w in zip(self.teams[team], self.weights[team], strict=True):
            if w == 0.0:
                out.append(Ninf)
                continue
            rest = Gaussian(
                total.mu - w * player.prior.mu, _sd(total.sigma**2 - (w * player.prior.sigma) ** 2)
            )
            out.append((message - rest) * (1.0 / w))
        return out


def _sd(var: float) -> float:
    return math.sqrt(var) if var > 0.0 else 0.0
