"""Rating one recorded match: the single post, the batch, replay and import all call this.

A mode's rules are a `TrueSkill` environment (its constants, tie model and team function).
Given the teams with their players' current ratings, the match's ranks (lower is better,
equal ranks tie), partial-play weights and, for team_performance "weighted", coefficients,
`rate_match` returns every player's rating before and after and the match quality (seed 000
eq. 7, computed on the ratings before the match), plus each player's win/loss/draw tally.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.rating.environment import TrueSkill
from app.rating.rating import Rating
from app.rating.teams import read_teams


@dataclass(frozen=True, slots=True)
class PlayerResult:
    """One player's part in a rated match."""

    player_id: str
    team: int
    rank: float
    before: Rating
    after: Rating
    win: int
    loss: int
    draw: int


@dataclass(frozen=True, slots=True)
class RatedMatch:
    """The quality before the match and each player's result, team by team in the given order."""

    quality: float
    players: tuple[PlayerResult, ...]


@dataclass(frozen=True, slots=True)
class MatchTeams:
    """A match as the engine sees it: per team, the players' ids, current ratings, weights
    and coefficients (None where the mode does not use them), and the teams' ranks."""

    ids: Sequence[Sequence[str]]
    ratings: Sequence[Sequence[Rating]]
    ranks: Sequence[float]
    weights: Sequence[Sequence[float]]
    coefficients: Sequence[Sequence[float]] | None = None


def team_results(ranks: Sequence[float]) -> list[tuple[int, int, int]]:
    """(win, loss, draw) per team: a draw when tied with another team, a win when alone in
    first place (the lowest rank), a loss otherwise."""
    best = min(ranks)
    out = []
    for rank in ranks:
        if list(ranks).count(rank) > 1:
            out.append((0, 0, 1))
        elif rank == best:
            out.append((1, 0, 0))
        else:
            out.append((0, 1, 0))
    return out


def rate_match(env: TrueSkill, match: MatchTeams) -> RatedMatch:
    """Rate one match under `env`; raises RatingInputError when the engine refuses it (for
    instance a tie in a mode whose draw probability is 0)."""
    # Read (and checked) once for both the quality and the update: `env.quality` and
    # `env.rate` would each read the teams again.
    teams = read_teams(match.ratings, match.ranks, match.weights, None, match.coefficients)
    quality = env.quality_of(teams)
    rated = env.rate_teams(teams)
    ranks = list(match.ranks)
    players = []
    for index, (ids, before, after, (win, loss, draw)) in enumerate(
        zip(match.ids, teams.ratings, rated, team_results(ranks), strict=True)
    ):
        rank = ranks[index]
        for player, old, new in zip(ids, before, after, strict=True):
            players.append(PlayerResult(player, index, rank, old, new, win, loss, draw))
    return RatedMatch(quality, tuple(players))
