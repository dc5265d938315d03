"""DELETE /v1/players/{player_id}: the player is gone, their history names one pseudonym, and
everyone else's ratings, ranks, stored results and replays are as they were."""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
from typing import Any

import httpx
import psycopg
import pytest
from redis.asyncio import Redis

from app.client import ApiError, AsyncClient
from app.matches.fingerprint import match_fingerprint
from tests.jobs.test_jobs import run_job
from tests.leaderboards.test_leaderboards import check_all, expected

Headers = dict[str, str]


def duel(mode: str, n: int, winner: str, loser: str) -> dict[str, Any]:
    return {
        "match_id": f"{mode}-e{n}",
        "mode": mode,
        "teams": [{"players": [{"id": winner}], "rank": 1}, {"players": [{"id": loser}], "rank": 2}],
    }


def pairs(mode: str, n: int, first: list[str], second: list[str]) -> dict[str, Any]:
    return {
        "match_id": f"{mode}-e{n}",
        "mode": mode,
        "teams": [
            {"players": [{"id": p, "weight": 0.5 if i else 1.0} for i, p in enumerate(first)], "score": 3},
            {"players": [{"id": p} for p in second], "score": 1},
        ],
    }


async def history(api: AsyncClient, mode: str, target: str, others: list[str]) -> list[dict[str, Any]]:
    """Thirty matches, the target in most of them, a few in teams."""
    rng = random.Random(5)
    posted = []
    for n in range(30):
        if n % 7 == 3:
            a, b, c = rng.sample(others, 3)
            body = pairs(mode, n, [target, a], [b, c]) if n % 2 else pairs(mode, n, [a, b], [c, target])
        elif n % 5 == 4:
            a, b = rng.sample(others, 2)
            body = duel(mode, n, a, b)
        else:
            other = rng.choice(others)
            body = duel(mode, n, target, other) if rng.random() < 0.5 else duel(mode, n, other, target)
        await api.post_match(body)
        posted.append(body)
    return posted


