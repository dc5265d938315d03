"""Turning the caller's rating groups into flat numbers, and the results back.

The call shape is the `trueskill` package's: a sequence of teams, each a sequence of
ratings or a dict from player key to rating; ranks (lower is better) or scores
(higher is better); and partial-play weights as nested sequences or a dict keyed by
(team index, player key). Every shape error raises RatingInputError naming it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.rating.errors import RatingInputError, RatingTypeError
from app.rating.rating import Rating

RatingGroup = Sequence[Rating] | Mapping[Any, Rating]
Weights = Sequence[Sequence[float]] | Mapping[tuple[int, Any], float]


@dataclass(slots=True)
class Teams:
    """The flat form the inference works on, in the caller's team order."""

    ratings: list[list[Rating]]
    weights: list[list[float]]
    keys: list[list[Any]] | None
    # One entry per team, lower is better, equal is a tie.
    ranks: list[float]
    # Team-performance coefficients given with the match (team_performance="weighted").
    coefficients: list[list[float]] | None = None

    def rebuild(self, results: list[tuple[Rating, ...]]) -> list[Any]:
        """Give results back in the structure the caller used: tuples, or dicts by key."""
        if self.keys is None:
            return results
        return [dict(zip(keys, team, strict=True)) for keys, team in zip(self.keys, results, strict=True)]


def _as_rating(value: Any, team: int) -> Rating:
    if type(value) is Rating:
        return value
    if isinstance(value, Rating):
        return value
    mu = getattr(value, "mu", None)
    sigma = getattr(value, "sigma", None)
    if mu is None or sigma is None:
        raise RatingInputError(f"team {team} holds {value!r}, which is not a Rating")
    return Rating(mu, sigma)


def read_groups(rating_groups: Any) -> tuple[list[list[Rating]], list[list[Any]] | None]:
    """Validate the teams; return their ratings and, for dict groups, their keys.

    As in the trueskill package, a Rating given where a team belongs, and teams of mixed
    kinds (dicts and sequences), raise RatingTypeError (a TypeError and a ValueError)."""
    kind = type(rating_groups)
    if (
        kind is not list
        and kind is not tuple
        and (isinstance(rating_groups, (str, bytes, Mapping)) or not isinstance(rating_groups, Sequence))
    ):
        raise RatingInputError("rating_groups must be a sequence of teams")
    if len(rating_groups) < 2:
        raise RatingInputError(f"a match needs at least 2 teams, got {len(rating_groups)}")
    first = type(rating_groups[0])
    by_key = first is not list and first is not tuple and isinstance(rating_groups[0], Mapping)
    ratings: list[list[Rating]] = []
    keys: list[list[Any]] | None = [] if by_key else None
    seen: set[Any] = set()
    for index, group in enumerate(rating_groups):
        kind = type(group)
        if kind is list or kind is tuple:
            # The common call: a list or tuple of Ratings, checked without the ABCs (a loop,
            # not a comprehension, which costs a call of its own).
            team = list(group)
            for rating in team:
                if type(rating) is not Rating:
                    team = [_as_rating(r, index) for r in group]
                    break
            mapping = False
        elif isinstance(group, Rating):
            raise RatingTypeError(f"team {index} is a Rating, not a team: wrap it as ({group!r},)")
        elif isinstance(group, Mapping):
            team = [_as_rating(r, index) for r in group.values()]
            mapping = True
        elif isinstance(group, (str, bytes)) or not isinstance(group, Sequence):
            raise RatingInputError(f"team {index} must be a sequence of ratings")
        else:
            team = [_as_rating(r, index) for r in group]
            mapping = False
        if mapping is not by_key:
            raise RatingTypeError("teams must all be dicts or all be sequences, not a mix")
        if not team:
            raise RatingInputError(f"team {index} is empty")
        if keys is not None:
            for key in group:
                if key in seen:
                    raise RatingInputError(f"player {key!r} appears twice")
                seen.add(key)
            keys.append(list(group))
        ratings.append(team)
    return ratings, keys


def _finite_list(values: Any, name: str, count: int) -> list[float]:
    kind = type(values)
    if (
        kind is not list
        and kind is not tuple
        and (isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Sequence))
    ):
        raise RatingInputError(f"{name} must be a sequence with one entry per team")
    if len(values) != count:
        raise RatingInputError(f"{name} has {len(values)} entries for {count} teams")
    out: list[float] = []
    isfinite = math.isfinite
    for value in values:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise RatingInputError(f"{name} must be numbers, got {value!r}") from None
        if not isfinite(number):
            raise RatingInputError(f"{name} must be finite, got {value!r}")
        out.append(number)
    return out


