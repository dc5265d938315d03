"""A group's new matches as flat columns: rated level by level, and written as columns.

The rating step of the match pipeline (app.matches.recording): the new matches, in the listed
order, rated by app/rating/levels.py as replay rates a history: a match's level is one past its
players' previous matches in the group, so matches that share players see each other's
results in list order, and every rating equals rating them one at a time within 1e-12. Modes
share no rating row: each mode's matches are rated on their own, on the same arrays.

Entries go match by match, team by team as the matches list them, and nothing holds a Python
object per entry on the way to the write (`repository.Write`: NumPy columns, in binary).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from app.matches.repository import Claimed, MatchColumns, ParticipantColumns, RatingColumns, Write
from app.matches.responses import RatedEntries
from app.matches.schemas import MatchIn
from app.matches.service import team_ranks
from app.matches.tiering import Walked, tier_column, walk
from app.modes.service import ModeRules
from app.rating import levels
from app.rating.drift import NEVER

Array = npt.NDArray[np.float64]
Index = npt.NDArray[np.int64]

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
MICROSECOND = dt.timedelta(microseconds=1)


@dataclass(slots=True)
class Rated:
    """The new matches rated: per entry and per match as the caller listed them (`result`;
    `refused` maps a match's position to the engine's reason), each player's rating after
    them (`mu`, `sigma`, by player index; `keys` names the indices (mode, player id))."""

    matches: levels.Matches
    keys: list[tuple[str, str]]
    mu: Array
    sigma: Array
    result: levels.Rated
    # Placements and tiers (app.matches.tiering): per entry, and each player's tier after.
    walked: Walked | None = None
    tier: list[int | None] | None = None
    # Per mode, the version of the tier settings it was tiered by (app.modes.service.ModeRules).
    tier_versions: dict[str, int] = field(default_factory=dict)

    @property
    def refused(self) -> dict[int, str]:
        return self.result.refused


def rate(
    rules: Sequence[ModeRules],
    matches: Sequence[MatchIn],
    played_at: Sequence[dt.datetime],
    claimed: Claimed,
) -> Rated:
    """Rate `matches` (each under its `rules`) in order, on the ratings the claim locked:
    drifted over each player's time away (the mode's drift_per_day), then placed and tiered."""
    index: dict[tuple[str, str], int] = {}
    start, player, team, rank, weight, coefficient = [0], [], [], [], [], []
    for mode_rules, match in zip(rules, matches, strict=True):
        mode = mode_rules.name
        for t, (members, r) in enumerate(zip(match.teams, team_ranks(match), strict=True)):
            for p in members.players:
                player.append(index.setdefault((mode, p.id), len(index)))
                team.append(t)
                rank.append(r)
                weight.append(p.weight)
                coefficient.append(np.nan if p.coefficient is None else p.coefficient)
        start.append(len(player))
    keys = list(index)
    locked = [claimed.ratings[key] for key in keys]
    mu = np.array([m for m, _ in locked], dtype=np.float64)
    sigma = np.array([s for _, s in locked], dtype=np.float64)
    flat = levels.Matches(
        np.array(start, dtype=np.int64),
        np.array(player, dtype=np.int64),
        np.array(team, dtype=np.int64),
        np.array(rank, dtype=np.float64),
        np.array(weight, dtype=np.float64),
        np.array(coefficient, dtype=np.float64),
    )
    by_mode: dict[str, list[int]] = {}
    for position, mode_rules in enumerate(rules):
        by_mode.setdefault(mode_rules.name, []).append(position)
    standings = [claimed.standings.get(key) for key in keys]
    drift = None
    if any(r.drift_per_day > 0 for r in rules):
        last = [NEVER if s is None or s.last_us is None else s.last_us for s in standings]
        moments = np.array([(at - EPOCH) // MICROSECOND for at in played_at], dtype=np.int64)
        drift = levels.Drift(0.0, moments, np.array(last, dtype=np.int64))
    if len(by_mode) == 1:
        one = None if drift is None else levels.Drift(rules[0].drift_per_day, drift.played_us, drift.last_us)
        result = levels.rate_levels(rules[0].env, flat, mu, sigma, drift=one)
    else:
        result = _rate_modes(rules, flat, by_mode, mu, sigma, drift)
    rated = Rated(flat, keys, mu, sigma, result, tier_versions={r.name: r.tier_version for r in rules})
    if any(r.tiers is not None or r.placement_matches > 0 for r in rules):
        tier = [None if s is None else s.tier for s in standings]
        rated.walked = walk(
            rated.matches.start.tolist(),
            flat.player.tolist(),
            result.rated.tolist(),
            result.after_mu,
            result.after_sigma,
            [r.conservative_k for r in rules],
            [r.tiers for r in rules],
            [r.placement_matches for r in rules],
            [0 if s is None else s.matches for s in standings],
            tier,
        )
        rated.tier = tier
    return rated


def _rate_modes(
    rules: Sequence[ModeRules],
    flat: levels.Matches,
    by_mode: dict[str, list[int]],
    mu: Array,
    sigma: Array,
    drift: levels.Drift | None,
) -> levels.Rated:
    """`rate` of matches of several modes: each mode's matches as a list of their own."""
    starts = flat.start
    result = levels.Rated.empty(len(flat.player), flat.count)
    for positions in by_mode.values():
        chosen = np.array(positions, dtype=np.int64)
        sizes = np.diff(starts)[chosen]
        # The chosen matches' entries, in order.
        shift = np.repeat(starts[chosen] - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)
        at = shift + np.arange(int(sizes.sum()), dtype=np.int64)
        part = levels.Matches(
            np.concatenate(([0], np.cumsum(sizes))).astype(np.int64),
            flat.player[at], flat.team[at], flat.rank[at], flat.weight[at], flat.coefficient[at],
        )  # fmt: skip
        gamma = rules[positions[0]].drift_per_day
        moved = None
        if drift is not None and gamma > 0:
            moved = levels.Drift(gamma, drift.played_us[chosen], drift.last_us)
        done = levels.rate_levels(rules[positions[0]].env, part, mu, sigma, drift=moved)
        result.before_mu[at], result.before_sigma[at] = done.before_mu, done.before_sigma
        result.after_mu[at], result.after_sigma[at] = done.after_mu, done.after_sigma
        result.wins[at], result.losses[at], result.draws[at] = done.wins, done.losses, done.draws
        result.quality[chosen], result.rated[chosen] = done.quality, done.rated
        result.refused.update({positions[i]: reason for i, reason in done.refused.items()})
    return result


