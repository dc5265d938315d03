"""POST /v1/matches/batch: each item stands alone, exactly once across batches and single
posts, an envelope 422 applies nothing, and ratings equal posting the same matches singly."""

from __future__ import annotations

import itertools
import random
from typing import Any

import httpx
import pytest

from app.client import AsyncClient
from app.matches import repository
from app.rating import Rating, TrueSkill
from tests.api.test_matches import match

TOLERANCE = 1e-12


async def post_batch(
    client: httpx.AsyncClient, headers: dict[str, str], items: list[Any]
) -> list[dict[str, Any]]:
    response = await client.post("/v1/matches/batch", json={"matches": items}, headers=headers)
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    assert len(results) == len(items)
    return results


async def test_every_item_gets_what_a_single_post_would(
    client: httpx.AsyncClient, admin_headers: dict[str, str], mode: str
) -> None:
    taken = match(f"{mode}-taken", mode, ["a1"], ["a2"])
    assert (await client.post("/v1/matches", json=taken, headers=admin_headers)).status_code == 201
    both = match(f"{mode}-both", mode, ["b1"], ["b2"])
    both["teams"][0]["score"] = 3  # rank and score on one team: a cross-field rule
    items: list[Any] = [
        match(f"{mode}-new", mode, ["n1"], ["n2"]),  # 201
        taken,  # 200: the stored match
        match(f"{mode}-taken", mode, ["a1"], ["zz"]),  # 409: another match under a used id
        {"match_id": f"{mode}-bad", "mode": mode},  # 422: no teams
        both,  # 422: cross-field
        match(f"{mode}-nomode", f"{mode}-missing", ["c1"], ["c2"]),  # 422: unknown mode
        "not a match",  # 422: not even an object
        match(f"{mode}-last", mode, ["n1"], ["a1"]),  # 201, after the failures
    ]
    results = await post_batch(client, admin_headers, items)
    assert [r["status"] for r in results] == [201, 200, 409, 422, 422, 422, 422, 201]
    assert [r["match_id"] for r in results] == [
        f"{mode}-new",
        f"{mode}-taken",
        f"{mode}-taken",
        f"{mode}-bad",
        f"{mode}-both",
        f"{mode}-nomode",
        None,
        f"{mode}-last",
    ]
    for result in results:
        assert (result["match"] is None) == (result["status"] >= 400)
        assert (result["problem"] is None) == (result["status"] < 400)
        if result["problem"] is not None:
            assert result["problem"]["status"] == result["status"]
            assert result["problem"]["instance"] == "/v1/matches/batch"
    assert results[0]["match"]["created"] is True and results[1]["match"]["created"] is False
    # The stored match, byte for byte as the single post's retry gets it.
    single = await client.post("/v1/matches", json=taken, headers=admin_headers)
    assert single.status_code == 200 and results[1]["match"] == single.json()
    # Validation problems are the single post's, detail and located errors alike.
    for index in (3, 4):
        alone = await client.post("/v1/matches", json=items[index], headers=admin_headers)
        assert alone.status_code == 422
        assert results[index]["problem"]["detail"] == alone.json()["detail"]
        assert results[index]["problem"]["errors"] == alone.json()["errors"]
    # The last item played after the others were refused: n1 had played the first item.
    assert results[7]["match"]["players"][0]["before"] == results[0]["match"]["players"][0]["after"]
    fetched = await client.get(f"/v1/matches/{mode}-last", headers=admin_headers)
    assert fetched.json() == {**results[7]["match"], "created": False}


