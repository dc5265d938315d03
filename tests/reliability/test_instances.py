"""Two API processes behind one PostgreSQL and one Redis, under load.

No update is lost: every player's stored matches chain (each match starts from the rating
the previous one left), and the counters agree with the rows. No ticket is ever in two
proposals, though both instances matchmake the same queue at once.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections import Counter, defaultdict

import httpx
import psycopg
import pytest
from fastapi import FastAPI

from tests.reliability.process import ADMIN, Service, scaled

pytestmark = pytest.mark.reliability

PLAYERS = 24
CLIENTS = 16
SECONDS = scaled(3.0)
TICKETS = 240


async def post_matches(bases: list[str], mode: str, client: int, acked: list[str], until: float) -> None:
    rng = random.Random(client)
    async with httpx.AsyncClient(headers=ADMIN, timeout=30) as http:
        for n in itertools.count():
            if time.monotonic() > until:
                return
            a, b = rng.sample(range(PLAYERS), 2)
            match_id = f"{mode}-{client}-{n}"
            response = await http.post(
                f"{bases[n % 2]}/v1/matches",
                json={
                    "match_id": match_id,
                    "mode": mode,
                    "teams": [
                        {"players": [{"id": f"s{a}"}], "rank": 0},
                        {"players": [{"id": f"s{b}"}], "rank": 1},
                    ],
                },
            )
            assert response.status_code == 201, response.text
            acked.append(match_id)


async def matchmake(base: str, mode: str, proposals: list[dict[str, object]], until: float) -> None:
    async with httpx.AsyncClient(headers=ADMIN, timeout=30) as http:
        # At least one call: on a loaded machine the clients' start can use up the whole window
        # (a run once made no proposal at all).
        while True:
            response = await http.post(f"{base}/v1/queues/{mode}/matchmake", json={"max_matches": 20})
            assert response.status_code == 200, response.text
            proposals.extend(response.json()["matches"])
            if time.monotonic() > until:
                return
            await asyncio.sleep(0.01)


async def test_two_instances_lose_no_update_and_never_double_book(
    app: FastAPI, database_url: str, service_url: str, redis_url: str
) -> None:
    mode = f"two-{int(time.time() * 1000) % 10**9}"
    first, second = Service(service_url, redis_url).start(), Service(service_url, redis_url).start()
    bases = [first.base, second.base]
    try:
        assert httpx.put(f"{first.base}/v1/modes/{mode}", json={}, headers=ADMIN).status_code in (200, 201)
        async with httpx.AsyncClient(headers=ADMIN, timeout=30) as http:
            for n in range(TICKETS):
                created = await http.post(
                    f"{bases[n % 2]}/v1/queues/{mode}/tickets", json={"players": [f"t{n}"]}
                )
                assert created.status_code == 201, created.text
        acked: list[str] = []
        proposals: list[dict[str, object]] = []
        until = time.monotonic() + SECONDS
        await asyncio.gather(
            *(post_matches(bases, mode, c, acked, until) for c in range(CLIENTS)),
            *(matchmake(bases[i % 2], mode, proposals, until) for i in range(8)),
        )

        # No ticket in two proposals, and each proposal is what its tickets say they joined.
        seen = Counter(t for p in proposals for t in p["ticket_ids"])  # type: ignore[attr-defined]
        assert seen and max(seen.values()) == 1
        async with httpx.AsyncClient(headers=ADMIN, timeout=30) as http:
            for proposal in proposals[:40]:
                for ticket in proposal["ticket_ids"]:  # type: ignore[attr-defined]
                    state = (await http.get(f"{first.base}/v1/queues/{mode}/tickets/{ticket}")).json()
                    assert state["status"] == "matched"
                    assert state["match"]["proposal_id"] == proposal["proposal_id"]

        with psycopg.connect(database_url) as conn:
            stored = conn.execute("SELECT count(*) FROM matches WHERE mode = %s", (mode,)).fetchone()
            assert stored is not None and stored[0] == len(acked)
            rows = conn.execute(
                "SELECT player_id, mu_before, sigma_before, mu_after, sigma_after"
                " FROM match_players WHERE mode = %s",
                (mode,),
            ).fetchall()
            ratings = {
                p: (mu, sigma, matches)
                for p, mu, sigma, matches in conn.execute(
                    "SELECT player_id, mu, sigma, matches FROM ratings WHERE mode = %s", (mode,)
                ).fetchall()
            }
            prior = conn.execute("SELECT mu, sigma FROM modes WHERE name = %s", (mode,)).fetchone()
        assert prior is not None
        by_player: dict[str, list[tuple[float, float, float, float]]] = defaultdict(list)
        for player, *values in rows:
            by_player[player].append(tuple(values))  # type: ignore[arg-type]
        for player, chain in by_player.items():
            mu, sigma, matches = ratings[player]
            assert matches == len(chain), player
            # Every match began where another ended (or at the prior), and only the last
            # one's result is the current rating: a lost update would start two from one.
            befores = Counter((b_mu, b_sigma) for b_mu, b_sigma, _, _ in chain)
            afters = Counter((a_mu, a_sigma) for _, _, a_mu, a_sigma in chain)
            afters[(prior[0], prior[1])] += 1
            afters[(mu, sigma)] -= 1
            assert befores == +afters, player
        print(
            f"\ntwo instances: {len(acked)} matches over {PLAYERS} shared players from {CLIENTS} clients, "
            f"no lost update; {len(proposals)} proposals from 8 concurrent matchmakers, "
            f"{sum(seen.values())} tickets, none twice"
        )
    finally:
        first.stop()
        second.stop()