def entries(
    rules: Sequence[ModeRules], matches: Sequence[MatchIn], played_at: Sequence[dt.datetime], rated: Rated
) -> RatedEntries:
    """The rated matches as the response builder (app.matches.responses) reads them."""
    return RatedEntries(
        match_id=[m.match_id for m in matches],
        mode=[m.mode for m in matches],
        played_at=played_at,
        quality=rated.result.quality.tolist(),
        conservative_k=[r.conservative_k for r in rules],
        start=rated.matches.start.tolist(),
        player_id=[p.id for m in matches for team in m.teams for p in team.players],
        team=rated.matches.team.tolist(),
        before_mu=rated.result.before_mu,
        before_sigma=rated.result.before_sigma,
        after_mu=rated.result.after_mu,
        after_sigma=rated.result.after_sigma,
        tiers=[r.tiers for r in rules],
        placements=[r.placement_matches for r in rules],
        walked=rated.walked,
    )


def write(
    matches: Sequence[MatchIn],
    played_at: Sequence[dt.datetime],
    fingerprints: Sequence[str],
    pks: Sequence[int],
    sequence: Sequence[int],
    rated: Rated,
    responses: str,
) -> Write:
    """The rated matches' rows, their participants and each player's last rating and summed
    counters. `responses`: the matches' stored responses, one JSON array in their order."""
    flat, result, keys = rated.matches, rated.result, rated.keys
    sizes = np.diff(flat.start)
    played_us = np.array([(at - EPOCH) // MICROSECOND for at in played_at], dtype=np.int64)
    touched = np.bincount(flat.player, minlength=len(keys))
    latest = np.full(len(keys), np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(latest, flat.player, np.repeat(played_us, sizes))
    players = np.flatnonzero(touched).tolist()
    versions = rated.tier_versions
    participants = [p for m in matches for team in m.teams for p in team.players]
    modes = [m.mode for m in matches]

    def total(counts: Index) -> npt.NDArray[np.int32]:
        return np.bincount(flat.player, counts, len(keys))[players].astype(np.int32)

    return Write(
        RatingColumns(
            mode=[keys[p][0] for p in players],
            player_id=[keys[p][1] for p in players],
            mu=rated.mu[players],
            sigma=rated.sigma[players],
            matches=touched[players].astype(np.int32),
            win=total(result.wins),
            loss=total(result.losses),
            draw=total(result.draws),
            played_us=latest[players],
            tier=(
                np.full(len(players), -1, dtype=np.int32)
                if rated.tier is None
                else tier_column([rated.tier[p] for p in players])
            ),
            tier_version=np.array([versions[keys[p][0]] for p in players], dtype=np.int64),
        ),
        ParticipantColumns(
            match_pk=np.repeat(np.array(pks, dtype=np.int64), sizes),
            player_id=[p.id for p in participants],
            mode=[mode for mode, size in zip(modes, sizes.tolist(), strict=True) for _ in range(size)],
            team=flat.team.astype(np.int32),
            rank=flat.rank,
            weight=flat.weight,
            coefficient=flat.coefficient,
            mu_before=result.before_mu,
            sigma_before=result.before_sigma,
            mu_after=result.after_mu,
            sigma_after=result.after_sigma,
        ),
        MatchColumns(
            pk=np.array(pks, dtype=np.int64),
            match_id=[m.match_id for m in matches],
            mode=modes,
            played_us=played_us,
            body_hash=list(fingerprints),
            quality=result.quality,
            seq=np.array(sequence, dtype=np.int64),
            responses=responses,
        ),
    )