async def test_a_repeated_id_counts_as_posted_after_the_first(
    client: httpx.AsyncClient, admin_headers: dict[str, str], mode: str
) -> None:
    first = match(f"{mode}-x", mode, ["x1"], ["x2"])
    other = match(f"{mode}-x", mode, ["x2"], ["x1"])
    results = await post_batch(client, admin_headers, [first, first, other, first])
    assert [r["status"] for r in results] == [201, 200, 409, 200]
    assert results[1]["match"] == {**results[0]["match"], "created": False}
    # Across batches and single posts alike.
    again = await post_batch(client, admin_headers, [other, first])
    assert [r["status"] for r in again] == [409, 200]
    assert (await client.post("/v1/matches", json=first, headers=admin_headers)).status_code == 200
    player = (await client.get("/v1/players/x1", headers=admin_headers)).json()
    assert next(r for r in player["ratings"] if r["mode"] == mode)["matches"] == 1
    # A 422 first leaves the id free: the next item with it is the first post.
    bad = {**first, "match_id": f"{mode}-y", "teams": first["teams"][:1]}
    good = {**first, "match_id": f"{mode}-y"}
    assert [r["status"] for r in await post_batch(client, admin_headers, [bad, good, good])] == [
        422,
        201,
        200,
    ]


async def test_a_tie_the_mode_cannot_rate_fails_alone_and_frees_its_id(
    api: AsyncClient, client: httpx.AsyncClient, admin_headers: dict[str, str], mode: str
) -> None:
    await api.put_mode(mode, draw_probability=0.0)
    tie = match(f"{mode}-t", mode, ["t1"], ["t2"], ranks=[1, 1])
    win = match(f"{mode}-t", mode, ["t1"], ["t2"], ranks=[1, 2])
    other = match(f"{mode}-o", mode, ["t1"], ["t3"])
    results = await post_batch(client, admin_headers, [tie, other, win, tie])
    assert [r["status"] for r in results] == [422, 201, 201, 409]
    # The refused tie wrote nothing: t2 first played in the third item, at the prior.
    assert results[2]["match"]["players"][1]["before"]["mu"] == 25.0
    assert results[2]["match"]["players"][0]["before"] == results[1]["match"]["players"][0]["after"]


async def test_an_envelope_that_is_not_1_to_1000_matches_applies_nothing(
    client: httpx.AsyncClient, admin_headers: dict[str, str], mode: str
) -> None:
    good = match(f"{mode}-e", mode, ["e1"], ["e2"])
    for body in (
        {"matches": []},
        {"matches": [good] * 1001},
        {"matches": good},
        {"match": [good]},
        {"matches": [good], "extra": 1},
        [good],
    ):
        response = await client.post("/v1/matches/batch", json=body, headers=admin_headers)
        assert response.status_code == 422, body
        assert response.headers["content-type"].startswith("application/problem+json")
    assert (await client.get(f"/v1/matches/{mode}-e", headers=admin_headers)).status_code == 404
    player = (await client.get("/v1/players/e1", headers=admin_headers)).json()
    assert mode not in {r["mode"] for r in player.get("ratings", [])}


def random_match(rng: random.Random, match_id: str, mode: str, players: list[str]) -> dict[str, Any]:
    """Mixed shapes: 1v1, 2v2, 3v3, free-for-all of 3 or 4, partial play, draws, scores."""
    size, count = rng.choice([(1, 2), (2, 2), (3, 2), (1, 3), (1, 4), (2, 3)])
    chosen = rng.sample(players, size * count)
    teams: list[dict[str, Any]] = []
    for index in range(count):
        team = [{"id": p} for p in chosen[index * size : (index + 1) * size]]
        if rng.random() < 0.2:
            team[0]["weight"] = rng.choice([0.25, 0.5, 1.0])
        teams.append({"players": team})
    scored = rng.random() < 0.3
    for team in teams:
        value = rng.randint(0, count - 1)
        team["score" if scored else "rank"] = value
    return {"match_id": match_id, "mode": mode, "teams": teams}


def close(value: float) -> Any:
    """Equal within 1e-12: a batch rates its two-team matches by the NumPy closed form
    (app/rating/levels.py), which rounds differently from the single post's factor graph."""
    return pytest.approx(value, rel=TOLERANCE, abs=TOLERANCE)


