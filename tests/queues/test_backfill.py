"""Backfills on real Redis: created, read, replaced and deleted over HTTP; filled by matchmaking
before new matches, claimed against their version; under the ready check a decline puts the
slot back; a long-poll answers when the backfill is filled."""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
import time

import httpx
from redis.asyncio import Redis

from app.modes import service as modes
from app.queues import backfills
from app.queues.backfill_store import BackfillStore
from app.queues.store import QueueStore
from tests.queues.helpers import make_mode

OPEN = {"quality_start": 0.0, "quality_floor": 0.0}


async def enqueue(http: httpx.AsyncClient, mode: str, *players: str) -> str:
    response = await http.post(f"/v1/queues/{mode}/tickets", json={"players": list(players)})
    assert response.status_code == 201, response.text
    ticket_id: str = response.json()["ticket_id"]
    return ticket_id


async def backfill(
    http: httpx.AsyncClient, mode: str, teams: list[list[str]], **more: object
) -> dict[str, object]:
    response = await http.post(f"/v1/queues/{mode}/backfills", json={"teams": teams, **more})
    assert response.status_code == 201, response.text
    body: dict[str, object] = response.json()
    return body


async def test_bad_backfills_are_refused_naming_what_is_wrong(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, team_size=2, **OPEN)
    url = f"/v1/queues/{mode}/backfills"
    big = await client.post(url, json={"teams": [["a", "b", "c"], ["d"]]})
    assert big.status_code == 422 and "team 0 has 3 players" in big.json()["detail"]
    assert big.json()["errors"][0]["loc"] == ["body", "teams", 0]
    empty = await client.post(url, json={"teams": [[], []]})
    assert empty.status_code == 422 and "empty" in empty.json()["detail"]
    three = await client.post(url, json={"teams": [["a"], ["b"], ["c"]]})
    assert three.status_code == 422 and "plays 2" in three.json()["detail"]
    twice = await client.post(url, json={"teams": [["a"], ["a"]]})
    assert twice.status_code == 422 and "twice" in twice.json()["detail"]
    for ttl in (0, 86_401):
        refused = await client.post(url, json={"teams": [["a"], ["b"]], "ttl_s": ttl})
        assert refused.status_code == 422 and refused.json()["errors"][0]["loc"] == ["body", "ttl_s"]
    await enqueue(client, mode, "queued-1")
    queued = await client.post(url, json={"teams": [["queued-1"], ["b"]]})
    assert queued.status_code == 409 and "'queued-1' holds an active ticket" in queued.json()["detail"]
    first = await backfill(client, mode, [["on-1"], ["on-2"]])
    taken = await client.post(url, json={"teams": [["on-1"], ["x"]]})
    assert taken.status_code == 409 and str(first["backfill_id"]) in taken.json()["detail"]
    unknown = "0" * 32
    assert (await client.get(f"{url}/{unknown}")).status_code == 404
    assert (await client.put(f"{url}/{unknown}", json={"teams": [["a"], ["b"]]})).status_code == 404
    assert (await client.delete(f"{url}/{unknown}")).status_code == 404


