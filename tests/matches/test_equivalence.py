"""The ratings the API stores are the core's, and trueskill 0.4.5's, on the same sequence."""

from __future__ import annotations

import random

import pytest
import trueskill

from app.client import AsyncClient
from app.rating import Rating, TrueSkill


def scripted_session(mode: str) -> list[dict[str, object]]:
    rng = random.Random(11)
    players = [f"eq{i}" for i in range(10)]
    matches = []
    for n in range(60):
        kind = n % 3
        chosen = rng.sample(players, {0: 2, 1: 4, 2: 5}[kind])
        teams = [[p] for p in chosen] if kind != 1 else [chosen[:2], chosen[2:]]
        ranks = rng.sample(range(len(teams)), len(teams))
        if kind == 2 and n % 2:
            ranks[1] = ranks[0]  # a tie inside the free-for-all
        matches.append(
            {
                "match_id": f"{mode}-eq{n}",
                "mode": mode,
                "teams": [
                    {"players": [{"id": p} for p in t], "rank": r} for t, r in zip(teams, ranks, strict=True)
                ],
            }
        )
    return matches


async def test_stored_ratings_equal_the_core_and_trueskill(api: AsyncClient, mode: str) -> None:
    session = scripted_session(mode)
    for body in session:
        await api.post_match(body)
    ours, env = {}, TrueSkill()
    peer_env = trueskill.TrueSkill(backend="scipy")
    theirs: dict[str, trueskill.Rating] = {}
    for body in session:
        teams = [[p["id"] for p in t["players"]] for t in body["teams"]]  # type: ignore[index]
        ranks = [t["rank"] for t in body["teams"]]  # type: ignore[index]
        new = env.rate([[ours.get(p, Rating()) for p in t] for t in teams], ranks)
        peer = peer_env.rate(
            [[theirs.get(p, peer_env.create_rating()) for p in t] for t in teams], ranks, min_delta=1e-12
        )
        for t, after, peer_after in zip(teams, new, peer, strict=True):
            for p, r, q in zip(t, after, peer_after, strict=True):
                ours[p], theirs[p] = r, q
    for player, rating in ours.items():
        stored = next(r for r in (await api.get_player(player)).ratings if r.mode == mode).rating
        assert (stored.mu, stored.sigma) == (rating.mu, rating.sigma)  # bit for bit
        assert stored.mu == pytest.approx(theirs[player].mu, abs=1e-6)
        assert stored.sigma == pytest.approx(theirs[player].sigma, abs=1e-6)
