"""The one pipeline that records matches (app/matches/recording.py), driven directly: each match
of a group stands alone, exactly once, rated in the listed order on one transaction, and a
refused match or a lost race is claimed again."""

from __future__ import annotations

import contextlib
import random
from collections.abc import AsyncIterator
from typing import Any

import psycopg
import pytest
from fastapi import FastAPI

from app.client import AsyncClient
from app.errors import AppError, Conflict, UnknownMode, ValidationFailed
from app.matches import repository
from app.matches.recording import Outcome, Recorded, Writers
from app.matches.schemas import MatchIn, match_json
from app.rating import Rating, TrueSkill, conservative
from app.rating.levels import ONE_AT_A_TIME
from tests import ddl

TOLERANCE = 1e-12


def body(match_id: str, mode: str, *teams: list[str], ranks: list[int] | None = None) -> dict[str, Any]:
    ranks = ranks or list(range(1, len(teams) + 1))
    return {
        "match_id": match_id,
        "mode": mode,
        "teams": [{"players": [{"id": p} for p in t], "rank": r} for t, r in zip(teams, ranks, strict=True)],
    }


@contextlib.asynccontextmanager
async def writers_of(app: FastAPI) -> AsyncIterator[Writers]:
    """Writers with connections of their own, as another process has."""
    resources = app.state.resources
    opened = Writers(resources.engine, resources.sessions, resources.settings, 1)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
async def writers(app: FastAPI) -> AsyncIterator[Writers]:
    async with writers_of(app) as opened:
        yield opened


async def record(writers: Writers, items: list[dict[str, Any]]) -> list[Outcome]:
    return await writers.record([MatchIn.model_validate(item) for item in items])


def kinds(outcomes: list[Outcome]) -> list[int]:
    """Each outcome as the single post's status."""
    return [o.status if isinstance(o, AppError) else 201 if o.created else 200 for o in outcomes]


async def test_each_match_of_a_group_gets_its_own_answer(
    app: FastAPI, writers: Writers, api: AsyncClient, mode: str
) -> None:
    await record(writers, [body(f"{mode}-used", mode, ["u1"], ["u2"])])
    both = body(f"{mode}-both", mode, ["b1"], ["b2"])
    both["teams"][0]["score"] = 3  # rank and score on one team: a cross-field rule
    items = [
        body(f"{mode}-new", mode, ["n1"], ["n2"]),  # 201
        body(f"{mode}-used", mode, ["u1"], ["u2"]),  # 200: the stored match
        body(f"{mode}-used", mode, ["u2"], ["u1"]),  # 409: another match under a used id
        both,  # 422
        body(f"{mode}-nomode", f"{mode}-missing", ["c1"], ["c2"]),  # 404: unknown mode
        body(f"{mode}-x", mode, ["n1"], ["u1"]),  # 201, n1 after the first item
        body(f"{mode}-x", mode, ["n1"], ["u1"]),  # 200: posted after the earlier item
        body(f"{mode}-x", mode, ["u1"], ["n1"]),  # 409: differs from the earlier item
    ]
    outcomes = await record(writers, items)
    assert kinds(outcomes) == [201, 200, 409, 422, 404, 201, 200, 409]
    assert isinstance(outcomes[2], Conflict) and "different body" in outcomes[2].detail
    assert isinstance(outcomes[3], ValidationFailed) and isinstance(outcomes[4], UnknownMode)
    new, stored, later, again = outcomes[0], outcomes[1], outcomes[5], outcomes[6]
    assert isinstance(new, Recorded) and isinstance(stored, Recorded)
    assert isinstance(later, Recorded) and isinstance(again, Recorded)
    # The answer is the stored response, byte for byte but for `created`.
    fetched = await api.get_match(f"{mode}-new")
    assert new.json == match_json(fetched.model_copy(update={"created": True}))
    assert new.match == fetched.model_copy(update={"created": True})
    assert stored.json == match_json(await api.get_match(f"{mode}-used"))
    assert again.json == match_json(later.match.model_copy(update={"created": False}))
    # n1's second match started from where its first left it.
    assert later.match.players[0].before == new.match.players[0].after
    # Applied once each: the retries and the refusals wrote nothing.
    ratings = {r.mode: r for r in (await api.get_player("u1")).ratings}
    assert ratings[mode].matches == 2