async def test_matchmaking_fills_a_backfill_first_and_the_fill_names_the_whole_roster(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, team_size=2, **OPEN)
    made = await backfill(client, mode, [["bf-a1", "bf-a2"], ["bf-b1"]], attributes={"map": "x"})
    assert (made["version"], made["open_slots"], made["pending"]) == (1, [0, 1], [])
    backfill_id = made["backfill_id"]
    joiner = await enqueue(client, mode, "bf-new")
    # Another attribute set never fills it.
    other = await client.post(
        f"/v1/queues/{mode}/tickets", json={"players": ["bf-other"], "attributes": {"map": "y"}}
    )
    assert other.status_code == 201
    empty = (await client.post(f"/v1/queues/{mode}/matchmake")).json()["matches"]
    assert empty == []
    same = await client.post(
        f"/v1/queues/{mode}/tickets", json={"players": ["bf-same"], "attributes": {"map": "x"}}
    )
    same_id = same.json()["ticket_id"]
    (fill,) = (await client.post(f"/v1/queues/{mode}/matchmake")).json()["matches"]
    assert (fill["kind"], fill["backfill_id"], fill["ticket_ids"]) == ("backfill", backfill_id, [same_id])
    assert fill["teams"] == [["bf-a1", "bf-a2"], ["bf-b1", "bf-same"]]
    assert fill["state"] == "accepted"
    ticket = (await client.get(f"/v1/queues/{mode}/tickets/{same_id}")).json()
    assert (ticket["status"], ticket["match"]) == ("matched", fill)
    read = (await client.get(f"/v1/queues/{mode}/backfills/{backfill_id}")).json()
    assert (read["version"], read["open_slots"]) == (2, [0, 0])
    assert read["teams"] == fill["teams"]
    # Full: the next call fills nothing, and new matches say their kind.
    await enqueue(client, mode, "bf-m1")
    await enqueue(client, mode, "bf-m2")
    await enqueue(client, mode, "bf-m3")
    matches = (await client.post(f"/v1/queues/{mode}/matchmake")).json()["matches"]
    assert [(m["kind"], m["backfill_id"]) for m in matches] == [("match", None)]
    assert joiner in matches[0]["ticket_ids"]
    # A new roster (someone left) opens a slot again; a stale version is a 409.
    stale = await client.put(
        f"/v1/queues/{mode}/backfills/{backfill_id}", json={"teams": [["bf-a1"], ["bf-b1"]], "version": 1}
    )
    assert stale.status_code == 409
    replaced = await client.put(
        f"/v1/queues/{mode}/backfills/{backfill_id}",
        json={"teams": [["bf-a1", "bf-a2"], ["bf-b1"]], "version": 2},
    )
    assert replaced.status_code == 200, replaced.text
    assert (replaced.json()["version"], replaced.json()["open_slots"]) == (3, [0, 1])
    # The game ended: gone, and its players may be on another backfill.
    assert (await client.delete(f"/v1/queues/{mode}/backfills/{backfill_id}")).status_code == 204
    assert (await client.get(f"/v1/queues/{mode}/backfills/{backfill_id}")).status_code == 404
    await backfill(client, mode, [["bf-a1"], ["bf-b1"]])


async def test_max_matches_bounds_fills_and_new_matches_together_fills_first(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, team_size=1, **OPEN)
    older = (await backfill(client, mode, [["cap-a"], []]))["backfill_id"]
    tickets = [await enqueue(client, mode, f"cap-{n}") for n in range(3)]
    url = f"/v1/queues/{mode}/matchmake"
    # One open slot and three tickets: a fill and a new match are there, the bound takes one.
    (fill,) = (await client.post(url, json={"max_matches": 1})).json()["matches"]
    assert (fill["kind"], fill["backfill_id"]) == ("backfill", older)
    left = [ticket for ticket in tickets if ticket not in fill["ticket_ids"]]
    for ticket in left:
        status = (await client.get(f"/v1/queues/{mode}/tickets/{ticket}")).json()["status"]
        assert status == "queued"
    (match,) = (await client.post(url, json={"max_matches": 1})).json()["matches"]
    assert (match["kind"], sorted(match["ticket_ids"])) == ("match", sorted(left))
    # Two open backfills, tickets for both and for a match: a bound of two takes both fills,
    # the older backfill's first, and leaves the match for the next call.
    first = (await backfill(client, mode, [["cap-b"], []]))["backfill_id"]
    second = (await backfill(client, mode, [[], ["cap-c"]]))["backfill_id"]
    for n in range(3, 7):
        await enqueue(client, mode, f"cap-{n}")
    both = (await client.post(url, json={"max_matches": 2})).json()["matches"]
    assert [(p["kind"], p["backfill_id"]) for p in both] == [("backfill", first), ("backfill", second)]
    rest = (await client.post(url, json={"max_matches": 2})).json()["matches"]
    assert [p["kind"] for p in rest] == ["match"]


