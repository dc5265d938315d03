"""Match outcomes from true skills, as the rating model says they happen (pure).

Seed 000 §2: each player performs p_i ~ N(s_i, β²) around their skill, a team performs the
sum of its players' performances, and teams finish in order of performance; two teams whose
performances differ by at most the draw margin ε draw, ε set from the draw probability of two
equal teams (seed 000 §4.1, app.rating.normal.draw_margin). With the scenario's `truth` equal
to the mode's settings, the rating model is exactly right, so a correct system recovers the
true skills.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from app.rating.normal import draw_margin

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# Two-team outcomes, from the first team's side.
FIRST_WINS, DRAW, SECOND_WINS = 0, 1, 2


def two_team_outcomes(
    rng: np.random.Generator,
    first: FloatArray,
    second: FloatArray,
    team_size: int,
    beta: float,
    draw_probability: float,
) -> IntArray:
    """Per match, FIRST_WINS, DRAW or SECOND_WINS, from the teams' summed true skills: the
    performance gap is N(first − second, 2·team_size·β²)."""
    noise = math.sqrt(2 * team_size) * beta
    gap = first - second + rng.normal(0.0, noise, len(first))
    margin = draw_margin(draw_probability, noise)
    outcome = np.where(gap > 0, FIRST_WINS, SECOND_WINS).astype(np.int64)
    outcome[np.abs(gap) <= margin] = DRAW
    return outcome


def ranks(
    rng: np.random.Generator, skills: FloatArray, team_size: int, beta: float, draw_probability: float
) -> FloatArray:
    """Per match (rows) the rank of each team (columns, summed true skills; 1 is first) for
    any number of teams: teams in order of performance, each tying with the one just above
    when within the draw margin (the chain of seed 000 §2)."""
    performance = skills + rng.normal(0.0, math.sqrt(team_size) * beta, skills.shape)
    return _places(performance, draw_margin(draw_probability, math.sqrt(2 * team_size) * beta))


def partial_places(
    rng: np.random.Generator,
    strength: FloatArray,
    noise: FloatArray,
    team_size: int,
    beta: float,
    draw_probability: float,
) -> FloatArray:
    """One game's places (1 first) per team when players took part in only some of it: each
    plays for a share w of the game (partial play, as the rating engine's weights read it), so
    a team performs Σ w·p, N(Σ w·s, Σ w²·β²): `strength` is Σ w·s and `noise` √(Σ w²)·β per
    team. The draw margin is the full game's (teams of `team_size`): the game's rule of a draw
    does not change when a player leaves."""
    performance = strength + rng.normal(0.0, 1.0, len(strength)) * noise
    margin = draw_margin(draw_probability, math.sqrt(2 * team_size) * beta)
    places: FloatArray = _places(performance[None, :], margin)[0]
    return places


def _places(performance: FloatArray, margin: float) -> FloatArray:
    """Per row, each column's place by performance, tying with the one just above within
    the margin."""
    matches, teams = performance.shape
    order = np.argsort(-performance, axis=1, kind="stable")
    ordered = np.take_along_axis(performance, order, axis=1)
    # A new place starts wherever a team is more than the margin below the one above.
    steps = np.concatenate([np.ones((matches, 1)), (ordered[:, :-1] - ordered[:, 1:] > margin)], axis=1)
    places = np.cumsum(steps, axis=1)
    result = np.empty((matches, teams))
    np.put_along_axis(result, order, places, axis=1)
    return result
