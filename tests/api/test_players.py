"""Players: profile, paginated history (newest first), admin overrides."""

from __future__ import annotations

import httpx
import pytest

from app.client import ApiError, AsyncClient


async def test_unknown_player_is_404(api: AsyncClient) -> None:
    with pytest.raises(ApiError) as caught:
        await api.get_player("nobody-at-all")
    assert caught.value.status == 404


async def test_history_pages_newest_first(api: AsyncClient, mode: str) -> None:
    for i in range(7):
        await api.post_match(
            {
                "match_id": f"{mode}-h{i}",
                "mode": mode,
                "teams": [
                    {"players": [{"id": "hist"}], "rank": i % 2},
                    {"players": [{"id": f"o{i}"}], "rank": 1 - i % 2},
                ],
            }
        )
    seen: list[str] = []
    cursor = None
    while True:
        page = await api.player_matches("hist", mode=mode, limit=3, cursor=cursor)
        seen += [m.match_id for m in page.matches]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [f"{mode}-h{i}" for i in reversed(range(7))]
    newest = (await api.player_matches("hist", mode=mode, limit=1)).matches[0]
    current = next(r for r in (await api.get_player("hist")).ratings if r.mode == mode)
    assert newest.after.mu == current.rating.mu


async def test_bad_cursor_is_422(
    client: httpx.AsyncClient, admin_headers: dict[str, str], api: AsyncClient, mode: str
) -> None:
    await api.set_rating("cursor-p", mode, 30.0, 5.0)
    response = await client.get("/v1/players/cursor-p/matches?cursor=garbage!", headers=admin_headers)
    assert response.status_code == 422


async def test_admin_can_seed_a_rating(api: AsyncClient, mode: str) -> None:
    seeded = await api.set_rating("imported", mode, 31.5, 2.25)
    rating = next(r for r in seeded.ratings if r.mode == mode)
    assert (rating.rating.mu, rating.rating.sigma, rating.matches) == (31.5, 2.25, 0)
    assert rating.rating.conservative == pytest.approx(31.5 - 3 * 2.25)
    result = await api.post_match(
        {
            "match_id": f"{mode}-seeded",
            "mode": mode,
            "teams": [
                {"players": [{"id": "imported"}], "rank": 1},
                {"players": [{"id": "fresh"}], "rank": 2},
            ],
        }
    )
    assert result.players[0].before.mu == 31.5
    with pytest.raises(ApiError) as caught:
        await api.set_rating("imported", "no-such-mode", 1.0, 1.0)
    assert caught.value.status == 404


async def test_a_history_gives_ranks_as_posted_and_whole_ones_as_integers(
    api: AsyncClient, client: httpx.AsyncClient, admin_headers: dict[str, str], mode: str
) -> None:
    player = f"{mode}-ranked"
    for n, teams in enumerate(
        [
            [{"players": [{"id": f"{mode}-o1"}], "rank": 1}, {"players": [{"id": player}], "rank": 2}],
            [{"players": [{"id": player}], "rank": 1.5}, {"players": [{"id": f"{mode}-o2"}], "rank": 3}],
            [{"players": [{"id": player}], "score": 10}, {"players": [{"id": f"{mode}-o3"}], "score": 7}],
        ]
    ):
        await api.post_match({"match_id": f"{mode}-r{n}", "mode": mode, "teams": teams})
    answer = await client.get(f"/v1/players/{player}/matches", params={"mode": mode}, headers=admin_headers)
    ranks = [m["rank"] for m in answer.json()["matches"]]
    # Newest first; a score's rank is minus the score. 2 was written "2.0" before.
    assert ranks == [-10, 1.5, 2]
    assert [type(rank) for rank in ranks] == [int, float, int]
    assert '"rank":2,' in answer.text and '"rank":-10,' in answer.text


async def test_a_learning_curve_without_a_mode_is_the_only_one_s_or_a_422_naming_them(
    api: AsyncClient, mode: str
) -> None:
    player, other = f"{mode}-lc", f"{mode}-other"
    await api.put_mode(other)

    def match(n: int, in_mode: str) -> dict[str, object]:
        return {
            "match_id": f"{mode}-lc{n}",
            "mode": in_mode,
            "teams": [
                {"players": [{"id": player}], "rank": 1},
                {"players": [{"id": f"{mode}-x{n}"}], "rank": 2},
            ],
        }

    await api.post_match(match(1, mode))
    only = await api.get_learning_curve(player)
    assert (only.mode, len(only.online)) == (mode, 1)

    await api.post_match(match(2, other))
    with pytest.raises(ApiError) as caught:
        await api.get_learning_curve(player)
    assert caught.value.status == 422
    assert f"rated in 2 modes ({mode}, {other})" in caught.value.detail
    assert caught.value.errors[0]["loc"] == ["query", "mode"]
    named = await api.get_learning_curve(player, mode=other)
    assert (named.mode, len(named.online)) == (other, 1)

    with pytest.raises(ApiError) as unknown:
        await api.get_learning_curve(f"{mode}-never-played")
    assert unknown.value.status == 404