async def test_a_fill_chosen_from_an_older_version_claims_nothing(
    client: httpx.AsyncClient, admin_headers: dict[str, str], redis_url: str
) -> None:
    """The claim checks the backfill's version: a roster changed between the read and the claim
    (here a PUT; in production another matchmaking call's fill) leaves the tickets queued."""
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, team_size=2, **OPEN)
    made = await backfill(client, mode, [["v-a1", "v-a2"], ["v-b1"]])
    ticket = await enqueue(client, mode, "v-new")
    redis = Redis.from_url(redis_url)
    try:
        rules = modes.cached(mode)
        assert rules is not None
        now = time.time()
        waiting = await QueueStore(redis, mode).waiting(now, rules.ticket_ttl)
        # The roster moves on after the pool was read.
        replaced = await client.put(
            f"/v1/queues/{mode}/backfills/{made['backfill_id']}", json={"teams": [["v-a1", "v-a2"], ["v-b2"]]}
        )
        assert replaced.status_code == 200
        store = BackfillStore(redis, mode)
        (record,) = [r for r in await store.everything() if r.backfill_id == made["backfill_id"]]
        stale = dataclasses.replace(record, version=1)
        served = await backfills.serve_records(redis, mode, rules, waiting, now, "accepted", None, [stale])
        assert served.proposals == []
        assert (await client.get(f"/v1/queues/{mode}/tickets/{ticket}")).json()["status"] == "queued"
        # Read afresh, the same fill is claimed.
        served = await backfills.serve_records(redis, mode, rules, waiting, now, "accepted", None, [record])
        assert [p.ticket_ids for p in served.proposals] == [[ticket]]
    finally:
        await redis.aclose()


async def test_two_concurrent_matchmaking_calls_never_fill_one_slot_twice(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, team_size=3, **OPEN)
    made = await backfill(client, mode, [["c-a1", "c-a2", "c-a3"], ["c-b1", "c-b2"]])
    for number in range(8):
        await enqueue(client, mode, f"c-{number}")
    calls = await asyncio.gather(*(client.post(f"/v1/queues/{mode}/matchmake") for _ in range(4)))
    proposals = [p for call in calls for p in call.json()["matches"]]
    fills = [p for p in proposals if p["kind"] == "backfill"]
    assert len(fills) == 1 and fills[0]["backfill_id"] == made["backfill_id"]
    tickets = [t for p in proposals for t in p["ticket_ids"]]
    assert len(tickets) == len(set(tickets))
    read = (await client.get(f"/v1/queues/{mode}/backfills/{made['backfill_id']}")).json()
    assert (read["version"], read["open_slots"]) == (2, [0, 0])


