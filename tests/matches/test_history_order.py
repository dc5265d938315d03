"""GET /v1/players/{id}/matches lists a player's matches in the reverse of the order their
ratings were applied, not by played_at nor by row key."""

from __future__ import annotations

import datetime as dt

from app.client import AsyncClient


async def test_history_follows_the_order_of_application(api: AsyncClient, mode: str) -> None:
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)
    played = [now - dt.timedelta(hours=1), now - dt.timedelta(days=3), now - dt.timedelta(hours=2)]
    ids = [f"{mode}-h{n}" for n in range(3)]
    for match_id, at, opponent in zip(ids, played, ["o1", "o2", "o3"], strict=True):
        await api.post_match(
            {
                "match_id": match_id,
                "mode": mode,
                "played_at": at.isoformat(),
                "teams": [
                    {"players": [{"id": f"{mode}-me"}], "rank": 1},
                    {"players": [{"id": opponent}], "rank": 2},
                ],
            }
        )
    listed = []
    cursor = None
    while True:
        page = await api.player_matches(f"{mode}-me", mode=mode, limit=1, cursor=cursor)
        listed += page.matches
        cursor = page.next_cursor
        if cursor is None:
            break
    assert [m.match_id for m in listed] == list(reversed(ids))  # not by played_at
    assert [m.before for m in listed[:-1]] == [m.after for m in listed[1:]]
