"""Modes with seed 002's tie layer and team-performance functions, through the API."""

from __future__ import annotations

import secrets

import psycopg
import pytest

from app.client import ApiError, AsyncClient
from app.rating import Rating, TrueSkill


async def fresh_mode(api: AsyncClient, **params: object) -> str:
    name = f"t-{secrets.token_hex(4)}"
    await api.put_mode(name, **params)
    return name


async def test_tie_layer_mode_stores_the_cores_ratings(api: AsyncClient) -> None:
    mode = await fresh_mode(
        api,
        tie_model="tie-layer",
        team_performance="size-penalised-mean",
        size_penalty_c0=0.9,
        size_penalty_c1=0.01,
        roster_cap=4,
        draw_probability=0.2,
    )
    stored = await api.get_mode(mode)
    assert (stored.tie_model, stored.team_performance) == ("tie-layer", "size-penalised-mean")
    assert (stored.size_penalty_c0, stored.size_penalty_c1, stored.roster_cap) == (0.9, 0.01, 4)
    env = TrueSkill(
        draw_probability=0.2,
        tie_model="tie-layer",
        team_performance="size-penalised-mean",
        c0=0.9,
        c1=0.01,
        roster_cap=4,
    )
    rosters = [[f"{mode}-{t}-{i}" for i in range(size)] for t, size in enumerate((4, 2, 5, 3, 1))]
    ranks = [1, 2, 2, 2, 3]
    answer = await api.post_match(
        {
            "match_id": f"{mode}-1",
            "mode": mode,
            "teams": [
                {"players": [{"id": p} for p in roster], "rank": r}
                for roster, r in zip(rosters, ranks, strict=True)
            ],
        }
    )
    expected = env.rate([[Rating() for _ in roster] for roster in rosters], ranks)
    after = {p.player_id: p.after for p in answer.players}
    for roster, team in zip(rosters, expected, strict=True):
        for player, rating in zip(roster, team, strict=True):
            assert (after[player].mu, after[player].sigma) == (rating.mu, rating.sigma)
    assert answer.quality == pytest.approx(env.quality([[Rating() for _ in r] for r in rosters]), rel=1e-12)


async def test_weighted_mode_uses_the_given_coefficients(api: AsyncClient) -> None:
    mode = await fresh_mode(api, team_performance="weighted")
    body = {
        "match_id": f"{mode}-1",
        "mode": mode,
        "teams": [
            {"players": [{"id": f"{mode}-a", "coefficient": 3.0}, {"id": f"{mode}-b"}], "rank": 1},
            {"players": [{"id": f"{mode}-c", "coefficient": 0.5}], "rank": 2},
        ],
    }
    answer = await api.post_match(body)
    (a, b), (c,) = TrueSkill(team_performance="weighted").rate(
        [(Rating(), Rating()), (Rating(),)], coefficients=[[3.0, 1.0], [0.5]]
    )
    after = {p.player_id: p.after for p in answer.players}
    assert after[f"{mode}-a"].mu == a.mu and after[f"{mode}-b"].mu == b.mu and after[f"{mode}-c"].mu == c.mu
    assert after[f"{mode}-a"].mu > after[f"{mode}-b"].mu
    again = await api.post_match(body)
    assert again.created is False
    body["teams"][0]["players"][0]["coefficient"] = 2.0  # type: ignore[index]
    with pytest.raises(ApiError) as conflict:
        await api.post_match(body)
    assert conflict.value.status == 409


async def test_coefficients_need_a_weighted_mode(api: AsyncClient, mode: str) -> None:
    with pytest.raises(ApiError) as error:
        await api.post_match(
            {
                "match_id": f"{mode}-c",
                "mode": mode,
                "teams": [
                    {"players": [{"id": f"{mode}-a"}], "rank": 1},
                    {"players": [{"id": f"{mode}-b", "coefficient": 2.0}], "rank": 2},
                ],
            }
        )
    assert error.value.status == 422
    assert error.value.problem["errors"][0]["loc"] == ["body", "teams", 1, "players", 0, "coefficient"]
    assert "team_performance 'weighted'" in error.value.problem["errors"][0]["msg"]
    with pytest.raises(ApiError):
        await api.get_match(f"{mode}-c")


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"tie_model": "ladder"}, "tie_model"),
        ({"team_performance": "median"}, "team_performance"),
        ({"roster_cap": 0}, "roster_cap"),
    ],
)
async def test_bad_model_settings_are_422(api: AsyncClient, params: dict[str, object], field: str) -> None:
    with pytest.raises(ApiError) as error:
        await api.put_mode(f"bad-{secrets.token_hex(3)}", **params)
    assert error.value.status == 422
    assert error.value.problem["errors"][0]["loc"][-1] == field


async def test_a_penalty_that_turns_negative_is_422(api: AsyncClient) -> None:
    with pytest.raises(ApiError) as error:
        await api.put_mode(
            f"bad-{secrets.token_hex(3)}", team_performance="size-penalised-mean", size_penalty_c0=-1.0
        )
    assert error.value.status == 422
    assert "c0 + c1·n must be positive" in error.value.problem["detail"]


async def test_a_weighted_group_stores_each_participant_as_answered(
    api: AsyncClient, database_url: str
) -> None:
    """Coefficients given and left out, ranks, weights and the before/after ratings: the
    match_players rows (numbers sent as binary arrays) hold what the answer says."""
    mode = await fresh_mode(api, team_performance="weighted")

    def body(n: int) -> dict[str, object]:
        return {
            "match_id": f"{mode}-{n}",
            "mode": mode,
            "teams": [
                {
                    "players": [{"id": f"{mode}-a", "coefficient": 0.25 * n + 0.5}, {"id": f"{mode}-b"}],
                    "rank": 1,
                },
                {"players": [{"id": f"{mode}-c", "weight": 0.5}], "rank": 1 + n % 2},
            ],
        }

    batch = await api.post_matches_batch([body(n) for n in range(8)])
    assert [r.status for r in batch.results] == [201] * 8
    with psycopg.connect(database_url) as conn:
        stored = conn.execute(
            """
            SELECT m.match_id, mp.player_id, mp.team, mp.rank, mp.weight, mp.coefficient,
                   mp.mu_before, mp.sigma_before, mp.mu_after, mp.sigma_after
            FROM match_players mp JOIN matches m ON m.id = mp.match_pk
            WHERE m.mode = %s ORDER BY m.match_id, mp.team, mp.player_id
            """,
            (mode,),
        ).fetchall()
    expected = []
    for n, result in enumerate(batch.results):
        assert result.match is not None
        given = [(0.25 * n + 0.5, 1.0), (None, 1.0), (None, 0.5)]
        for player, (coefficient, weight) in zip(result.match.players, given, strict=True):
            b, a = player.before, player.after
            rank = 1.0 if player.team == 0 else 1.0 + n % 2
            expected.append(
                (
                    f"{mode}-{n}",
                    player.player_id,
                    player.team,
                    rank,
                    weight,
                    coefficient,
                    b.mu,
                    b.sigma,
                    a.mu,
                    a.sigma,
                )
            )
    assert stored == expected
    # The coefficients count: the first player's moves by more than the teammate's.
    first = batch.results[0].match
    assert first is not None
    moved = [abs(p.after.mu - p.before.mu) for p in first.players]
    assert moved[0] != moved[1]
