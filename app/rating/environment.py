"""The TrueSkill environment: model constants, and the trueskill package's call shape on them."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from itertools import pairwise
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
    chain,
    chain_order,
    chain_ties,
    push_to_players,
    team_performances,
    team_updates,
    two_teams,
)
from app.rating.performance import PAPER_C0, PAPER_C1, PAPER_ROSTER_CAP, PerformanceModel
from app.rating.prediction import draw_chance, match_quality, win_probabilities
from app.rating.rating import (
    BETA,
    DRAW_PROBABILITY,
    GLOBAL_PRIOR,
    MU,
    SIGMA,
    SIGMA_MAX,
    SIGMA_MIN,
    TAU,
    Rating,
    conservative,
)
from app.rating.teams import Teams, read_groups, read_teams
from app.rating.tie_layer import TIE_MODELS, team_messages

BETA_MIN = 1e-9
# The trueskill package's backends: which Φ, φ and Φ⁻¹ it computes with. Ours are exact to
# double precision in both tails (app/rating/normal.py), so every choice rates alike.
BACKENDS = (None, "mpmath", "scipy")

# The package's dynamic draw probability: (team performance, team performance, env) -> p.
DrawProbability = float | Callable[[Rating, Rating, "TrueSkill"], float]


def _positive(name: str, value: float, low: float = SIGMA_MIN) -> float:
    number = float(value)
    if not (number > 0.0) or math.isinf(number):
        raise RatingInputError(f"{name} must be positive and finite, got {value!r}")
    if not low <= number <= SIGMA_MAX:
        raise RatingInputError(f"{name} must be in [{low:g}, {SIGMA_MAX:g}], got {value!r}")
    return number


def _probability(value: float) -> float:
    p = float(value)
    if not (0.0 <= p < 1.0):
        raise RatingInputError(f"draw_probability must be in [0, 1), got {value!r}")
    return p


class TrueSkill:
    """Model constants of seed 000 and the operations on them, as the trueskill package has them.

    The defaults are the package's in every form: mu = 25, sigma = 25/3, beta = 25/6,
    tau = 25/300 and draw_probability = 0.10, each on its own, so `TrueSkill(mu=1000,
    sigma=200)` keeps beta = 25/6 and tau = 25/300 (give them for another scale).
    `draw_probability` may also be a function of the two compared teams' performances
    and the environment, as in the package.

    `backend` is accepted and kept as `env.backend`, and changes nothing: the package
    offers mpmath and scipy for Φ, φ and Φ⁻¹ because its own lose the tails; ours are
    exact to double precision everywhere, and `env.cdf`, `env.pdf`, `env.ppf` are they.

    Seed 002's fixes for team tournaments are opt-in: `tie_model="tie-layer"` (instead of
    TrueSkill's "chain") and `team_performance` one of "sum" (TrueSkill), "mean",
    "weighted" (coefficients given to `rate`) or "size-penalised-mean" (eq. 4, with
    `c0`, `c1` and `roster_cap`).
    """

    cdf = staticmethod(normal.cdf)
    pdf = staticmethod(normal.pdf)
    ppf = staticmethod(normal.ppf)

    def __init__(
        self,
        mu: float = MU,
        sigma: float = SIGMA,
        beta: float | None = BETA,
        tau: float | None = TAU,
        draw_probability: DrawProbability = DRAW_PROBABILITY,
        backend: Any = None,
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
        self.beta = _positive("beta", BETA if beta is None else beta, BETA_MIN)
        tau = TAU if tau is None else float(tau)
        if not (0.0 <= tau <= SIGMA_MAX):
            raise RatingInputError(f"tau must be zero or positive and finite, got {tau!r}")
        self.tau = tau
        if not (isinstance(backend, tuple) and len(backend) == 3) and backend not in BACKENDS:
            raise RatingInputError(f"backend must be one of {BACKENDS} or (cdf, pdf, ppf), got {backend!r}")
        self.backend = backend
        if callable(draw_probability):
            self.draw_probability: DrawProbability = draw_probability
            self._dynamic: Callable[[Rating, Rating, TrueSkill], float] | None = draw_probability
            self._fixed_probability = math.nan
            self.draw_z = math.nan
        else:
            self.draw_probability = self._fixed_probability = _probability(draw_probability)
            self._dynamic = None
            # Φ⁻¹((p + 1)/2) of seed 000 §4.1, fixed per environment.
            self.draw_z = normal.half_width(self.draw_probability)
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
        if self._dynamic is not None and (tie_model != "chain" or team_performance != "sum"):
            raise RatingInputError(
                "a dynamic draw_probability needs tie_model='chain' and team_performance='sum'"
            )
        self._beta2 = self.beta * self.beta
        self._tau2 = self.tau * self.tau
        # Draw margins by the players of the two compared teams, computed once each.
        self._margins: dict[int, float] = {}

    def create_rating(self, mu: float | None = None, sigma: float | None = None) -> Rating:
        """A rating at this environment's prior, or at the given values."""
        return Rating(self.mu if mu is None else mu, self.sigma if sigma is None else sigma)

    def rate(
        self,
        rating_groups: Any,
        ranks: Any = None,
        weights: Any = None,
        min_delta: float | None = None,
        *,
        scores: Any = None,
        coefficients: Any = None,
    ) -> list[Any]:
        """New ratings after a match, in the structure `rating_groups` was given in.

        `ranks`: lower is better, equal ranks tie (default: the order of the teams).
        `scores`: higher is better, equal scores tie; an alternative to ranks.
        `weights`: partial play in [0, 1] per player (nested like the groups, or a dict
        keyed by (team index, player key)).
        `min_delta`: the package's argument. It must be positive (ValueError otherwise), and
        weights below it count as min_delta, as there. The package also stops its sweeps
        at that threshold; here they always run to the environment's `tolerance` (1e-9,
        tighter than the package's default 1e-4), or to min_delta if that is tighter still.
        `coefficients`: with team_performance="weighted", each player's coefficient in the
        team performance (positive; nested or keyed like weights; 1 where not given).
        """
        teams = read_teams(rating_groups, ranks, weights, scores, coefficients)
        tolerance = self.tolerance
        if min_delta is not None:
            if not (min_delta > 0.0):
                raise RatingInputError(f"min_delta must be greater than 0, got {min_delta!r}")
            teams.weights = [[max(w, min_delta) for w in team] for team in teams.weights]
            tolerance = min(tolerance, float(min_delta))
        return teams.rebuild(self._rate_teams(teams, tolerance))

    def _rate_teams(self, teams: Teams, tolerance: float) -> list[tuple[Rating, ...]]:
        ratings = teams.ratings
        alphas = self.performance.coefficients(ratings, teams.weights, teams.coefficients)
        means, variances = team_performances(ratings, alphas, self._beta2, self._tau2)
        ranks = teams.ranks
        if self.tie_model == "chain" and len(ranks) == 2:
            winner = 0 if ranks[0] <= ranks[1] else 1
            tie = ranks[0] == ranks[1]
            margin = self._margin(ratings, self._noise(alphas), means, variances, 0, 1)
            if tie and margin <= 0.0:
                raise RatingInputError(TIE_WITHOUT_DRAWS)
            updates = two_teams(means, variances, winner, tie, margin)
        else:
            to_pi, to_tau = self._team_messages(ratings, alphas, ranks, means, variances, tolerance)
            updates = team_updates(means, variances, to_pi, to_tau)
        return push_to_players(ratings, alphas, variances, updates, self._tau2)

    def _team_messages(
        self,
        ratings: list[list[Rating]],
        alphas: list[list[float]],
        ranks: list[float],
        means: list[float],
        variances: list[float],
        tolerance: float,
    ) -> tuple[list[float], list[float]]:
        """The message the result layer sends each team performance, in team order."""
        order = chain_order(ranks)
        if self.tie_model == "tie-layer":
            eps = self.tie_layer_eps(ratings, self._noise(alphas))
            if eps > 0.0:
                return team_messages(means, variances, ranks, eps, tolerance, self.max_sweeps)
            if len(set(ranks)) < len(ranks):
                raise RatingInputError(TIE_WITHOUT_DRAWS)
            # With eps = 0 the layer pins l_k = t_k: TrueSkill's chain without draws.
            margins = [0.0] * (len(order) - 1)
        else:
            margins = self._chain_margins(ratings, alphas, means, variances, order)
        ranked = []
        for team in order:
            ranked.append(ranks[team])
        ties = chain_ties(ranked, margins)
        return chain(means, variances, order, margins, ties, tolerance, self.max_sweeps)

    def _chain_margins(
        self,
        ratings: list[list[Rating]],
        alphas: list[list[float]],
        means: list[float],
        variances: list[float],
        order: list[int],
    ) -> list[float]:
        """The draw margin between each pair of neighbouring teams along `order`."""
        noise = self._noise(alphas)
        margins = []
        for a, b in pairwise(order):
            margins.append(self._margin(ratings, noise, means, variances, a, b))
        return margins

    def _margin(
        self,
        ratings: list[list[Rating]],
        noise: list[float] | None,
        means: list[float],
        variances: list[float],
        a: int,
        b: int,
    ) -> float:
        """The draw margin between teams a and b.

        TrueSkill's sum: seed 000 §4.1 by player counts, Φ⁻¹((p + 1)/2)·sqrt(n_a + n_b)·beta.
        Other team-performance functions: Φ⁻¹((p + 1)/2)·sqrt(noise_a + noise_b) with the
        performance noise Σ α²·beta² of each team, which is the same for the sum and
        scales with any other function. A dynamic draw probability is asked per pair, given
        the two team performances N(m_k, V_k), as the package asks it.
        """
        if noise is not None:
            return normal.draw_margin(self._fixed_probability, math.sqrt(noise[a] + noise[b]))
        players = len(ratings[a]) + len(ratings[b])
        if self._dynamic is not None:
            sqrt = math.sqrt
            p = self._dynamic(
                Rating(means[a], sqrt(variances[a])), Rating(means[b], sqrt(variances[b])), self
            )
            return normal.draw_margin(_probability(p), math.sqrt(players) * self.beta)
        margin = self._margins.get(players)
        if margin is None:
            margin = normal.draw_margin(self._fixed_probability, math.sqrt(players) * self.beta)
            self._margins[players] = margin
        return margin

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
        alphas = self.performance.coefficients(teams.ratings, teams.weights, teams.coefficients)
        means, variances = team_performances(teams.ratings, alphas, self._beta2, self._tau2)
        to_pi, to_tau = self._team_messages(
            teams.ratings, alphas, teams.ranks, means, variances, self.tolerance
        )
        return [
            Gaussian(pi=1.0 / v + p, tau=m / v + t)
            for m, v, p, t in zip(means, variances, to_pi, to_tau, strict=True)
        ]

    def quality(self, rating_groups: Any, weights: Any = None) -> float:
        """Seed 000 eq. 7 (general form): how likely a draw is, relative to the fairest match."""
        return self.quality_of(read_teams(rating_groups, None, weights))

    def quality_of(self, teams: Teams) -> float:
        """`quality` of teams already read (app.rating.teams.read_teams)."""
        return match_quality(teams.ratings, self._alphas(teams), self.beta)

    def rate_teams(self, teams: Teams) -> list[tuple[Rating, ...]]:
        """`rate` of teams already read, as a tuple of new ratings per team: a caller that
        also wants the quality reads the match once (app.rating.match)."""
        return self._rate_teams(teams, self.tolerance)

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
        means, variances = team_performances(teams.ratings, alphas, self._beta2, 0.0)
        (margin,) = self._chain_margins(teams.ratings, alphas, means, variances, [0, 1])
        return draw_chance(teams.ratings, alphas, self.beta, margin)

    def _alphas(self, teams: Teams) -> list[list[float]]:
        """Predictions use the same team-performance function as rating ("weighted" with
        unit coefficients, since none come with a prediction)."""
        return self.performance.coefficients(teams.ratings, teams.weights, None)

    def expose(self, rating: Rating, k: float | None = None) -> float:
        """The conservative estimate mu − k·sigma. k defaults to the package's mu/sigma of
        this environment (3 for the defaults, as in seed 000 §4.2), so a new player's is 0."""
        if k is None:
            k = self.mu / self.sigma
        return float(conservative(rating.mu, rating.sigma, k))

    def validate_rating_groups(
        self, rating_groups: Any
    ) -> tuple[list[tuple[Rating, ...]], list[tuple[Any, ...]] | None]:
        """The package's check of a match's teams: (teams as tuples of ratings, their dict keys
        or None). ValueError for fewer than two teams or an empty one, TypeError for teams of
        mixed kinds or a rating given as a team."""
        ratings, keys = read_groups(rating_groups)
        return [tuple(team) for team in ratings], None if keys is None else [tuple(k) for k in keys]

    def make_as_global(self) -> TrueSkill:
        """Make this the environment of the module-level functions and of `Rating()`."""
        return setup(env=self)

    @property
    def batch_covers(self) -> bool:
        """Whether the batch path (`rate_two_team_batch`) rates this environment's two-team
        matches of unit weights: TrueSkill's own model (sum, chain, a fixed draw probability)."""
        return self.tie_model == "chain" and self.team_performance == "sum" and self._dynamic is None

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
        if not self.batch_covers:
            raise RatingInputError(
                "batch rating supports TrueSkill's own model (sum, chain, fixed draws) only"
            )
        return rate_two_team_batch(
            winner_mu,
            winner_sigma,
            loser_mu,
            loser_sigma,
            drawn,
            self.beta,
            self.tau,
            self._fixed_probability,
        )

    # The package's deprecated spellings, warning as there.

    def transform_ratings(
        self, rating_groups: Any, ranks: Any = None, min_delta: float | None = None
    ) -> list[Any]:
        """Deprecated: rate, with single ratings taken as teams of one."""
        warnings.warn("Use TrueSkill.rate() instead", DeprecationWarning, stacklevel=2)
        return self.rate(_as_teams(rating_groups), ranks, min_delta=min_delta)

    def match_quality(self, rating_groups: Any) -> float:
        """Deprecated: quality, with single ratings taken as teams of one."""
        warnings.warn("Use TrueSkill.quality() instead", DeprecationWarning, stacklevel=2)
        return self.quality(_as_teams(rating_groups))

    def rate_1vs1(
        self, rating1: Rating, rating2: Rating, drawn: bool = False, min_delta: float | None = None
    ) -> tuple[Rating, Rating]:
        """Deprecated: the module-level rate_1vs1(..., env=self)."""
        warnings.warn("Use global function rate_1vs1() instead", DeprecationWarning, stacklevel=2)
        return rate_1vs1(rating1, rating2, drawn, min_delta, self)

    def quality_1vs1(self, rating1: Rating, rating2: Rating) -> float:
        """Deprecated: the module-level quality_1vs1(..., env=self)."""
        warnings.warn("Use global function quality_1vs1() instead", DeprecationWarning, stacklevel=2)
        return quality_1vs1(rating1, rating2, self)

    def __repr__(self) -> str:
        p = self.draw_probability
        draw = f"{p:.1%}" if isinstance(p, float) else getattr(p, "__name__", repr(p))
        backend = "" if self.backend is None else f", backend={self.backend!r}"
        extra = ""
        if (self.tie_model, self.team_performance) != ("chain", "sum"):
            extra = f", tie_model={self.tie_model!r}, team_performance={self.team_performance!r}"
        return (
            f"TrueSkill(mu={self.mu:.3f}, sigma={self.sigma:.3f}, beta={self.beta:.3f}, "
            f"tau={self.tau:.3f}, draw_probability={draw}{backend}{extra})"
        )


