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

from app.ids import is_pseudonym
from app.jobs.repository import NewParticipant, NewRating, Played
from app.matches.service import response_json
from app.rating import Rating, RatingInputError, TrueSkill
from app.rating.match import MatchTeams, rate_match


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
        coefficients = (
            [[1.0 if c is None else c for c in team] for team in match.coefficients] if weighted else None
        )
        teams = MatchTeams(
            ids=match.teams,
            ratings=[[state[p].rating for p in team] for team in match.teams],
            ranks=match.ranks,
            weights=match.weights,
            coefficients=coefficients,
        )
        try:
            rated = rate_match(env, teams)
        except RatingInputError as exc:
            into.skipped.append(f"{match.match_id}: {exc}")
            continue
        players_out = []
        for r in rated.players:
            entry = state[r.player_id]
            entry.rating = r.after
            entry.matches += 1
            entry.wins += r.win
            entry.losses += r.loss
            entry.draws += r.draw
            if entry.last_played_at is None or match.played_at > entry.last_played_at:
                entry.last_played_at = match.played_at
            into.participants.append(
                NewParticipant(match.pk, r.player_id, r.before.mu, r.before.sigma, r.after.mu, r.after.sigma)
            )
            players_out.append((r.player_id, r.team, r.before.mu, r.before.sigma, r.after.mu, r.after.sigma))
        played_at = match.played_at.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
        response = response_json(match.match_id, mode, played_at, rated.quality, players_out, k)
        into.responses.append((match.pk, rated.quality, response))
    progress(1.0)
    return into


def new_ratings(replayed: Replayed) -> list[NewRating]:
    """The ratings to write: an erased player's pseudonym is rated as a player of its own, so
    the others come out as before the erasure, but gets no rating (and no leaderboard place)."""
    return [
        NewRating(name, p.rating.mu, p.rating.sigma, p.matches, p.wins, p.losses, p.draws, p.last_played_at)
        for name, p in replayed.players.items()
        if not is_pseudonym(name)
    ]