def read_ranks(ranks: Any, scores: Any, count: int) -> list[float]:
    """Ranks (lower is better) from either ranks or scores (higher is better)."""
    if ranks is not None and scores is not None:
        raise RatingInputError("give ranks or scores, not both")
    if scores is not None:
        return [-s for s in _finite_list(scores, "scores", count)]
    if ranks is None:
        return [float(i) for i in range(count)]
    return _finite_list(ranks, "ranks", count)


# Team-performance coefficients ("weighted") are positive and at most this large.
COEFFICIENT_MAX = 1e6


def _weight(value: Any, team: int, player: Any, name: str = "weight") -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise RatingInputError(f"{name} of team {team} player {player!r} must be a number") from None
    if name == "weight":
        if not (0.0 <= number <= 1.0):
            raise RatingInputError(
                f"weight of team {team} player {player!r} must be in [0, 1], got {value!r}"
            )
    elif not (0.0 < number <= COEFFICIENT_MAX):
        raise RatingInputError(
            f"{name} of team {team} player {player!r} must be in (0, {COEFFICIENT_MAX:g}], got {value!r}"
        )
    return number


def read_weights(
    weights: Any, ratings: list[list[Rating]], keys: list[list[Any]] | None, name: str = "weight"
) -> list[list[float]]:
    """Per-player numbers, 1 where not given: partial-play weights in [0, 1] or, with
    name="coefficient", team-performance coefficients in (0, COEFFICIENT_MAX]."""
    if weights is None:
        ones = []
        for team in ratings:
            ones.append([1.0] * len(team))
        return ones
    plural = f"{name}s"
    # Lists and tuples are told apart from the other shapes without the ABCs' isinstance,
    # which costs more than the rest of a small match's checks (as in read_groups).
    kind = type(weights)
    plain = kind is list or kind is tuple
    if not plain and isinstance(weights, Mapping):
        out = [[1.0] * len(team) for team in ratings]
        for where, value in weights.items():
            if not (isinstance(where, tuple) and len(where) == 2):
                raise RatingInputError(f"{name} keys must be (team index, player), got {where!r}")
            team, player = where
            if not isinstance(team, int) or not 0 <= team < len(ratings):
                raise RatingInputError(f"{name} for unknown team {team!r}")
            if keys is not None:
                if player not in keys[team]:
                    raise RatingInputError(f"{name} for player {player!r}, who is not in team {team}")
                index = keys[team].index(player)
            else:
                if not isinstance(player, int) or not 0 <= player < len(ratings[team]):
                    raise RatingInputError(f"{name} for unknown player {player!r} of team {team}")
                index = player
            out[team][index] = _weight(value, team, player, name)
        return _checked_teams(out)
    if (not plain and (isinstance(weights, (str, bytes)) or not isinstance(weights, Sequence))) or len(
        weights
    ) != len(ratings):
        raise RatingInputError(f"{plural} must have one entry per team ({len(ratings)})")
    out = []
    for index, (team_weights, team) in enumerate(zip(weights, ratings, strict=True)):
        kind = type(team_weights)
        if (
            kind is not list
            and kind is not tuple
            and (isinstance(team_weights, (str, bytes)) or not isinstance(team_weights, Sequence))
        ):
            raise RatingInputError(f"{plural} of team {index} must be a sequence")
        if len(team_weights) != len(team):
            raise RatingInputError(
                f"{plural} of team {index} have {len(team_weights)} entries for {len(team)} players"
            )
        out.append([_weight(w, index, j, name) for j, w in enumerate(team_weights)])
    return _checked_teams(out)


def _checked_teams(weights: list[list[float]]) -> list[list[float]]:
    for index, team in enumerate(weights):
        if not any(team):
            raise RatingInputError(f"team {index} has no player with a positive weight")
    return weights


def read_teams(
    rating_groups: Any,
    ranks: Any = None,
    weights: Any = None,
    scores: Any = None,
    coefficients: Any = None,
) -> Teams:
    ratings, keys = read_groups(rating_groups)
    given = None if coefficients is None else read_weights(coefficients, ratings, keys, "coefficient")
    return Teams(
        ratings, read_weights(weights, ratings, keys), keys, read_ranks(ranks, scores, len(ratings)), given
    )
