"""Two service processes on a real Redis Cluster (3 masters, 3 replicas): six modes whose queues
spread over the three masters, eight concurrent matchmakers. No ticket is in two proposals,
none is lost, every ticket's status names its proposal; and when a master is killed, its modes,
and only they, answer 503 with Retry-After (never 500) until its replica takes over, then recover with no
restart (its backfills too). While a master is down, its modes' backfill routes answer 503 and
the other modes' answer. The failover window and the matchmaking rate are printed (figures,
not assertions).
"""

from __future__ import annotations

import asyncio
import itertools
import secrets
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from app.queues.store import Keys
from tests.redis_cluster import Cluster
from tests.reliability.process import ADMIN, Service, scaled

pytestmark = pytest.mark.reliability

MATCHMAKERS = 8
SECONDS = scaled(3.0)
PATIENCE = 120.0


@dataclass
class Load:
    """What the clients were told: tickets queued (201), proposals handed out (200), and every
    answer's status per mode."""

    tickets: dict[str, str] = field(default_factory=dict)  # ticket -> mode
    players: dict[str, str] = field(default_factory=dict)  # ticket -> its one player
    # Players of batches answered 503: whether their tickets were queued is not known (the
    # script may have run before the connection dropped; the client retries or asks
    # GET .../players/{id}/ticket). Such a ticket may show up in a proposal, never twice.
    unsure: set[str] = field(default_factory=set)
    proposals: list[dict[str, object]] = field(default_factory=list)
    answers: list[tuple[float, str, int, str | None]] = field(
        default_factory=list
    )  # t, mode, status, Retry-After
    # Players' names start with it: a second round of load on the same modes names new
    # players, since the first round's last tickets may still be queued (409 otherwise).
    prefix: str = "w"


@pytest.fixture(scope="module")
def services(cluster: Cluster, service_url: str) -> Iterator[list[Service]]:
    running = [Service(service_url, cluster.url).start(), Service(service_url, cluster.url).start()]
    yield running
    for service in running:
        service.stop()


def spread_modes(cluster: Cluster, per_master: int = 2) -> dict[str, int]:
    """Mode names whose queue keys fall on each master's slots, `per_master` each."""
    modes: dict[str, int] = {}
    per: Counter[int] = Counter()
    for n in itertools.count():
        name = f"c{secrets.token_hex(3)}-{n}"
        owner = cluster.owner(Keys(name).pool)
        if per[owner] < per_master:
            per[owner] += 1
            modes[name] = owner
        if len(per) == 3 and min(per.values()) == per_master:
            return modes
    raise AssertionError("unreachable")


async def feed(bases: list[str], modes: list[str], load: Load, until: float, worker: int) -> None:
    async with httpx.AsyncClient(headers=ADMIN, timeout=30) as http:
        for n in itertools.count():
            if time.monotonic() > until:
                return
            mode = modes[n % len(modes)]
            players = [f"{load.prefix}{worker}-{n}-{i}" for i in range(10)]
            response = await http.post(
                f"{bases[n % 2]}/v1/queues/{mode}/tickets/batch",
                json={"tickets": [{"players": [player]} for player in players]},
            )
            _record(load, mode, response)
            if response.status_code in (200, 201):
                for outcome, player in zip(response.json()["tickets"], players, strict=True):
                    assert outcome["status"] == "queued", outcome
                    load.tickets[outcome["ticket_id"]] = mode
                    load.players[outcome["ticket_id"]] = player
            else:
                load.unsure.update(players)


async def matchmake(bases: list[str], modes: list[str], load: Load, until: float, worker: int) -> None:
    async with httpx.AsyncClient(headers=ADMIN, timeout=30) as http:
        for n in itertools.count(worker):
            # Past `until` while no proposal has formed (up to PATIENCE): a loaded machine may
            # queue only a few batches in SECONDS, each after the matchmakers passed its mode.
            now = time.monotonic()
            if now > until and (load.proposals or now > until + PATIENCE):
                return
            mode = modes[n % len(modes)]
            response = await http.post(f"{bases[n % 2]}/v1/queues/{mode}/matchmake", json={"max_matches": 20})
            _record(load, mode, response)
            if response.status_code == 200:
                load.proposals.extend(response.json()["matches"])


def _record(load: Load, mode: str, response: httpx.Response) -> None:
    load.answers.append((time.monotonic(), mode, response.status_code, response.headers.get("retry-after")))
    assert response.status_code in (200, 201, 503), response.text
    if response.status_code == 503:
        assert response.headers.get("retry-after"), response.text


