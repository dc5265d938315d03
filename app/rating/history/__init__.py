"""TrueSkill Through Time (seed 001), with the call shapes of the `trueskillthroughtime` package:

from app.rating.history import Gaussian, Player, Game, History

The package's public constants (MU, SIGMA, BETA, GAMMA, P_DRAW, EPSILON, ITERATIONS, inf) are
here under the same names, with the same values.
"""

from math import inf

from app.rating.history.game import BETA, GAMMA, MU, P_DRAW, SIGMA, Game, Player
from app.rating.history.gaussian import N00, N01, Gaussian, Ninf
from app.rating.history.history import EPSILON, ITERATIONS, History

__all__ = [
    "BETA",
    "EPSILON",
    "GAMMA",
    "ITERATIONS",
    "MU",
    "N00",
    "N01",
    "P_DRAW",
    "SIGMA",
    "Game",
    "Gaussian",
    "History",
    "Ninf",
    "Player",
    "inf",
]
