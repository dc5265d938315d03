"""Replay: re-rate a mode's whole history with its current parameters.

Every non-void match is rated again in played_at order, each player starting from their
seed (an admin override) or the mode's prior. The new ratings, per-match before/after
values and stored responses are staged as new rows, then swapped in by one transaction
that also rates, on top, any match recorded while the replay ran.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

from app.jobs.repository import NewParticipant, NewRating, Played
from app.matches.service import response_json, team_results
from app.rating import Rating, RatingInputError, TrueSkill


@dataclass(slots=True)
class _Player:
    rating: Rating
    matches: int = 0
    wins: int = 0
    losses: int = 0
    draws: int = 0
    last_played_at: dt.datetime | None = None


@dataclass(slots=True)
class Replayed:
    """What the swap writes: final ratings, and per match its participants and response."""

    players: dict[str, _Player]
    participants: list[NewParticipant] = field(default_factory=list)
    responses: list[tuple[int, float, str]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def start(env: TrueSkill, players: list[str], seeds: dict[str, tuple[float, float]]) -> Replayed:
    """Every rated player at their seed or the prior, with no matches."""
    state = {}
    for player in players:
        mu, sigma = seeds.get(player, (env.mu, env.sigma))
        state[player] = _Player(Rating(mu, sigma))
    return Replayed(state)


def rate(
    env: TrueSkill,
    k: float,
    mode: str,
    matches: list[Played],
    into: Replayed,
    seeds: dict[str, tuple[float, float]],
    progress: Callable[[float], None] = lambda _: None,
) -> Replayed:
    """Rate `matches` in order on top of `into`; a match the engine refuses is skipped and named."""
    state = into.players
    weighted = env.team_performance == "weighted"
    every = max(1, len(matches) // 100)
    for index, match in enumerate(matches):
        if index % every == 0:
            progress(index / max(len(matches), 1))
        for team in match.teams:
            for player in team:
                if player not in state:
                    mu, sigma = seeds.get(player, (env.mu, env.sigma))
                    state[player] = _Player(Rating(mu, sigma))
        groups = [[state[p].rating for p in team] for team in match.teams]
        coefficients = (
            [[1.0 if c is None else c for c in team] for team in match.coefficients] if weighted else None
        )
        try:
            quality = env.quality(groups, match.weights)
            rated = env.rate(groups, match.ranks, match.weights, coefficients=coefficients)
        except RatingInputError as exc:
            into.skipped.append(f"{match.match_id}: {exc}")
            continue
        players_out = []
        for number, (team, before, after, (win, loss, draw)) in enumerate(
            zip(match.teams, groups, rated, team_results(match.ranks), strict=True)
        ):
            for player, old, new in zip(team, before, after, strict=True):
                entry = state[player]
                entry.rating = new
                entry.matches += 1
                entry.wins += win
                entry.losses += loss
                entry.draws += draw
                if entry.last_played_at is None or match.played_at > entry.last_played_at:
                    entry.last_played_at = match.played_at
                into.participants.append(
                    NewParticipant(match.pk, player, old.mu, old.sigma, new.mu, new.sigma)
                )
                players_out.append((player, number, old.mu, old.sigma, new.mu, new.sigma))
        played_at = match.played_at.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
        response = response_json(match.match_id, mode, played_at, quality, players_out, k)
        into.responses.append((match.pk, quality, response))
    progress(1.0)
    return into


def new_ratings(replayed: Replayed) -> list[NewRating]:
    return [
        NewRating(name, p.rating.mu, p.rating.sigma, p.matches, p.wins, p.losses, p.draws, p.last_played_at)
        for name, p in replayed.players.items()
    ]