async def run_load(bases: list[str], modes: list[str], load: Load, seconds: float) -> None:
    until = time.monotonic() + seconds
    await asyncio.gather(
        *(feed(bases, modes, load, until, w) for w in range(4)),
        *(matchmake(bases, modes, load, until, w) for w in range(MATCHMAKERS)),
    )


async def check_books(base: str, load: Load, strict: bool) -> Counter[str]:
    """No ticket in two proposals; each queued ticket is still known, and a matched one names
    a proposal that holds it (one a matchmaker was given, when `strict`). Counts by status."""
    seen = Counter(t for p in load.proposals for t in p["ticket_ids"])  # type: ignore[attr-defined]
    answers = Counter((mode, status) for _, mode, status, _ in load.answers)
    assert seen, (
        f"no proposal: {len(load.tickets)} tickets queued; answers by mode: {sorted(answers.items())}"
    )
    assert max(seen.values()) == 1
    given = {p["proposal_id"]: p for p in load.proposals}
    statuses: Counter[str] = Counter()
    async with httpx.AsyncClient(headers=ADMIN, timeout=30) as http:
        gate = asyncio.Semaphore(16)

        async def read(ticket: str, mode: str) -> dict[str, Any]:
            async with gate:
                state: dict[str, Any] = (await http.get(f"{base}/v1/queues/{mode}/tickets/{ticket}")).json()
                return state

        states = await asyncio.gather(*(read(ticket, mode) for ticket, mode in load.tickets.items()))
        for ticket, state in zip(load.tickets, states, strict=True):
            statuses[str(state.get("status", "lost"))] += 1
            assert state.get("status") in ("queued", "matched"), (ticket, state)
            if state["status"] == "matched":
                assert ticket in state["match"]["ticket_ids"]
                if strict or state["match"]["proposal_id"] in given:
                    assert given[state["match"]["proposal_id"]]["ticket_ids"] == state["match"]["ticket_ids"]
            else:
                assert ticket not in seen, (ticket, state)
    for proposal in load.proposals:
        known = {load.players[t] for t in proposal["ticket_ids"] if t in load.tickets}  # type: ignore[attr-defined]
        strangers = {p for team in proposal["teams"] for p in team} - known  # type: ignore[attr-defined]
        assert strangers <= load.unsure, strangers - load.unsure
    return statuses


# What each backfill route answers when it works (try_backfill_routes).
BACKFILL_ANSWERS = {"POST": 201, "GET": 200, "GET wait": 200, "PUT": 200, "DELETE": 204}


def full_roster(mode: str) -> list[list[str]]:
    """A backfill roster with no open slot (the modes are 1v1): no matchmaker fills it, so no
    proposal names players no ticket of the load holds."""
    return [[f"{mode}-a"], [f"{mode}-b"]]


async def try_backfill_routes(
    http: httpx.AsyncClient, base: str, mode: str, backfill_id: str
) -> dict[str, int]:
    """Each backfill route once, through `base`: a backfill created, the mode's full backfill
    read, long-polled and given its roster again, the one created deleted (or, none created,
    that one). Each route's status; a 503 carries Retry-After."""
    queue = f"{base}/v1/queues/{mode}/backfills"
    statuses: dict[str, int] = {}

    async def call(route: str, send: Callable[[], Awaitable[httpx.Response]]) -> httpx.Response:
        response = await send()
        assert response.status_code in (BACKFILL_ANSWERS[route], 503), (route, response.text)
        if response.status_code == 503:
            assert response.headers.get("retry-after"), response.text
        statuses[route] = response.status_code
        return response

    roster = {"teams": [[f"n-{secrets.token_hex(4)}"], [f"n-{secrets.token_hex(4)}"]], "ttl_s": 60}
    created = await call("POST", lambda: http.post(queue, json=roster))
    await call("GET", lambda: http.get(f"{queue}/{backfill_id}"))
    await call("GET wait", lambda: http.get(f"{queue}/{backfill_id}", params={"wait": 0.2}))
    await call("PUT", lambda: http.put(f"{queue}/{backfill_id}", json={"teams": full_roster(mode)}))
    gone = created.json()["backfill_id"] if created.status_code == 201 else backfill_id
    await call("DELETE", lambda: http.delete(f"{queue}/{gone}"))
    return statuses


