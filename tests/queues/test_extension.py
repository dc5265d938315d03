"""Tickets' extensions on real Redis: kept beside the record, read back with the pool, hidden
from a release that does not read them, and kept through a requeue; erasure edits them."""

from __future__ import annotations

import json
import random
import time

from redis.asyncio import Redis

from app.matchmaking.pool import attribute_group
from app.matchmaking.proposals import MatchShape, Relaxation, form_matches
from app.queues import extension, record
from app.queues.record import HeaderField
from app.queues.store import NewTicket, ProposalClaim, QueueStore, new_ids


def render(
    proposal_id: str, claim: object, ticket_ids: list[str], teams: list[list[str]], roles: object
) -> bytes:
    """A proposal's JSON as the service writes it (ProposalOut's order, no spaces)."""
    body = {"proposal_id": proposal_id, "teams": teams, "ticket_ids": ticket_ids, "roles": roles}
    return json.dumps(body, separators=(",", ":")).encode()


def test_the_codec_round_trips_and_is_canonical() -> None:
    group = attribute_group('{"region":"eu"}')
    text = extension.encode([["tank", "damage"], ["healer"]], ["mallory", "eve"], group)
    assert text == f'{{"avoid":["mallory","eve"],"group":"{group}","roles":[["tank","damage"],["healer"]]}}'
    found = extension.decode(text)
    assert found.roles == (("tank", "damage"), ("healer",)) and found.avoid == ("mallory", "eve")
    assert found.group == group
    assert extension.encode(None, [], group) == ""
    assert extension.decode("") == extension.Extension() == extension.decode(None)
    # Keys a later release adds are ignored, unless it says the ticket needs them.
    assert extension.decode('{"avoid":["x"],"backfill":{"slots":2}}').avoid == ("x",)
    assert extension.decode('{"avoid":["x"]}').readable
    assert not extension.decode(f'{{"level":{extension.LEVEL + 1}}}').readable
    ticket = "6b09422a" + "ffffffffffff" + "0" * 12
    assert extension.extended_group(ticket) == -1.0 - (2**48 - 1)
    assert extension.extended_group(ticket) < 0 <= attribute_group('{"region":"eu"}')


async def test_extended_tickets_read_back_with_their_true_group_roles_and_clashes(redis_url: str) -> None:
    redis = Redis.from_url(redis_url)
    try:
        store = QueueStore(redis, f"ext-{random.getrandbits(32):08x}")
        now = time.time()
        ids = new_ids(4, now)
        attributes = '{"region":"eu"}'
        tickets = [
            NewTicket(ids[0], ["a"], [(25.0, 8.0)], attributes),
            NewTicket(
                ids[1],
                ["b", "c"],
                [(20.0, 3.0), (30.0, 4.0)],
                attributes,
                roles=[["tank"], ["healer", "damage"]],
            ),
            NewTicket(ids[2], ["d"], [(25.0, 8.0)], attributes, avoid=["a"]),
            NewTicket(ids[3], ["e"], [(25.0, 8.0)], "{}", avoid=["nobody-queued"]),
        ]
        assert await store.enqueue(tickets, now, 60.0) == [0, 0, 0, 0]
        # The record says nothing of the extension but its group: negative, one of its own.
        for ticket in tickets[1:]:
            value = await redis.hget(store.keys.pool, ticket.ticket_id)
            assert record.field_of(value, HeaderField.GROUP) == extension.extended_group(ticket.ticket_id)
            stored = await redis.hget(store.keys.done(ticket.ticket_id), extension.field(ticket.ticket_id))
            assert stored.decode() == extension.encode(
                ticket.roles, ticket.avoid, attribute_group(ticket.attributes)
            )
        assert await redis.hget(store.keys.done(ids[0]), extension.field(ids[0])) is None
        assert await redis.ttl(store.keys.done(ids[1])) > 60
        pool = (await store.waiting(now + 1.0, 60.0)).pool
        row = {ticket_id: i for i, ticket_id in enumerate(pool.ids)}
        # This release reads the true group, so extended and plain tickets of equal attributes meet.
        assert pool.group[row[ids[0]]] == pool.group[row[ids[1]]] == pool.group[row[ids[2]]]
        assert pool.group[row[ids[3]]] == attribute_group("{}")
        assert pool.roles is not None
        assert pool.roles[row[ids[1]]] == (("tank",), ("healer", "damage"))
        assert pool.roles[row[ids[0]]] is None
        assert pool.clashes is not None
        assert sorted(pool.clashes.tolist()) == [sorted([row[ids[0]], row[ids[2]]])]
    finally:
        await redis.aclose()