async def test_batches_interleaved_with_single_posts_rate_as_singles_do(api: AsyncClient, mode: str) -> None:
    """The same matches, in one mode through batches and single posts interleaved, and in
    another mode one post at a time: every rating equal within 1e-12."""
    singly = f"{mode}-s"
    await api.put_mode(singly)
    rng = random.Random(23)
    players = [f"{mode}-p{i}" for i in range(14)]
    bodies = [random_match(rng, f"{mode}-{n}", mode, players) for n in range(240)]
    mixed: dict[str, Any] = {}
    position = 0
    while position < len(bodies):
        take = rng.choice([1, 1, 3, 17, 40])
        chunk = bodies[position : position + take]
        position += take
        if len(chunk) == 1 and rng.random() < 0.7:
            mixed[chunk[0]["match_id"]] = await api.post_match(chunk[0])
            continue
        # A retry of an earlier match rides along and changes nothing.
        extra = [bodies[rng.randrange(position - take + 1)]] if position > take else []
        batch = await api.post_matches_batch(chunk + extra)
        for result in batch.results[: len(chunk)]:
            assert result.status == 201, result.problem
            assert result.match is not None
            mixed[result.match.match_id] = result.match
        assert [r.status for r in batch.results[len(chunk) :]] == [200] * len(extra)
    for body in bodies:
        alone = await api.post_match({**body, "match_id": body["match_id"] + "-s", "mode": singly})
        got = mixed[body["match_id"]]
        assert got.quality == close(alone.quality)
        assert [p.player_id for p in got.players] == [p.player_id for p in alone.players]
        for ours, theirs in zip(got.players, alone.players, strict=True):
            for side in ("before", "after"):
                a, b = getattr(ours, side), getattr(theirs, side)
                assert (a.mu, a.sigma, a.conservative) == (
                    close(b.mu),
                    close(b.sigma),
                    close(b.conservative),
                )
    for player in players:
        ratings = {r.mode: r for r in (await api.get_player(player)).ratings}
        ours, theirs = ratings[mode], ratings[singly]
        assert (ours.rating.mu, ours.rating.sigma) == (close(theirs.rating.mu), close(theirs.rating.sigma))
        assert (ours.matches, ours.wins, ours.draws) == (theirs.matches, theirs.wins, theirs.draws)
    # Leaderboard counts exact after the batches: every player ranked, rank = 1 + those ahead.
    board = (await api.get_leaderboard(mode, limit=100)).entries
    assert sorted(e.player_id for e in board) == sorted(players)
    for index, entry in enumerate(board):
        standing = await api.get_leaderboard_standing(mode, entry.player_id, around=0)
        assert (standing.rank, standing.total) == (index + 1, len(players))