def _deprecated_rating(env: TrueSkill, mu: float | None = None, sigma: float | None = None) -> Rating:
    """Deprecated: create_rating."""
    warnings.warn("Use TrueSkill.create_rating() instead", DeprecationWarning, stacklevel=2)
    return env.create_rating(mu, sigma)


# The package's `env.Rating(mu, sigma)`; set here, since inside the class the name would
# hide the Rating type.
TrueSkill.Rating = _deprecated_rating  # type: ignore[attr-defined]


def _as_teams(rating_groups: Any) -> list[Any]:
    return [(group,) if isinstance(group, Rating) else group for group in rating_groups]


# The environment of the module-level functions and of Rating(): the package's global_env.
_global: list[TrueSkill] = []


def global_env() -> TrueSkill:
    """The environment the module-level functions use."""
    if not _global:
        setup()
    return _global[0]


def setup(
    mu: float = MU,
    sigma: float = SIGMA,
    beta: float | None = BETA,
    tau: float | None = TAU,
    draw_probability: DrawProbability = DRAW_PROBABILITY,
    backend: Any = None,
    env: TrueSkill | None = None,
    **options: Any,
) -> TrueSkill:
    """Replace the global environment, as `trueskill.setup` does: with `env`, or with a new
    one from the arguments (and TrueSkill's keyword-only options). Rating() follows it."""
    if env is None:
        env = TrueSkill(mu, sigma, beta, tau, draw_probability, backend, **options)
    _global[:] = [env]
    GLOBAL_PRIOR["mu"] = env.mu
    GLOBAL_PRIOR["sigma"] = env.sigma
    return env


def rate_1vs1(
    rating1: Rating,
    rating2: Rating,
    drawn: bool = False,
    min_delta: float | None = None,
    env: TrueSkill | None = None,
) -> tuple[Rating, Rating]:
    """New ratings of a winner and a loser (or of two players who drew)."""
    (a,), (b,) = (env or global_env()).rate(
        [(rating1,), (rating2,)], [0, 0 if drawn else 1], min_delta=min_delta
    )
    return a, b


def quality_1vs1(rating1: Rating, rating2: Rating, env: TrueSkill | None = None) -> float:
    """Match quality of two players (seed 000 eq. 7)."""
    return (env or global_env()).quality([(rating1,), (rating2,)])
