"""The TrueSkill environment: model constants plus the trueskill-package call shape."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from app.rating import normal
from app.rating.batch import Array, rate_two_team_batch
from app.rating.errors import TIE_WITHOUT_DRAWS, RatingInputError
from app.rating.gaussian import Gaussian
from app.rating.inference import (
    MAX_SWEEPS,
    TOLERANCE,
    chain_team_messages,
    comparison_margin,
    draw_margin,
    push_to_players,
    team_priors,
    two_teams,
    update_plain_ratings,
    update_ratings,
)
from app.rating.performance import PAPER_C0, PAPER_C1, PAPER_ROSTER_CAP, PerformanceModel
from app.rating.prediction import draw_chance, match_quality, win_probabilities
from app.rating.rating import DEFAULT_MU, DEFAULT_SIGMA, SIGMA_MAX, SIGMA_MIN, Rating
from app.rating.teams import Teams, read_teams
from app.rating.tie_layer import TIE_MODELS, team_messages

BETA_MIN = 1e-9
_PLAIN = (list, tuple)


def _positive(name: str, value: float, low: float = SIGMA_MIN) -> float:
    number = float(value)
    if not (number > 0.0) or math.isinf(number):
        raise RatingInputError(f"{name} must be positive and finite, got {value!r}")
    if not low <= number <= SIGMA_MAX:
        raise RatingInputError(f"{name} must be in [{low:g}, {SIGMA_MAX:g}], got {value!r}")
    return number


class TrueSkill:
    """Model constants of seed 000 (Xbox Live defaults) and the operations on them.

    `beta` defaults to sigma/2 and `tau` to sigma/100, as in seed 000 §4.2 and the
    trueskill package.

    Seed 002's fixes for team tournaments are opt-in: `tie_model="tie-layer"` (instead of
    TrueSkill's "chain") and `team_performance` one of "sum" (TrueSkill), "mean",
    "weighted" (coefficients given to `rate`) or "size-penalised-mean" (eq. 4, with
    `c0`, `c1` and `roster_cap`).
    """

    def __init__(
        self,
        mu: float = DEFAULT_MU,
        sigma: float = DEFAULT_SIGMA,
        beta: float | None = None,
        tau: float | None = None,
        draw_probability: float = 0.10,
        *,
        tolerance: float = TOLERANCE,
        max_sweeps: int = MAX_SWEEPS,
        tie_model: str = "chain",
        team_performance: str = "sum",
        c0: float = PAPER_C0,
        c1: float = PAPER_C1,
        roster_cap: int = PAPER_ROSTER_CAP,
    ) -> None:
        self.mu = Rating(mu, 1.0).mu
        self.sigma = _positive("sigma", sigma)
        # beta bounds the normalised performance gap, keeping every tail in double range.
        self.beta = _positive("beta", self.sigma / 2.0 if beta is None else beta, BETA_MIN)
        tau = self.sigma / 100.0 if tau is None else float(tau)
        if not (0.0 <= tau <= SIGMA_MAX):
            raise RatingInputError(f"tau must be zero or positive and finite, got {tau!r}")
        self.tau = tau
        p = float(draw_probability)
        if not (0.0 <= p < 1.0):
            raise RatingInputError(f"draw_probability must be in [0, 1), got {draw_probability!r}")
        self.draw_probability = p
        # Φ⁻¹((p + 1)/2) of seed 000 §4.1, fixed per environment.
        self.draw_z = normal.half_width(p)
        if not (tolerance > 0.0):
            raise RatingInputError("tolerance must be positive")
        if max_sweeps < 1:
            raise RatingInputError("max_sweeps must be at least 1")
        self.tolerance = float(tolerance)
        self.max_sweeps = int(max_sweeps)
        if tie_model not in TIE_MODELS:
            raise RatingInputError(f"tie_model must be one of {', '.join(TIE_MODELS)}, got {tie_model!r}")
        self.tie_model = tie_model
        self.performance = PerformanceModel(team_performance, float(c0), float(c1), int(roster_cap))
        self.team_performance = team_performance
        # TrueSkill proper (sum, chain) keeps the fast paths and the player-count margins.
        self._classic = tie_model == "chain" and team_performance == "sum"
        self._beta2 = self.beta * self.beta
        self._tau2 = self.tau * self.tau
        self._margins: dict[int, float] = {}

    def create_rating(self, mu: float | None = None, sigma: float | None = None) -> Rating:
        """A rating at this environment's prior, or at the given values."""
        return Rating(self.mu if mu is None else mu, self.sigma if sigma is None else sigma)

    def rate(
        self,
        rating_groups: Any,
        ranks: Any = None,
        weights: Any = None,
        *,
        scores: Any = None,
        coefficients: Any = None,
    ) -> list[Any]:
        """New ratings after a match, in the structure `rating_groups` was given in.

        `ranks`: lower is better, equal ranks tie (default: the order of the teams).
        `scores`: higher is better, equal scores tie; an alternative to ranks.
        `weights`: partial play in [0, 1] per player (nested like the groups, or a dict
        keyed by (team index, player key)).
        `coefficients`: with team_performance="weighted", each player's coefficient in the
        team performance (positive; nested or keyed like weights; 1 where not given).
        """
        plain = weights is None and scores is None and coefficients is None
        if self._classic and plain and type(rating_groups) in _PLAIN:
            fast = self._rate_plain(rating_groups, ranks)
            if fast is not None:
                return fast
        teams = read_teams(rating_groups, ranks, weights, scores, coefficients)
        return teams.rebuild(self._rate_teams(teams))

    def _given_alphas(self, teams: Teams) -> list[list[float]]:
        """The team-performance coefficients of a match, from its weights and coefficients."""
        return self.performance.coefficients(teams.ratings, teams.weights, teams.coefficients)

    def _rate_teams(self, teams: Teams) -> list[list[Rating]]:
        alphas = self._given_alphas(teams)
        if self.tie_model == "chain":
            return update_ratings(
                teams.ratings,
                alphas,
                teams.ranks,
                self.beta,
                self.tau,
                self.draw_z,
                self.tolerance,
                self.max_sweeps,
                self._noise(alphas),
            )
        means, variances, to_pi, to_tau = self._team_messages(teams, alphas)
        return push_to_players(teams.ratings, alphas, means, variances, to_pi, to_tau, self._tau2)

    def _team_messages(
        self, teams: Teams, alphas: list[list[float]]
    ) -> tuple[list[float], list[float], list[float], list[float]]:
        """Team performance priors and the messages the result layer sends them."""
        noise = self._noise(alphas)
        draw_z = self.draw_z
        if self.tie_model == "tie-layer":
            eps = self.tie_layer_eps(teams.ratings, noise)
            if eps > 0.0:
                means, variances = team_priors(teams.ratings, alphas, self._beta2, self._tau2)
                to_pi, to_tau = team_messages(
                    means, variances, teams.ranks, eps, self.tolerance, self.max_sweeps
                )
                return means, variances, to_pi, to_tau
            if len(set(teams.ranks)) < len(teams.ranks):
                raise RatingInputError(TIE_WITHOUT_DRAWS)
            # With eps = 0 the layer pins l_k = t_k: TrueSkill's chain without draws.
            draw_z = 0.0
        return chain_team_messages(
            teams.ratings,
            alphas,
            teams.ranks,
            self.beta,
            self._tau2,
            draw_z,
            self.tolerance,
            self.max_sweeps,
            noise,
        )

    def performance_posteriors(
        self,
        rating_groups: Any,
        ranks: Any = None,
        weights: Any = None,
        *,
        scores: Any = None,
        coefficients: Any = None,
    ) -> list[Gaussian]:
        """The posterior of each team's performance t in the match, in team order: where the
        result places the teams, before it is pushed back to the players' skills."""
        teams = read_teams(rating_groups, ranks, weights, scores, coefficients)
        alphas = self._given_alphas(teams)
        means, variances, to_pi, to_tau = self._team_messages(teams, alphas)
        return [
            Gaussian(pi=1.0 / v + p, tau=m / v + t)
            for m, v, p, t in zip(means, variances, to_pi, to_tau, strict=True)
        ]

    def _noise(self, alphas: list[list[float]]) -> list[float] | None:
        """Per team Σ α²·beta², the performance noise the draw margin scales with; None for
        TrueSkill's sum, whose margin counts players (seed 000 §4.1, the vectors' convention)."""
        if self.team_performance == "sum":
            return None
        return [self._beta2 * sum(a * a for a in team) for team in alphas]

    def tie_layer_eps(self, ratings: list[list[Rating]], noise: list[float] | None) -> float:
        """The eps of |l_k − t_j| <= eps in the tie layer.

        Two teams of one place are within 2·eps, so 2·eps plays the part of TrueSkill's
        draw margin for two average teams of the match: eps = ½·Φ⁻¹((p + 1)/2)·sqrt(2·n̄)
        with n̄ the mean per-team performance noise (players × beta² for the sum).
        """
        if noise is None:
            noise = [len(team) * self._beta2 for team in ratings]
        return 0.5 * self.draw_z * math.sqrt(2.0 * sum(noise) / len(noise))

    def _rate_plain(self, groups: Sequence[Any], ranks: Any) -> list[Any] | None:
        """The common call (lists or tuples of Ratings, plain ranks) without the general
        input machinery; None sends the call down the general, fully validating path."""
        count = len(groups)
        if count < 2:
            return None
        for group in groups:
            if type(group) not in _PLAIN or not group:
                return None
            for rating in group:
                if type(rating) is not Rating:
                    return None
        if ranks is None:
            rank_list: list[float] = [float(i) for i in range(count)]
        elif type(ranks) in _PLAIN and len(ranks) == count:
            rank_list = list(ranks)
            for rank in rank_list:
                if type(rank) is not int and not (type(rank) is float and math.isfinite(rank)):
                    return None
        else:
            return None
        if count == 2:
            first = 0 if rank_list[0] <= rank_list[1] else 1
            tie = rank_list[0] == rank_list[1]
            margin = self._margin(len(groups[0]) + len(groups[1]))
            if tie and margin <= 0.0:
                return None
            top, bottom = two_teams(
                groups[first], groups[1 - first], None, None, tie, margin, self._beta2, self._tau2
            )
            return [tuple(top), tuple(bottom)] if first == 0 else [tuple(bottom), tuple(top)]
        return update_plain_ratings(
            groups, rank_list, self.beta, self._tau2, self.draw_z, self.tolerance, self.max_sweeps
        )

    def _margin(self, players: int) -> float:
        margin = self._margins.get(players)
        if margin is None:
            margin = self._margins[players] = draw_margin(self.draw_z, players, self.beta)
        return margin

    def quality(self, rating_groups: Any, weights: Any = None) -> float:
        """Seed 000 eq. 7 (general form): how likely a draw is, relative to the fairest match."""
        teams = read_teams(rating_groups, None, weights)
        return match_quality(teams.ratings, self._alphas(teams), self.beta)

    def win_probability(self, rating_groups: Any, weights: Any = None) -> list[float]:
        """The probability that each team finishes first; the list sums to 1."""
        teams = read_teams(rating_groups, None, weights)
        return win_probabilities(teams.ratings, self._alphas(teams), self.beta)

    def draw_probability_of(self, rating_groups: Any, weights: Any = None) -> float:
        """The probability that two teams draw, under this environment's draw margin."""
        teams = read_teams(rating_groups, None, weights)
        if len(teams.ratings) != 2:
            raise RatingInputError(f"draw probability is defined for 2 teams, got {len(teams.ratings)}")
        alphas = self._alphas(teams)
        margin = comparison_margin(self.draw_z, self.beta, teams.ratings, self._noise(alphas), 0, 1)
        return draw_chance(teams.ratings, alphas, self.beta, margin)

    def _alphas(self, teams: Teams) -> list[list[float]]:
        """Predictions use the same team-performance function as rating ("weighted" with
        unit coefficients, since none come with a prediction)."""
        return self.performance.coefficients(teams.ratings, teams.weights, None)

    def expose(self, rating: Rating, k: float = 3.0) -> float:
        """The conservative estimate mu − k·sigma (seed 000 §4.2 uses k = 3)."""
        return float(rating.mu - k * rating.sigma)

    def rate_1vs1(self, rating1: Rating, rating2: Rating, drawn: bool = False) -> tuple[Rating, Rating]:
        """New ratings of a winner and a loser (or of two players who drew)."""
        (a,), (b,) = self.rate([(rating1,), (rating2,)], ranks=[0, 0] if drawn else [0, 1])
        return a, b

    def rate_1vs1_batch(
        self,
        winner_mu: Array,
        winner_sigma: Array,
        loser_mu: Array,
        loser_sigma: Array,
        drawn: npt.NDArray[np.bool_] | None = None,
    ) -> tuple[Array, Array, Array, Array]:
        """rate_1vs1 for many independent matches at once: arrays in, arrays out."""
        wmu, wsig, lmu, lsig = (
            np.asarray(a, dtype=np.float64)[:, None] for a in (winner_mu, winner_sigma, loser_mu, loser_sigma)
        )
        wm, ws, lm, ls = (a[:, 0] for a in self.rate_two_team_batch(wmu, wsig, lmu, lsig, drawn))
        return wm, ws, lm, ls

    def rate_two_team_batch(
        self,
        winner_mu: Array,
        winner_sigma: Array,
        loser_mu: Array,
        loser_sigma: Array,
        drawn: npt.NDArray[np.bool_] | None = None,
    ) -> tuple[Array, Array, Array, Array]:
        """Many two-team matches of one shape at once: arrays of shape (matches, team size)."""
        if not self._classic:
            raise RatingInputError("batch rating supports TrueSkill's own model (sum, chain) only")
        return rate_two_team_batch(
            winner_mu, winner_sigma, loser_mu, loser_sigma, drawn, self.beta, self.tau, self.draw_z
        )

    def quality_1vs1(self, rating1: Rating, rating2: Rating) -> float:
        return self.quality([(rating1,), (rating2,)])

    def __repr__(self) -> str:
        return (
            f"TrueSkill(mu={self.mu:.3f}, sigma={self.sigma:.3f}, beta={self.beta:.3f}, "
            f"tau={self.tau:.3f}, draw_probability={self.draw_probability:.1%}, "
            f"tie_model={self.tie_model!r}, team_performance={self.team_performance!r})"
        )


# trueskill's spelling of create_rating: `env.Rating(mu, sigma)`.
TrueSkill.Rating = TrueSkill.create_rating  # type: ignore[attr-defined]
