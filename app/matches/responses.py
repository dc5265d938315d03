"""The response of a newly rated match: what POST answers, the matches row stores and a retry's
200 repeats (with `created` false). Every writer of a rated match builds it here: the match
pipeline (app.matches.recording) and replay (app.jobs.replay).

A response is plain data in MatchOut's field order, serialised by match_json's serialiser
(`schemas.wire_json`), so its bytes are those of the model without building one per rating.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from app.matches.tiering import Walked
from app.rating import conservative
from app.rating.tiers import Tiers

Array = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class RatedEntries:
    """Rated matches as flat columns: match i's participants are the entries
    start[i]:start[i+1], team by team as the match lists them."""

    match_id: Sequence[str]
    mode: Sequence[str]
    played_at: Sequence[dt.datetime]
    quality: Sequence[float]
    conservative_k: Sequence[float]  # each match's mode's k
    start: Sequence[int]
    player_id: Sequence[str]
    team: Sequence[int]
    before_mu: Array
    before_sigma: Array
    after_mu: Array
    after_sigma: Array
    # Placements and tiers (app.matches.tiering): each match's mode's tiers and placement
    # matches, and per entry what the walk found; None: every match's mode has neither.
    tiers: Sequence[Tiers | None] | None = None
    placements: Sequence[int] | None = None
    walked: Walked | None = None


def _placement(played: int, of: int) -> dict[str, Any] | None:
    return {"played": min(played, of), "of": of} if of > 0 else None


def _tier(tiers: Tiers | None, before: int | None, after: int | None) -> dict[str, Any] | None:
    if tiers is None:
        return None
    names = tiers.names
    return {
        "before": None if before is None else names[before],
        "after": None if after is None else names[after],
        "promoted": before is not None and after is not None and after > before,
        "demoted": before is not None and after is not None and after < before,
    }


def response_data(rated: RatedEntries) -> list[dict[str, Any]]:
    """Each match's response as plain data (MatchOut's fields, in order)."""
    b_mu, b_sigma = rated.before_mu.tolist(), rated.before_sigma.tolist()
    a_mu, a_sigma = rated.after_mu.tolist(), rated.after_sigma.tolist()
    players, teams, bounds = rated.player_id, rated.team, rated.start
    walked = rated.walked
    out = []
    for i, (match_id, mode, played_at, quality, k) in enumerate(
        zip(rated.match_id, rated.mode, rated.played_at, rated.quality, rated.conservative_k, strict=True)
    ):
        of = rated.placements[i] if rated.placements is not None else 0
        tiers = rated.tiers[i] if rated.tiers is not None else None
        out.append(
            {
                "match_id": match_id,
                "mode": mode,
                "played_at": played_at,
                "created": True,
                "quality": quality,
                "void": False,
                "players": [
                    {
                        "player_id": players[e],
                        "team": teams[e],
                        "before": {
                            "mu": b_mu[e],
                            "sigma": b_sigma[e],
                            "conservative": conservative(b_mu[e], b_sigma[e], k),
                        },
                        "after": {
                            "mu": a_mu[e],
                            "sigma": a_sigma[e],
                            "conservative": conservative(a_mu[e], a_sigma[e], k),
                        },
                        "provisional": walked is not None and walked.played[e] < of,
                        "placement": None if walked is None else _placement(walked.played[e], of),
                        "tier": None if walked is None else _tier(tiers, walked.before[e], walked.after[e]),
                    }
                    for e in range(bounds[i], bounds[i + 1])
                ],
            }
        )
    return out