async def test_under_the_ready_check_a_decline_puts_the_slot_back_and_an_accept_seats_the_player(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, team_size=2, accept_timeout_s=60, **OPEN)
    made = await backfill(client, mode, [["r-a1", "r-a2"], ["r-b1"]])
    url = f"/v1/queues/{mode}/backfills/{made['backfill_id']}"
    no = await enqueue(client, mode, "r-no")
    (fill,) = (await client.post(f"/v1/queues/{mode}/matchmake")).json()["matches"]
    assert (fill["kind"], fill["state"], fill["ticket_ids"]) == ("backfill", "pending", [no])
    read = (await client.get(url)).json()
    assert (read["pending"], read["open_slots"], read["fill_ids"]) == (
        ["r-no"],
        [0, 0],
        [fill["proposal_id"]],
    )
    # The roster's players are in already: only the new player's answer counts.
    detail = (await client.get(f"/v1/queues/{mode}/proposals/{fill['proposal_id']}")).json()
    assert detail["answers"] == {"r-a1": "accepted", "r-a2": "accepted", "r-b1": "accepted", "r-no": None}
    declined = await client.post(
        f"/v1/queues/{mode}/proposals/{fill['proposal_id']}/decline", json={"players": ["r-no"]}
    )
    assert declined.json()["state"] == "failed"
    read = (await client.get(url)).json()
    assert (read["teams"], read["pending"], read["open_slots"]) == ([["r-a1", "r-a2"], ["r-b1"]], [], [0, 1])
    assert (await client.get(f"/v1/queues/{mode}/tickets/{no}")).json()["status"] == "cancelled"
    # The slot is open again: the next player fills it and accepts.
    await enqueue(client, mode, "r-yes")
    (again,) = (await client.post(f"/v1/queues/{mode}/matchmake")).json()["matches"]
    accepted = await client.post(
        f"/v1/queues/{mode}/proposals/{again['proposal_id']}/accept", json={"players": ["r-yes"]}
    )
    assert accepted.json()["state"] == "accepted"
    read = (await client.get(url)).json()
    assert (read["teams"], read["pending"], read["open_slots"]) == (
        [["r-a1", "r-a2"], ["r-b1", "r-yes"]],
        [],
        [0, 0],
    )


async def test_a_long_poll_answers_when_the_backfill_is_filled(
    client: httpx.AsyncClient, admin_headers: dict[str, str]
) -> None:
    client.headers.update(admin_headers)
    mode = await make_mode(client, admin_headers, team_size=2, **OPEN)
    made = await backfill(client, mode, [["lp-a1", "lp-a2"], ["lp-b1"]])
    url = f"/v1/queues/{mode}/backfills/{made['backfill_id']}"
    unchanged = (await client.get(url, params={"wait": 0.2})).json()
    assert unchanged["version"] == 1
    poll = asyncio.create_task(client.get(url, params={"wait": 30}))
    await asyncio.sleep(0.3)
    assert not poll.done()
    await enqueue(client, mode, "lp-new")
    await client.post(f"/v1/queues/{mode}/matchmake")
    answered = (await asyncio.wait_for(poll, 20)).json()
    assert (answered["version"], answered["teams"]) == (2, [["lp-a1", "lp-a2"], ["lp-b1", "lp-new"]])