@pytest.mark.parametrize("count", [ONE_AT_A_TIME, 300])
async def test_a_group_rates_in_the_listed_order_as_the_core_one_at_a_time(
    app: FastAPI, writers: Writers, api: AsyncClient, mode: str, database_url: str, count: int
) -> None:
    """Matches that share players see each other's results in list order, in two modes
    interleaved (one with a tie model the NumPy batch path does not cover), with partial play:
    equal to the core rating them one at a time, to the bit for a few matches (rated one at a
    time) and within 1e-12 for many (level by level). One transaction, applied_seq in the
    listed order; each response's `conservative` is the mode's mu - k·sigma."""
    other = f"{mode}-tie-layer"
    await api.put_mode(other, tie_model="tie-layer", conservative_k=2.0)
    envs = {mode: TrueSkill(), other: TrueSkill(tie_model="tie-layer")}
    k = {mode: 3.0, other: 2.0}
    rng = random.Random(count)
    players = [f"{mode}-c{i}" for i in range(6)]
    items = []
    for n in range(count):
        size = rng.choice([1, 2])
        chosen = rng.sample(players, 2 * size)
        partial = rng.random() < 0.1
        teams: list[dict[str, Any]] = [
            {"players": [{"id": p, "weight": 0.5 if partial and i == 0 else 1.0} for i, p in enumerate(team)]}
            for team in (chosen[:size], chosen[size:])
        ]
        for team, rank in zip(teams, rng.choice([(1, 2), (2, 1), (1, 1)]), strict=True):
            team["rank"] = rank
        played = mode if rng.random() < 0.75 else other
        items.append({"match_id": f"{mode}-chain{n}", "mode": played, "teams": teams})
    outcomes = await record(writers, items)
    assert kinds(outcomes) == [201] * count
    exact = count <= ONE_AT_A_TIME

    def same(value: float, expected: float) -> bool:
        return value == expected if exact else value == pytest.approx(expected, rel=TOLERANCE, abs=TOLERANCE)

    current = {(m, p): Rating(envs[m].mu, envs[m].sigma) for m in envs for p in players}
    for item, outcome in zip(items, outcomes, strict=True):
        assert isinstance(outcome, Recorded)
        env, played = envs[item["mode"]], item["mode"]
        ids = [[p["id"] for p in t["players"]] for t in item["teams"]]
        weights = [[p["weight"] for p in t["players"]] for t in item["teams"]]
        groups = [[current[played, p] for p in team] for team in ids]
        quality = env.quality(groups, weights)
        rated = env.rate(groups, [t["rank"] for t in item["teams"]], weights)
        assert same(outcome.match.quality, quality)
        expected = [
            (p, r) for team, after in zip(ids, rated, strict=True) for p, r in zip(team, after, strict=True)
        ]
        assert [p.player_id for p in outcome.match.players] == [p for p, _ in expected]
        for got, (player, rating) in zip(outcome.match.players, expected, strict=True):
            assert same(got.after.mu, rating.mu) and same(got.after.sigma, rating.sigma)
            assert got.after.conservative == conservative(got.after.mu, got.after.sigma, k[played])
            assert got.before.mu == current[played, player].mu  # the previous match's after, to the bit
            current[played, player] = Rating(got.after.mu, got.after.sigma)
    played_by = {(item["mode"], p["id"]) for item in items for t in item["teams"] for p in t["players"]}
    for player in {p for _, p in played_by}:
        stored = {r.mode: r for r in (await api.get_player(player)).ratings}
        assert set(stored) == {m for m, p in played_by if p == player}
        for played, rating in stored.items():
            assert (rating.rating.mu, rating.rating.sigma) == tuple(current[played, player])
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT match_id, xmin::text FROM matches WHERE mode IN (%s, %s) ORDER BY applied_seq",
            (mode, other),
        ).fetchall()
    assert [r[0] for r in rows] == [item["match_id"] for item in items]
    assert len({r[1] for r in rows}) == 1


