"""Domain metrics: matches rated, ratings written, queue depth and waits, formed quality."""

from __future__ import annotations

import random

import httpx
import pytest
from fastapi import FastAPI
from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.parser import text_string_to_metric_families

from app import metrics
from app.jobs import service as jobs
from app.seasons import service as seasons

Headers = dict[str, str]
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(client: httpx.AsyncClient) -> Samples:
    response = await client.get("/metrics")
    assert response.status_code == 200
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """A series' value, 0 when the series is absent (as a counter no one has counted)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def present(samples: Samples, name: str, **labels: str) -> float:
    """A series' value, failing when the series is absent: for a check that 0 would pass."""
    key = (name, frozenset(labels.items()))
    assert key in samples, f"no series {name}{labels}"
    return samples[key]


def match(mode: str, n: int, *teams: list[str]) -> dict[str, object]:
    return {
        "match_id": f"{mode}-{n}",
        "mode": mode,
        "teams": [{"players": [{"id": p} for p in team], "rank": i} for i, team in enumerate(teams)],
    }


async def test_rated_matches_and_written_ratings_count_only_what_committed(
    app: FastAPI, client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    posted = await client.post("/v1/matches", json=match(mode, 1, ["a", "b"], ["c"]), headers=admin_headers)
    assert posted.status_code == 201
    again = await client.post("/v1/matches", json=match(mode, 1, ["a", "b"], ["c"]), headers=admin_headers)
    assert again.status_code == 200  # the same match again: applied once, counted once
    unknown = await client.post(
        "/v1/matches", json=match(f"{mode}-missing", 2, ["a"], ["c"]), headers=admin_headers
    )
    assert unknown.status_code == 404
    seeded = await client.put(
        f"/v1/players/d/ratings/{mode}", json={"mu": 30, "sigma": 2}, headers=admin_headers
    )
    assert seeded.status_code == 200

    samples = await scrape(client)
    assert value(samples, "skill_matches_rated_total", mode=mode) == 1
    assert value(samples, "skill_ratings_written_total", mode=mode, source="match") == 3
    assert value(samples, "skill_ratings_written_total", mode=mode, source="admin") == 1
    assert value(samples, "skill_matches_rated_total", mode=f"{mode}-missing") == 0

    # Run in this process: a queued job may be claimed by any process on the database (the
    # suite's live servers too), and each process counts only its own writes.
    result = await jobs.run_replay(app.state.resources.sessions, mode)
    job = {"result": result}
    samples = await scrape(client)
    assert (
        value(samples, "skill_ratings_written_total", mode=mode, source="replay") == job["result"]["players"]
    )
    assert (
        value(
            samples, "http_request_duration_seconds_count", method="POST", route="/v1/matches", status="201"
        )
        >= 1
    )


async def test_queue_depth_waits_and_formed_quality(
    client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    for player in ("w1", "w2", "w3"):
        ticket = await client.post(
            f"/v1/queues/{mode}/tickets", json={"players": [player]}, headers=admin_headers
        )
        assert ticket.status_code == 201
    samples = await scrape(client)
    assert value(samples, "skill_queue_tickets", mode=mode) == 3
    assert 0 <= present(samples, "skill_queue_oldest_wait_seconds", mode=mode) < 60

    formed = await client.post(f"/v1/queues/{mode}/matchmake", json={"max_matches": 5}, headers=admin_headers)
    assert formed.status_code == 200
    proposals = formed.json()["matches"]
    assert len(proposals) == 1
    samples = await scrape(client)
    assert value(samples, "skill_queue_tickets", mode=mode) == 1
    assert value(samples, "skill_formed_match_quality_count", mode=mode) == 1
    assert value(samples, "skill_formed_match_quality_sum", mode=mode) == proposals[0]["quality"]
    assert value(samples, "skill_queue_wait_seconds_count", mode=mode) == 2
    assert 0 <= present(samples, "skill_queue_wait_seconds_sum", mode=mode) < 60


async def test_backfills_open_slots_fills_and_fill_quality(
    client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    url = f"/v1/queues/{mode}/backfills"
    for roster in ([["bm-a"], []], [["bm-b"], []]):
        made = await client.post(url, json={"teams": roster}, headers=admin_headers)
        assert made.status_code == 201, made.text
    gone = await client.post(url, json={"teams": [["bm-c"], []]}, headers=admin_headers)
    deleted = await client.delete(f"{url}/{gone.json()['backfill_id']}", headers=admin_headers)
    assert deleted.status_code == 204
    samples = await scrape(client)
    assert present(samples, "skill_queue_backfills", mode=mode) == 2
    assert present(samples, "skill_queue_backfill_open_slots", mode=mode) == 2
    assert value(samples, "skill_backfill_fills_total", mode=mode) == 0

    ticket = await client.post(
        f"/v1/queues/{mode}/tickets", json={"players": ["bm-new"]}, headers=admin_headers
    )
    assert ticket.status_code == 201
    formed = await client.post(f"/v1/queues/{mode}/matchmake", headers=admin_headers)
    (fill,) = formed.json()["matches"]
    assert fill["kind"] == "backfill"
    samples = await scrape(client)
    assert value(samples, "skill_backfill_fills_total", mode=mode) == 1
    assert value(samples, "skill_backfill_fill_quality_count", mode=mode) == 1
    assert value(samples, "skill_backfill_fill_quality_sum", mode=mode) == fill["quality"]
    # A fill is a formed match too.
    assert value(samples, "skill_formed_match_quality_count", mode=mode) == 1
    assert present(samples, "skill_queue_backfills", mode=mode) == 2
    assert present(samples, "skill_queue_backfill_open_slots", mode=mode) == 1


def test_observing_all_at_once_equals_observing_one_by_one() -> None:
    registry = CollectorRegistry()
    bounds = (0.5, 1, 2, 5)
    one_by_one = Histogram("one", "one", ["mode"], buckets=bounds, registry=registry).labels("m")
    at_once = Histogram("once", "once", ["mode"], buckets=bounds, registry=registry).labels("m")
    rng = random.Random(3)
    # Values on the bounds belong to that bucket (le), values past the last to +Inf.
    waits = [0.0, 0.5, 1.0, 2.0, 5.0, 5.0001, 40.0] + [rng.uniform(0, 8) for _ in range(500)]
    for wait in waits:
        one_by_one.observe(wait)
    metrics.observe_all(at_once, waits)
    metrics.observe_all(at_once, [])

    def samples(name: str) -> list[tuple[str, dict[str, str], float]]:
        family = next(f for f in registry.collect() if f.name == name)
        return [
            (s.name.removeprefix(name), s.labels, s.value) for s in family.samples if "_created" not in s.name
        ]

    expected, got = samples("one"), samples("once")
    assert [(n, labels) for n, labels, _ in got] == [(n, labels) for n, labels, _ in expected]
    for (_, _, want), (_, _, have) in zip(expected, got, strict=True):
        assert have == pytest.approx(want, rel=1e-12)


async def test_a_season_switch_counts_the_ratings_it_resets(
    app: FastAPI, client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    for n, teams in enumerate([(["s1"], ["s2"]), (["s2"], ["s3"])]):
        posted = await client.post("/v1/matches", json=match(mode, n, *teams), headers=admin_headers)
        assert posted.status_code == 201

    before = value(await scrape(client), "skill_ratings_written_total", mode=mode, source="season")
    # In this process, as the replay above: each process counts only its own writes.
    result = await seasons.run_switch(app.state.resources.sessions, mode, {"name": "s1", "reset": "hard"})
    assert result["players"] == 3
    samples = await scrape(client)
    assert value(samples, "skill_ratings_written_total", mode=mode, source="season") - before == 3
    assert value(samples, "skill_ratings_written_total", mode=mode, source="match") == 4