async def test_two_services_eight_matchmakers_six_modes_over_three_masters(
    cluster: Cluster, services: list[Service]
) -> None:
    modes = spread_modes(cluster)
    assert len(set(modes.values())) == 3 and set(modes.values()) == set(cluster.masters())
    bases = [service.base for service in services]
    for mode in modes:
        assert httpx.put(f"{bases[0]}/v1/modes/{mode}", json={}, headers=ADMIN).status_code in (200, 201)
    load = Load()
    started = time.monotonic()
    await run_load(bases, list(modes), load, SECONDS)
    elapsed = time.monotonic() - started
    assert {status for _, _, status, _ in load.answers} <= {200, 201}
    statuses = await check_books(bases[1], load, strict=True)
    matched = sum(len(p["ticket_ids"]) for p in load.proposals)  # type: ignore[arg-type]
    assert statuses["matched"] == matched
    print(
        f"\ncluster: {len(load.tickets)} tickets queued, {len(load.proposals)} proposals ({matched} tickets) "
        f"from {MATCHMAKERS} matchmakers over 2 processes in {elapsed:.1f}s: {matched / elapsed:.0f} "
        "tickets matched/s (busy machine); none twice, none lost"
    )


async def test_a_killed_master_costs_its_modes_503s_until_its_replica_takes_over(
    cluster: Cluster, services: list[Service]
) -> None:
    modes = spread_modes(cluster)
    bases = [service.base for service in services]
    for mode in modes:
        assert httpx.put(f"{bases[0]}/v1/modes/{mode}", json={}, headers=ADMIN).status_code in (200, 201)
    victim = next(iter(modes.values()))
    replica = next(port for port in cluster.live_ports() if cluster.master_of(port) == victim)
    hit = {mode for mode, owner in modes.items() if owner == victim}
    load = Load()
    backfills: dict[str, str] = {}
    async with httpx.AsyncClient(headers=ADMIN, timeout=30) as http:
        for mode in modes:
            url = f"{bases[0]}/v1/queues/{mode}/backfills"
            made = await http.post(url, json={"teams": full_roster(mode)})
            assert made.status_code == 201 and made.json()["open_slots"] == [0, 0], made.text
            backfills[mode] = made.json()["backfill_id"]

    async def kill_midway() -> float:
        await asyncio.sleep(SECONDS / 3)
        cluster.kill(victim)
        return time.monotonic()

    killed_at, _ = await asyncio.gather(kill_midway(), run_load(bases, list(modes), load, SECONDS * 2))
    # The replica took over, and the cluster serves every slot again.
    cluster.wait_ready()
    assert replica in cluster.masters()
    unavailable = [(t, mode) for t, mode, status, _ in load.answers if status == 503]
    assert all(t >= killed_at for t, _ in unavailable)
    # Recovery without a restart: a fresh round of load answers only 200s, on every mode.
    after = Load(prefix="a")
    after.tickets, after.proposals, after.players, after.unsure = (
        load.tickets,
        load.proposals,
        load.players,
        load.unsure,
    )
    deadline = time.monotonic() + 60
    async with httpx.AsyncClient(headers=ADMIN, timeout=30) as http:
        for mode in hit:
            for base in bases:
                while (await http.post(f"{base}/v1/queues/{mode}/matchmake", json={})).status_code != 200:
                    assert time.monotonic() < deadline, "the killed master's modes did not recover"
                    await asyncio.sleep(0.2)
                # The backfill made before the kill is on the replica that took over.
                read = await http.get(f"{base}/v1/queues/{mode}/backfills/{backfills[mode]}")
                assert read.status_code == 200 and read.json()["teams"] == full_roster(mode), read.text
    await run_load(bases, list(modes), after, SECONDS)
    assert {status for _, _, status, _ in after.answers} <= {200, 201}
    for base in bases:
        # Readiness and the queue gauges (read from every mode's queue) work on the new master.
        assert httpx.get(f"{base}/readyz").json()["redis"] == "ok"
        metrics = httpx.get(f"{base}/metrics").text
        assert all(f'skill_queue_tickets{{mode="{mode}"}}' in metrics for mode in modes)
    statuses = await check_books(bases[0], after, strict=False)
    # Only the failed master's modes: the other masters' answered all along.
    assert [mode for _, mode in unavailable if mode not in hit] == []
    window = (max(t for t, _ in unavailable) - killed_at) if unavailable else 0.0
    print(
        f"\nfailover: {len(unavailable)} answers 503 (all with Retry-After, none 500) for "
        f"{window:.1f}s after the kill (busy machine), all on its modes; "
        f"tickets after: {dict(statuses)}; none twice, none lost"
    )