async def test_a_requeued_ticket_keeps_its_extension_and_erasure_edits_it(redis_url: str) -> None:
    redis = Redis.from_url(redis_url)
    try:
        store = QueueStore(redis, f"ext-{random.getrandbits(32):08x}")
        now = time.time()
        ids = new_ids(3, now)
        tickets = [
            NewTicket(ids[0], ["alice"], [(25.0, 8.0)], "{}", roles=[["damage"]], avoid=["mallory", "eve"]),
            NewTicket(ids[1], ["bob"], [(25.0, 8.0)], "{}", roles=[["tank"]]),
            NewTicket(ids[2], ["carol"], [(25.0, 8.0)], "{}", avoid=["mallory"]),
        ]
        assert await store.enqueue(tickets, now, 60.0) == [0, 0, 0]
        waiting = await store.waiting(now, 60.0)
        row = {ticket_id: i for i, ticket_id in enumerate(waiting.pool.ids)}
        claim = ProposalClaim([[row[ids[0]]], [row[ids[1]]]], 0.5, 0.0, None, [("damage",), ("tank",)])
        ((_, proposal),) = await store.claim(waiting, [claim], now, 60.0, render)
        body = json.loads(await store.proposal(proposal) or "")
        assert body["roles"] == {"alice": "damage", "bob": "tank"}
        assert await store.requeue(proposal, ids[:2], [], now + 1.0, 60.0) == ["queued", "queued"]
        pool = (await store.waiting(now + 2.0, 60.0)).pool
        back = {ticket_id: i for i, ticket_id in enumerate(pool.ids)}
        assert pool.roles is not None and pool.roles[back[ids[1]]] == (("tank",),)
        # Erasing mallory takes her out of every avoid list: carol's list empties.
        await store.erase_player("mallory", "erased:" + "0" * 32, now + 3.0, 60.0)
        done = store.keys.done(ids[0])
        assert extension.decode(await redis.hget(done, extension.field(ids[0]))).avoid == ("eve",)
        emptied = extension.decode(await redis.hget(done, extension.field(ids[2])))
        assert (emptied.roles, emptied.avoid, emptied.group) == (None, (), attribute_group("{}"))
        assert b"mallory" not in b"".join((await redis.hgetall(done)).values())
        # Erasing alice renames her in the kept proposal's teams and roles, not in role names.
        await store.erase_player("alice", "erased:" + "1" * 32, now + 3.0, 60.0)
        renamed = json.loads(await store.proposal(proposal) or "")
        assert renamed["roles"] == {"erased:" + "1" * 32: "damage", "bob": "tank"}
        assert renamed["teams"] == [["erased:" + "1" * 32], ["bob"]]
    finally:
        await redis.aclose()


async def test_a_ticket_that_needs_a_later_reader_is_never_matched(redis_url: str) -> None:
    redis = Redis.from_url(redis_url)
    try:
        store = QueueStore(redis, f"ext-{random.getrandbits(32):08x}")
        now = time.time()
        ids = new_ids(3, now)
        tickets = [NewTicket(i, [f"lv{n}"], [(25.0, 8.0)], "{}", avoid=["nobody"]) for n, i in enumerate(ids)]
        assert await store.enqueue(tickets, now, 60.0) == [0, 0, 0]
        # A later release wrote this one, with a constraint this release does not know.
        later = json.dumps({"avoid": ["nobody"], "level": extension.LEVEL + 1}, separators=(",", ":"))
        await redis.hset(store.keys.done(ids[0]), extension.field(ids[0]), later)
        pool = (await store.waiting(now, 60.0)).pool
        row = {ticket_id: i for i, ticket_id in enumerate(pool.ids)}
        assert pool.group[row[ids[0]]] == extension.extended_group(ids[0])
        assert pool.group[row[ids[1]]] == pool.group[row[ids[2]]] == attribute_group("{}")
        (match,) = form_matches(pool, MatchShape(2, 1), 4.0, Relaxation(0.0, 0.0, 1.0), 10)
        assert row[ids[0]] not in match.rows
    finally:
        await redis.aclose()