async def test_a_batch_of_chained_players_equals_rating_one_at_a_time(api: AsyncClient, mode: str) -> None:
    """Matches that share players see each other's results in list order: 300 matches over 6
    players (chains hundreds of levels deep) in one batch, in two modes interleaved (one the
    NumPy path covers, one with a tie model it does not), equal the core rating them one at a
    time within 1e-12, and each player's before is their previous match's after, to the bit."""
    other = f"{mode}-tie-layer"
    await api.put_mode(other, tie_model="tie-layer")
    envs = {mode: TrueSkill(), other: TrueSkill(tie_model="tie-layer")}
    rng = random.Random(7)
    players = [f"{mode}-c{i}" for i in range(6)]
    bodies = []
    for n in range(300):
        size = rng.choice([1, 2])
        chosen = rng.sample(players, 2 * size)
        partial = rng.random() < 0.1  # partial play goes through the scalar path, in its level
        teams: list[dict[str, Any]] = [
            {"players": [{"id": p, "weight": 0.5 if partial and i == 0 else 1.0} for i, p in enumerate(team)]}
            for team in (chosen[:size], chosen[size:])
        ]
        outcome = rng.choice([(1, 2), (2, 1), (1, 1)])
        for team, rank in zip(teams, outcome, strict=True):
            team["rank"] = rank
        played = mode if rng.random() < 0.75 else other
        bodies.append({"match_id": f"{mode}-chain{n}", "mode": played, "teams": teams})
    batch = await api.post_matches_batch(bodies)
    assert [r.status for r in batch.results] == [201] * len(bodies)
    current = {(m, p): Rating(envs[m].mu, envs[m].sigma) for m in envs for p in players}
    last_after: dict[tuple[str, str], Any] = {}
    for body, result in zip(bodies, batch.results, strict=True):
        assert result.match is not None
        env, played = envs[body["mode"]], body["mode"]
        teams_ids = [[p["id"] for p in t["players"]] for t in body["teams"]]
        weights = [[p["weight"] for p in t["players"]] for t in body["teams"]]
        ranks = [t["rank"] for t in body["teams"]]
        groups = [[current[played, p] for p in team] for team in teams_ids]
        quality = env.quality(groups, weights)
        rated = env.rate(groups, ranks, weights)
        assert result.match.quality == close(quality)
        expected = [
            (p, r)
            for team, after in zip(teams_ids, rated, strict=True)
            for p, r in zip(team, after, strict=True)
        ]
        assert [p.player_id for p in result.match.players] == [p for p, _ in expected]
        for got, (player, rating) in zip(result.match.players, expected, strict=True):
            assert (got.after.mu, got.after.sigma) == (close(rating.mu), close(rating.sigma))
            if (played, player) in last_after:
                assert got.before == last_after[played, player]
            last_after[played, player] = got.after
            # The next match starts from what this batch answered (as the stored row holds).
            current[played, player] = Rating(got.after.mu, got.after.sigma)
    for player in players:
        stored = {r.mode: r for r in (await api.get_player(player)).ratings}
        for played in envs:
            after = last_after[played, player]
            assert (stored[played].rating.mu, stored[played].rating.sigma) == (after.mu, after.sigma)
        history = (await api.player_matches(player, mode=mode, limit=100)).matches
        assert len(history) > 50
        # Newest first, each before the next older after: the batch's order.
        for newer, older in itertools.pairwise(history):
            assert newer.before == older.after


async def test_an_id_another_post_records_after_the_batch_claimed_it_is_judged_again(
    client: httpx.AsyncClient, admin_headers: dict[str, str], mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Between the batch's claim (which reads the id as free) and its write, a single post
    # records the id with other players (no row lock orders the two). The write fails on the
    # unique index, the batch is claimed again, and the item is then a used id: 409, while
    # the rest of the batch applies once.
    claim = repository.claim
    raced = match(f"{mode}-r", mode, ["q3"], ["q4"])
    posted: list[int] = []

    async def claim_then_race(conn: Any, claims: Any, setup: Any = ()) -> repository.Claimed:
        claimed = await claim(conn, claims, setup)
        if raced["match_id"] in claimed.new and not posted:
            posted.append(0)  # the single post's own claim goes straight through
            posted[0] = (await client.post("/v1/matches", json=raced, headers=admin_headers)).status_code
        return claimed

    monkeypatch.setattr(repository, "claim", claim_then_race)
    items = [match(f"{mode}-r", mode, ["q1"], ["q2"]), match(f"{mode}-k", mode, ["q1"], ["q5"])]
    results = await post_batch(client, admin_headers, items)
    assert posted == [201]
    assert [r["status"] for r in results] == [409, 201]
    assert "different body" in results[0]["problem"]["detail"]
    # q1 played only the second item, from the prior; q2 played nothing.
    assert results[1]["match"]["players"][0]["before"]["mu"] == 25.0
    stored = (await client.get(f"/v1/matches/{mode}-r", headers=admin_headers)).json()
    assert [p["player_id"] for p in stored["players"]] == ["q3", "q4"]
    for player, played in (("q1", 1), ("q3", 1), ("q5", 1)):
        profile = (await client.get(f"/v1/players/{player}", headers=admin_headers)).json()
        assert next(r for r in profile["ratings"] if r["mode"] == mode)["matches"] == played
    assert (await client.get("/v1/players/q2", headers=admin_headers)).status_code == 404