async def test_every_queue_operation_answers_on_the_cluster(
    cluster: Cluster, services: list[Service]
) -> None:
    """Each queue route once, through both processes, on modes of every master: a long-poll
    in one process is woken by a match made in the other (the events cross the cluster)."""
    first, second = (service.base for service in services)
    async with httpx.AsyncClient(headers=ADMIN, timeout=30) as http:
        for mode in spread_modes(cluster, per_master=1):
            assert (await http.put(f"{first}/v1/modes/{mode}", json={})).status_code in (200, 201)
            queue = f"/v1/queues/{mode}"
            a = (await http.post(f"{first}{queue}/tickets", json={"players": ["a"]})).json()["ticket_id"]
            assert (await http.get(f"{second}{queue}/players/a/ticket")).json()["ticket_id"] == a
            poll = asyncio.create_task(http.get(f"{first}{queue}/tickets/{a}", params={"wait": 20}))
            await asyncio.sleep(0.5)  # the poll is registered (a late one reads the match anyway)
            b = (await http.post(f"{second}{queue}/tickets", json={"players": ["b"]})).json()["ticket_id"]
            (match,) = (await http.post(f"{second}{queue}/matchmake", json={})).json()["matches"]
            polled = (await poll).json()
            assert polled["status"] == "matched" and polled["match"] == match
            requeued = await http.post(f"{first}{queue}/proposals/{match['proposal_id']}/requeue", json={})
            assert [t["status"] for t in requeued.json()["tickets"]] == ["queued", "queued"]
            assert (await http.get(f"{second}{queue}")).json()["tickets"] == 2
            assert (await http.delete(f"{second}{queue}/tickets/{b}")).status_code == 204
            assert (await http.get(f"{first}{queue}/tickets/{b}")).json()["status"] == "cancelled"


async def test_while_a_master_is_down_its_modes_backfill_routes_answer_503_and_the_others_answer(
    cluster: Cluster, services: list[Service]
) -> None:
    """A master with a live replica is killed while the replica holds back (the outage lasts as
    long as the test needs, on a busy machine too). Under reads of the other modes from both
    processes all along, each backfill route of its modes answers 503 with Retry-After, and the
    other modes' routes and reads answer as usual, each at the first try: the background sweeps
    and scripts that meet the dead node cost no other mode anything. Then the replica takes
    over and the backfills are read again."""
    modes = spread_modes(cluster, per_master=1)
    bases = [service.base for service in services]
    victim = next(m for m in modes.values() if any(cluster.master_of(p) == m for p in cluster.live_ports()))
    replica = next(port for port in cluster.live_ports() if cluster.master_of(port) == victim)
    backfills: dict[str, str] = {}
    healthy = [mode for mode, owner in modes.items() if owner != victim]
    async with httpx.AsyncClient(headers=ADMIN, timeout=30) as http:
        for mode in modes:
            assert (await http.put(f"{bases[0]}/v1/modes/{mode}", json={})).status_code in (200, 201)
            url = f"{bases[0]}/v1/queues/{mode}/backfills"
            made = await http.post(url, json={"teams": full_roster(mode)})
            assert made.status_code == 201, made.text
            backfills[mode] = made.json()["backfill_id"]
        reads: Counter[int] = Counter()
        done = asyncio.Event()

        async def read_healthy(base: str) -> None:
            for mode in itertools.cycle(healthy):
                if done.is_set():
                    return
                queue = f"{base}/v1/queues/{mode}"
                reads[(await http.get(f"{queue}/backfills/{backfills[mode]}")).status_code] += 1
                reads[(await http.get(f"{queue}/stats")).status_code] += 1

        cluster.hold_failover(replica, True)
        try:
            cluster.kill(victim)
            load = [asyncio.create_task(read_healthy(base)) for base in bases for _ in range(4)]
            try:
                await asyncio.sleep(2.0)  # the sweeps of both processes meet the dead node meanwhile
                for mode, owner in modes.items():
                    for base in bases:
                        statuses = await try_backfill_routes(http, base, mode, backfills[mode])
                        down = owner == victim
                        expected = dict.fromkeys(BACKFILL_ANSWERS, 503) if down else BACKFILL_ANSWERS
                        assert statuses == expected, (mode, down, statuses)
            finally:
                done.set()
                await asyncio.gather(*load)
        finally:
            cluster.hold_failover(replica, False)
        assert set(reads) == {200} and reads[200] > 0, reads
        cluster.wait_ready()
        assert replica in cluster.masters()
        deadline = time.monotonic() + 60
        for mode in modes:
            for base in bases:
                url = f"{base}/v1/queues/{mode}/backfills/{backfills[mode]}"
                while (read := await http.get(url)).status_code == 503:
                    assert time.monotonic() < deadline, "the killed master's backfills did not come back"
                    await asyncio.sleep(0.2)
                assert read.status_code == 200 and read.json()["teams"] == full_roster(mode), read.text
    print(f"\nreads of the other modes while a master was down: {reads[200]}, all 200")
