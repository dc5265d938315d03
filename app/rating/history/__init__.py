"""TrueSkill Through Time (seed 001), with the call shapes of the `trueskillthroughtime` package:

from app.rating.history import Gaussian, Player, Game, History
"""

from app.rating.history.game import Game, Player
from app.rating.history.gaussian import N00, N01, Gaussian, Ninf
from app.rating.history.history import History

__all__ = ["N00", "N01", "Game", "Gaussian", "History", "Ninf", "Player"]