async def test_a_tie_the_mode_cannot_rate_fails_alone_and_frees_its_id(
    app: FastAPI, writers: Writers, api: AsyncClient, mode: str
) -> None:
    await api.put_mode(mode, draw_probability=0.0)
    tie = body(f"{mode}-t", mode, ["t1"], ["t2"], ranks=[1, 1])
    win = body(f"{mode}-t", mode, ["t1"], ["t2"], ranks=[1, 2])
    other = body(f"{mode}-o", mode, ["t1"], ["t3"])
    outcomes = await record(writers, [tie, other, win, tie])
    assert kinds(outcomes) == [422, 201, 201, 409]
    assert isinstance(outcomes[0], ValidationFailed)
    assert outcomes[0].errors == [{"loc": ["body", "teams"], "msg": outcomes[0].detail}]
    applied, later = outcomes[1], outcomes[2]
    assert isinstance(applied, Recorded) and isinstance(later, Recorded)
    # The refused tie wrote nothing: t2 first played in the third item, at the prior.
    assert later.match.players[1].before.mu == 25.0
    assert later.match.players[0].before == applied.match.players[0].after


async def test_an_id_another_transaction_records_after_the_claim_is_judged_again(
    app: FastAPI, writers: Writers, database_url: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The claim only reads a free id; the write inserts its row, and the unique index decides.
    # Here another transaction records the id (with other players, so no row lock orders the
    # two) between this group's claim and its write: the write fails, the group is claimed
    # again, and the id is then a used one, 409 for a different body, while the rest apply.
    claim = repository.claim
    raced = body(f"{mode}-raced", mode, ["r3"], ["r4"])
    done: list[Outcome] = []
    racing: list[bool] = []

    async def claim_then_race(conn: Any, claims: Any, begin: Any = ()) -> repository.Claimed:
        claimed = await claim(conn, claims, begin)
        if raced["match_id"] in claimed.new and not racing:
            racing.append(True)  # the other transaction's own claim goes straight through
            async with writers_of(app) as others:
                done.extend(await record(others, [raced]))
        return claimed

    monkeypatch.setattr(repository, "claim", claim_then_race)
    items = [body(f"{mode}-raced", mode, ["r1"], ["r2"]), body(f"{mode}-d", mode, ["r1"], ["r5"])]
    outcomes = await record(writers, items)
    assert kinds(done) == [201]
    assert kinds(outcomes) == [409, 201]
    assert isinstance(outcomes[0], Conflict) and "different body" in outcomes[0].detail
    assert isinstance(outcomes[1], Recorded)
    assert outcomes[1].match.players[0].before.mu == 25.0  # r1 played only the second match
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT player_id, matches FROM ratings WHERE mode = %s ORDER BY player_id", (mode,)
        ).fetchall()
        stored = conn.execute(
            "SELECT count(*) FROM match_players p JOIN matches m ON m.id = p.match_pk WHERE m.match_id = %s",
            (f"{mode}-raced",),
        ).fetchone()
    assert rows == [("r1", 1), ("r3", 1), ("r4", 1), ("r5", 1)]
    assert stored == (2,)  # the other transaction's participants only


async def test_a_database_error_applies_nothing_of_the_group(
    app: FastAPI, writers: Writers, api: AsyncClient, database_url: str, mode: str
) -> None:
    trigger = f"boom_{mode.replace('-', '_')}"
    # In the write's statement, after the ratings are updated.
    with ddl.failing_rows(database_url, trigger, "INSERT", "match_players", f"{mode}-z2"):
        items = [body(f"{mode}-{n}", mode, [f"{mode}-z1"], [f"{mode}-z{n + 2}"]) for n in range(5)]
        with pytest.raises(psycopg.errors.RaiseException):
            await record(writers, items)
    with psycopg.connect(database_url) as conn:
        assert conn.execute("SELECT count(*) FROM matches WHERE mode = %s", (mode,)).fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM ratings WHERE mode = %s", (mode,)).fetchone() == (0,)
    # The connection went back clean: the next group on it applies.
    assert kinds(await record(writers, items)) == [201] * 5
    assert [r.matches for r in (await api.get_player(f"{mode}-z1")).ratings] == [5]
