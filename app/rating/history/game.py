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

One representation inside: `likelihoods` works on floats, as the history's arrays do. A
message is (precision, precision·mean), the flat one (0, 0); the sums of independent
variables (team performances, a team less its message) are taken in moments (mean,
variance). `Gaussian` and `Player`, the package's public classes, appear only at the edge:
`Game` reads its Players into floats and hands its results out as Gaussians.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from app.rating import truncation
from app.rating.history.gaussian import INF, Gaussian, Ninf
from app.rating.normal import draw_margin, log_outcome_probability

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


Message = tuple[float, float]  # (precision, precision·mean)
FLAT: Message = (0.0, 0.0)


def moments(pi: float, tau: float) -> tuple[float, float]:
    """(mean, variance) of a message: a non-positive precision is flat (0, inf), an infinite
    one a point mass at 0 (as Gaussian.natural reads them)."""
    if pi > 0.0:
        return (tau / pi, 1.0 / pi) if math.isfinite(pi) else (0.0, 0.0)
    return 0.0, INF


def _natural(mean: float, var: float) -> Message:
    """The message of N(mean, var), var > 0; infinite variance is the flat message."""
    return FLAT if var == INF else (1.0 / var, mean / var)


def _times(mean: float, var: float, message: Message) -> tuple[float, float]:
    """The moments of N(mean, var) times `message`; a point mass stays itself."""
    pi, tau = message
    if pi == 0.0 or var == 0.0:
        return mean, var
    precision = 1.0 / var + pi
    return (mean / var + tau) / precision, 1.0 / precision


def _step(new: Message, old: Message) -> float:
    """The larger change of mean and of standard deviation; inf when `old` is flat."""
    if old[0] == 0.0:
        return INF
    new_mean, new_var = moments(*new)
    old_mean, old_var = moments(*old)
    return max(abs(new_mean - old_mean), abs(math.sqrt(new_var) - math.sqrt(old_var)))


def team_performance(
    means: Sequence[float], variances: Sequence[float], betas: Sequence[float], weights: Sequence[float]
) -> tuple[float, float]:
    """t = Σ w·p with p ~ N(mu, sigma² + beta²): its (mean, variance)."""
    mean = var = 0.0
    for mu, sigma2, beta, w in zip(means, variances, betas, weights, strict=True):
        mean += w * mu
        var += w * w * (sigma2 + beta * beta)
    return mean, var


def likelihoods(
    means: Sequence[Sequence[float]],
    variances: Sequence[Sequence[float]],
    betas: Sequence[Sequence[float]],
    weights: Sequence[Sequence[float]],
    scores: Sequence[float],
    p_draw: float,
) -> tuple[list[list[Message]], float]:
    """Each player's likelihood message and the game's log evidence, given the players'
    priors N(mean, variance), per team, and the teams' scores (higher is better)."""
    count = len(means)
    # Best first; equal scores keep their listed order.
    order = sorted(range(count), key=lambda i: -scores[i])
    teams = [team_performance(means[k], variances[k], betas[k], weights[k]) for k in range(count)]
    perf = [teams[k] for k in order]
    links = count - 1
    ties = [scores[order[e]] == scores[order[e + 1]] for e in range(links)]
    margins = [
        draw_margin(
            p_draw, math.sqrt(sum(b * b for b in betas[order[e]]) + sum(b * b for b in betas[order[e + 1]]))
        )
        for e in range(links)
    ]
    if count == 2 and all(w == 1.0 for team in weights for w in team):
        team_messages, log_evidence = _two_teams(perf, margins[0], ties[0])
    else:
        team_messages, log_evidence = _chain(perf, margins, ties)
    by_team = [FLAT] * count
    for position, team in enumerate(order):
        by_team[team] = team_messages[position]
    players = [_to_players(by_team[k], means[k], variances[k], weights[k], teams[k]) for k in range(count)]
    return players, log_evidence


def _two_teams(perf: list[tuple[float, float]], margin: float, tie: bool) -> tuple[list[Message], float]:
    (m0, v0), (m1, v1) = perf
    mean, var = m0 - m1, v0 + v1
    log_evidence = log_outcome_probability(mean, math.sqrt(var), margin, tie)
    pi, tau = truncation_message(mean, var, margin, tie)
    if pi == 0.0:
        return [FLAT, FLAT], log_evidence
    d_mean, d_var = tau / pi, 1.0 / pi
    # t_0 = t_1 + d and t_1 = t_0 − d, each with the other team's prior.
    return [_natural(m1 + d_mean, v1 + d_var), _natural(m0 - d_mean, v0 + d_var)], log_evidence