async def test_an_erased_player_leaves_every_backfill_roster_and_pending_fill(
    client: httpx.AsyncClient, admin_headers: dict[str, str], redis_url: str
) -> None:
    """DELETE /v1/players/{id}: in every mode, a roster naming the player and a pending fill
    seating them name the erasure's pseudonym instead (their slots stay taken, as in the fill's
    proposal), each backfill's version moves on, so a fill chosen before claims nothing, and
    the player has no rostered entry left."""
    client.headers.update(admin_headers)
    target = f"gone-{secrets.token_hex(4)}"
    playing = await make_mode(client, admin_headers, team_size=2, **OPEN)
    checking = await make_mode(client, admin_headers, team_size=2, accept_timeout_s=60, **OPEN)
    rated = await client.put(f"/v1/players/{target}/ratings/{playing}", json={"mu": 31.0, "sigma": 4.0})
    assert rated.status_code == 200, rated.text
    on_roster = await backfill(client, playing, [[target, "e-a2"], ["e-b1"]])
    filling = await backfill(client, checking, [["e-c1", "e-c2"], ["e-d1"]])
    theirs = await enqueue(client, checking, target)
    (fill,) = (await client.post(f"/v1/queues/{checking}/matchmake")).json()["matches"]
    assert (fill["state"], fill["ticket_ids"]) == ("pending", [theirs])
    roster_url = f"/v1/queues/{playing}/backfills/{on_roster['backfill_id']}"
    fill_url = f"/v1/queues/{checking}/backfills/{filling['backfill_id']}"
    assert (await client.get(fill_url)).json()["pending"] == [target]
    joiner = await enqueue(client, playing, "e-joiner")
    redis = Redis.from_url(redis_url)
    try:
        assert await redis.hget(QueueStore(redis, playing).keys.rostered, target) is not None
        assert await redis.hget(QueueStore(redis, checking).keys.rostered, target) is not None
        # A matchmaking call reads the roster and the pool before the erasure...
        rules = modes.cached(playing)
        assert rules is not None
        now = time.time()
        waiting = await QueueStore(redis, playing).waiting(now, rules.ticket_ttl)
        before = await BackfillStore(redis, playing).everything()

        gone = await client.delete(f"/v1/players/{target}")
        assert gone.status_code == 204, gone.text

        # ...and claims nothing after it: its fill would have written the roster back.
        served = await backfills.serve_records(redis, playing, rules, waiting, now, "accepted", None, before)
        assert served.proposals == []
        assert (await client.get(f"/v1/queues/{playing}/tickets/{joiner}")).json()["status"] == "queued"

        read = (await client.get(roster_url)).json()
        ((pseudonym, kept), others) = read["teams"]
        assert pseudonym.startswith("erased:") and (kept, others) == ("e-a2", ["e-b1"])
        assert (read["version"], read["open_slots"]) == (on_roster["version"] + 1, [0, 1])
        pending = (await client.get(fill_url)).json()
        assert pending["teams"] == [["e-c1", "e-c2"], ["e-d1", pseudonym]]
        assert (pending["pending"], pending["fill_ids"]) == ([pseudonym], [fill["proposal_id"]])
        assert pending["version"] == 3  # created, filled, erased
        # The fill's proposal names the same pseudonym (app.erasure renames proposals so).
        proposal = (await client.get(f"/v1/queues/{checking}/proposals/{fill['proposal_id']}")).json()
        assert proposal["teams"] == pending["teams"] and proposal["answers"][pseudonym] is None

        for mode in (playing, checking):
            keys = QueueStore(redis, mode).keys
            assert await redis.hget(keys.rostered, target) is None
            assert await redis.hget(keys.rostered, pseudonym) is None
            async for key in redis.scan_iter(match=f"{keys.prefix}*"):
                if await redis.type(key) == b"hash":
                    stored = await redis.hgetall(key)
                    assert target.encode() not in b"".join([*stored, *stored.values()]), key

        # The open slot still fills, from the roster as it now stands.
        (filled,) = (await client.post(f"/v1/queues/{playing}/matchmake")).json()["matches"]
        assert filled["ticket_ids"] == [joiner]
        assert filled["teams"] == [[pseudonym, "e-a2"], ["e-b1", "e-joiner"]]
        assert (await client.get(roster_url)).json()["version"] == read["version"] + 1

        # A new roster may keep the pseudonym in its slot (with the rating it had there), and no
        # other pseudonym.
        store = BackfillStore(redis, playing)
        had = await store.get(str(on_roster["backfill_id"]), time.time())
        assert had is not None
        other = "erased:" + "0" * 32
        refused = await client.put(roster_url, json={"teams": [[pseudonym, "e-a2"], [other]]})
        assert refused.status_code == 422 and refused.json()["errors"][0]["loc"] == ["body", "teams", 1]
        assert "reserved for erased players" in refused.json()["detail"]
        kept = await client.put(roster_url, json={"teams": [[pseudonym, "e-a2"], ["e-b1"]]})
        assert kept.status_code == 200, kept.text
        assert kept.json()["teams"] == [[pseudonym, "e-a2"], ["e-b1"]]
        now_read = await store.get(str(on_roster["backfill_id"]), time.time())
        assert had.ratings[0][0] == [31.0, 4.0]  # the erased player's rows are gone: the record has it
        assert now_read is not None and now_read.ratings[0][0] == [31.0, 4.0]
    finally:
        await redis.aclose()