def renamed(value: Any, old: str, new: str) -> Any:
    if isinstance(value, dict):
        return {k: renamed(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [renamed(v, old, new) for v in value]
    return new if value == old else value


async def test_erasure_leaves_one_pseudonym_and_everything_else_as_it_was(
    api: AsyncClient,
    client: httpx.AsyncClient,
    admin_headers: Headers,
    mode: str,
    database_url: str,
    redis_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    target = f"{mode}-gone"
    # f-...: between the pseudonym and the id, so renaming reorders a team by id.
    others = [f"{mode}-o{i}" for i in range(5)] + [f"f-{mode}"]
    await api.set_rating(target, mode, 27.0, 6.0)  # a seed: a replay starts the pseudonym there too
    # The queue: a proposal naming the target (matched), then a ticket of theirs still waiting.
    first = await api.create_ticket(mode, {"players": [target]})
    partner = await api.create_ticket(mode, {"players": [others[0]]})
    formed = await api.matchmake(mode, max_matches=1)
    assert sorted(formed.matches[0].ticket_ids) == sorted([first.ticket_id, partner.ticket_id])
    bodies = await history(api, mode, target, others)
    match_ids = [body["match_id"] for body in bodies]
    await run_job(client, admin_headers, mode, {"kind": "smooth", "iterations": 5})
    replayed = await run_job(client, admin_headers, mode, {"kind": "replay"})
    assert replayed["status"] == "done", replayed

    stored = {m: (await client.get(f"/v1/matches/{m}", headers=admin_headers)).json() for m in match_ids}
    profiles = {p: (await api.get_player(p)).model_dump() for p in others}
    order = await expected(api, mode, [target, *others])
    assert target in order
    waiting = await api.create_ticket(mode, {"players": [target]})
    parties = f"{mode}-2"
    await api.put_mode(parties, team_size=2)
    party = await api.create_ticket(parties, {"players": [others[1], target]})

    caplog.set_level(logging.INFO)
    caplog.clear()
    gone = await client.delete(f"/v1/players/{target}", headers=admin_headers)
    assert (gone.status_code, gone.content) == (204, b"")
    assert (await client.delete(f"/v1/players/{target}", headers=admin_headers)).status_code == 204
    assert (await client.delete(f"/v1/players/{mode}-never-seen", headers=admin_headers)).status_code == 204

    # Logs: one audit line with the pseudonym and the time, and nothing the service logs names
    # the player (httpx is this test's own client).
    service_records = [r for r in caplog.records if not r.name.startswith("httpx")]
    assert [r.getMessage() for r in service_records if r.name == "app.access"] == [
        "DELETE /v1/players/{player_id} 204 " + r.getMessage().rsplit(" ", 1)[1]
        for r in service_records
        if r.name == "app.access"
    ]
    assert not [r for r in service_records if target in r.getMessage() or target in str(r.__dict__)]
    audits = [r.getMessage() for r in caplog.records if r.name == "app.audit"]
    assert len(audits) == 1 and "erased:" in audits[0] and " at 20" in audits[0]
    metrics = (await client.get("/metrics")).text
    assert target not in metrics

    for path in (f"/v1/players/{target}", f"/v1/players/{target}/matches"):
        assert (await client.get(path, headers=admin_headers)).status_code == 404

    # Stored results: the target's entries name one pseudonym; everything else is unchanged.
    after = {m: (await client.get(f"/v1/matches/{m}", headers=admin_headers)).json() for m in match_ids}
    names = {
        p["player_id"] for body in after.values() for p in body["players"] if p["player_id"] not in others
    }
    assert len(names) == 1
    pseudonym = names.pop()
    assert pseudonym.startswith("erased:") and len(pseudonym) == len("erased:") + 32
    assert after == {m: renamed(body, target, pseudonym) for m, body in stored.items()}
    assert {p: (await api.get_player(p)).model_dump() for p in others} == profiles

    with psycopg.connect(database_url) as conn:
        assert conn.execute(
            "SELECT count(*) FROM match_players WHERE player_id = %s", (target,)
        ).fetchone() == (0,)
        for table in ("ratings", "learning_curves", "rating_seeds"):
            assert conn.execute(
                f"SELECT count(*) FROM {table} WHERE player_id = %s", (target,)
            ).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM players WHERE id = %s", (target,)).fetchone() == (0,)
        assert conn.execute(
            "SELECT mu, sigma FROM rating_seeds WHERE player_id = %s", (pseudonym,)
        ).fetchall() == [(27.0, 6.0)]
        assert conn.execute(
            "SELECT count(*) FROM learning_curves WHERE player_id = %s", (pseudonym,)
        ).fetchone() == (0,)
        # Fingerprints are rebuilt under the pseudonym: nothing hashes the erased id any more.
        rows = conn.execute(
            "SELECT m.match_id, m.body_hash, mp.team, mp.player_id, mp.rank, mp.weight, mp.coefficient"
            " FROM matches m JOIN match_players mp ON mp.match_pk = m.id WHERE m.mode = %s",
            (mode,),
        ).fetchall()
    teams: dict[str, tuple[str, dict[int, list[tuple[str, float, float | None]]], dict[int, float]]] = {}
    for match_id, body_hash, team, player, rank, weight, coefficient in rows:
        _, members, ranks = teams.setdefault(match_id, (body_hash, {}, {}))
        members.setdefault(team, []).append((player, weight, coefficient))
        ranks[team] = rank
    for body_hash, members, ranks in teams.values():
        order_of = sorted(members)
        assert body_hash == match_fingerprint(
            mode, [members[t] for t in order_of], [ranks[t] for t in order_of]
        )

    # Leaderboards: exact ranks and counts without the player; no pseudonym on them.
    remaining = [p for p in order if p != target]
    await check_all(client, admin_headers, mode, remaining)

    # The queue: the waiting party ticket is cancelled, the proposal names the pseudonym, the
    # player holds nothing, and requeueing the proposal never queues the erased ticket again.
    assert (await api.get_ticket(mode, waiting.ticket_id)).status == "cancelled"
    assert (await api.get_ticket(parties, party.ticket_id)).status == "cancelled"  # the whole party
    matched = await api.get_ticket(mode, partner.ticket_id)
    assert matched.match is not None
    assert sorted(p for team in matched.match.teams for p in team) == sorted([pseudonym, others[0]])
    with pytest.raises(ApiError) as caught:
        await api.get_player_ticket(mode, target)
    assert caught.value.status == 404
    redis = Redis.from_url(redis_url)
    try:
        async for key in redis.scan_iter(match=f"mm:v4:{{{mode}}}:*"):
            kind = await redis.type(key)
            values = (await redis.hgetall(key)).values() if kind == b"hash" else []
            assert not [v for v in values if f'"{target}"'.encode() in v], key
    finally:
        await redis.aclose()
    requeued = await api.requeue_proposal(mode, formed.matches[0].proposal_id)
    assert {t.ticket_id: t.status for t in requeued.tickets} == {
        first.ticket_id: "expired",
        partner.ticket_id: "queued",
    }

    # A replay rates the pseudonym as a player of its own: everyone else comes out as before.
    again = await run_job(client, admin_headers, mode, {"kind": "replay"})
    assert again["status"] == "done", again
    assert {p: (await api.get_player(p)).model_dump() for p in others} == profiles
    replayed_after = {
        m: (await client.get(f"/v1/matches/{m}", headers=admin_headers)).json() for m in match_ids
    }
    assert replayed_after == after
    await check_all(client, admin_headers, mode, remaining)
    smoothed = await run_job(client, admin_headers, mode, {"kind": "smooth", "iterations": 5})
    assert smoothed["status"] == "done", smoothed
    with psycopg.connect(database_url) as conn:
        assert conn.execute(
            "SELECT count(*) FROM learning_curves WHERE mode = %s AND player_id LIKE 'erased:%%'", (mode,)
        ).fetchone() == (0,)

    # A retry of one of their matches as first sent no longer matches what is stored.
    theirs = next(b for b in bodies if target in str(b))
    retried = await client.post("/v1/matches", json=theirs, headers=admin_headers)
    assert retried.status_code == 409, retried.text

    # The id is free again: a new match makes a new player at the prior.
    fresh = await api.post_match(duel(mode, 99, target, others[2]))
    assert (fresh.players[0].player_id, fresh.players[0].before.mu, fresh.players[0].before.sigma) == (
        target,
        25.0,
        25.0 / 3,
    )
    assert [r.matches for r in (await api.get_player(target)).ratings] == [1]


async def test_pseudonyms_are_not_player_ids_clients_may_write(
    client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    fake = "erased:0123456789abcdef0123456789abcdef"
    posted = await client.post("/v1/matches", json=duel(mode, 1, fake, "someone"), headers=admin_headers)
    queued = await client.post(f"/v1/queues/{mode}/tickets", json={"players": [fake]}, headers=admin_headers)
    seeded = await client.put(
        f"/v1/players/{fake}/ratings/{mode}", json={"mu": 20, "sigma": 5}, headers=admin_headers
    )
    for response in (posted, queued, seeded):
        assert response.status_code == 422, response.text
        assert "reserved for erased players" in response.text


async def test_concurrent_posts_land_wholly_before_or_wholly_after(
    api: AsyncClient, client: httpx.AsyncClient, admin_headers: Headers, mode: str, database_url: str
) -> None:
    target = f"{mode}-racer"
    others = [f"{mode}-r{i}" for i in range(8)]
    for n in range(20):
        await api.post_match(duel(mode, n, target, others[n % 8]))
    numbers = itertools.count(100)
    landed: list[int] = []
    some_landed, erased = asyncio.Event(), asyncio.Event()

    async def poster() -> None:
        # Back to back until one post has been sent after the erasure answered.
        while True:
            last = erased.is_set()
            n = next(numbers)
            body = duel(mode, n, others[n % 8], target)
            landed.append((await client.post("/v1/matches", json=body, headers=admin_headers)).status_code)
            if len(landed) == 4:
                some_landed.set()
            if last:
                return

    async def erase() -> int:
        await some_landed.wait()  # in the middle of the posts
        status = (await client.delete(f"/v1/players/{target}", headers=admin_headers)).status_code
        erased.set()
        return status

    *_, deleted = await asyncio.gather(*(poster() for _ in range(4)), erase())
    assert deleted == 204 and set(landed) == {201}

    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT mp.player_id, mp.mu_before, mp.sigma_before, mp.mu_after, mp.sigma_after"
            " FROM match_players mp JOIN matches m ON m.id = mp.match_pk"
            " WHERE m.mode = %s AND mp.player_id NOT IN (SELECT unnest(%s::varchar[]))"
            " ORDER BY m.applied_seq",
            (mode, others),
        ).fetchall()
        rating = conn.execute(
            "SELECT mu, sigma, matches FROM ratings WHERE player_id = %s AND mode = %s", (target, mode)
        ).fetchone()
        # The leaderboard's counts agree with the ratings (no pseudonym among them).
        counted = conn.execute(
            "SELECT (SELECT sum(delta) FROM leaderboard_deltas WHERE mode = %(m)s),"
            " (SELECT count(*) FROM ratings WHERE mode = %(m)s),"
            " (SELECT count(*) FROM ratings WHERE mode = %(m)s AND player_id LIKE 'erased:%%')",
            {"m": mode},
        ).fetchone()
    assert counted == (len(others) + 1, len(others) + 1, 0)
    before = [r for r in rows if r[0] != target]
    later = [r for r in rows if r[0] == target]
    assert len(before) + len(later) == 20 + len(landed)
    assert len({r[0] for r in before}) == 1 and before[0][0].startswith("erased:")
    # Both lives are unbroken chains: each match starts where the previous one ended, and the
    # second life starts at the prior.
    for life in (before, later):
        for previous, current in itertools.pairwise(life):
            assert current[1:3] == previous[3:5]
    assert before[0][1:3] == (25.0, 25.0 / 3)
    assert later[0][1:3] == (25.0, 25.0 / 3)
    assert rating is not None and rating[2] == len(later) and rating[:2] == later[-1][3:5]