def _chain(
    perf: list[tuple[float, float]], margins: list[float], ties: list[bool]
) -> tuple[list[Message], float]:
    """EP along the chain with the package's schedule: forward over links 0..n−3 setting
    the lower team's message, backward over links n−2..1 setting the upper team's."""
    count = len(perf)
    links = count - 1
    lose = [FLAT] * count  # message from the link above (the team lost it)
    win = [FLAT] * count  # message from the link below (the team won it)
    link_msg = [FLAT] * links
    log_evidence = 0.0

    def link(e: int, first: bool) -> None:
        nonlocal log_evidence
        upper_mean, upper_var = _times(*perf[e], lose[e])  # all t_e knows but its win message
        lower_mean, lower_var = _times(*perf[e + 1], win[e + 1])
        mean, var = upper_mean - lower_mean, upper_var + lower_var
        if first:
            log_evidence += log_outcome_probability(mean, math.sqrt(var), margins[e], ties[e])
        link_msg[e] = truncation_message(mean, var, margins[e], ties[e])

    def across(e: int, team: int, messages: list[Message], sign: float) -> Message:
        """The message over link e to the other team: t_team's belief ± d."""
        pi, tau = link_msg[e]
        if pi == 0.0:
            return FLAT
        mean, var = _times(*perf[team], messages[team])
        return _natural(mean + sign * tau / pi, var + 1.0 / pi)

    sweep = 0
    step = INF
    while step > INNER_EPSILON and sweep < INNER_SWEEPS:
        step = 0.0
        for e in range(links - 1):
            link(e, sweep == 0)
            new = across(e, e, lose, -1.0)
            step = max(step, _step(new, lose[e + 1]))
            lose[e + 1] = new
        for e in range(links - 1, 0, -1):
            link(e, sweep == 0 and e == links - 1)
            new = across(e, e + 1, win, 1.0)
            step = max(step, _step(new, win[e]))
            win[e] = new
        sweep += 1
    if links == 1:
        link(0, True)
    win[0] = across(0, 1, win, 1.0)
    lose[count - 1] = across(links - 1, count - 2, lose, -1.0)
    return [(w[0] + lo[0], w[1] + lo[1]) for w, lo in zip(win, lose, strict=True)], log_evidence


def _to_players(
    message: Message,
    means: Sequence[float],
    variances: Sequence[float],
    weights: Sequence[float],
    team: tuple[float, float],
) -> list[Message]:
    """t = Σ w_j·p_j, so player i's skill receives (t − everything else)/w_i."""
    if message[0] == 0.0:
        return [FLAT] * len(means)
    msg_mean, msg_var = moments(*message)
    team_mean, team_var = team
    out = []
    for mu, var, w in zip(means, variances, weights, strict=True):
        if w == 0.0:
            out.append(FLAT)
            continue
        rest_var = team_var - w * w * var
        if not rest_var > 0.0:
            rest_var = 0.0
        out.append(_natural((msg_mean - (team_mean - w * mu)) / w, (msg_var + rest_var) / (w * w)))
    return out


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
        count = len(self.teams)
        messages, self.log_evidence = likelihoods(
            [[p.prior.mu for p in team] for team in self.teams],
            [[p.prior.sigma**2 for p in team] for team in self.teams],
            [[p.beta for p in team] for team in self.teams],
            self.weights,
            result or [float(count - 1 - i) for i in range(count)],
            self.p_draw,
        )
        self.evidence = math.exp(self.log_evidence)
        self.likelihoods: list[list[Gaussian]] = [
            [Gaussian.natural(pi, tau) for pi, tau in team] for team in messages
        ]

    def __len__(self) -> int:
        return len(self.teams)

    def size(self) -> list[int]:
        return [len(team) for team in self.teams]

    def performance(self, team: int) -> Gaussian:
        players = self.teams[team]
        mean, var = team_performance(
            [p.prior.mu for p in players],
            [p.prior.sigma**2 for p in players],
            [p.beta for p in players],
            self.weights[team],
        )
        return Gaussian(mean, math.sqrt(var))

    def posteriors(self) -> list[list[Gaussian]]:
        return [
            [likelihood * player.prior for likelihood, player in zip(lk, team, strict=True)]
            for lk, team in zip(self.likelihoods, self.teams, strict=True)
        ]
