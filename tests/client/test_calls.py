"""What a call sends: a body JSON cannot carry is refused before anything goes out."""

from __future__ import annotations

import math

import pytest

from app.client import AsyncClient, Client
from app.client.calls import json_content
from tests.client.recording import RecordingAsyncTransport, RecordingTransport

# Nothing listens here: a call that sent anything would record its ConnectError.
NOWHERE = "http://127.0.0.1:9"


def match_with(weight: float) -> dict[str, object]:
    return {
        "match_id": "nan-1",
        "teams": [
            {"players": [{"id": "a"}], "rank": 1},
            {"players": [{"id": "b"}, {"id": "c", "weight": weight}], "rank": 2},
        ],
    }


def test_a_nan_raises_value_error_naming_where_and_sends_nothing() -> None:
    transport = RecordingTransport()
    expected = "body.teams.1.players.1.weight is nan: JSON carries finite numbers only"
    with Client(NOWHERE, "k", transport=transport) as api, pytest.raises(ValueError, match=expected):
        api.post_match(match_with(math.nan))
    assert transport.sent == []


async def test_the_async_client_raises_it_where_the_call_is_awaited() -> None:
    transport = RecordingAsyncTransport()
    async with AsyncClient(NOWHERE, "k", transport=transport) as api:
        pending = api.evaluate_lobby({"teams": [["a"], ["b"]], "x": [1.0, -math.inf]})
        with pytest.raises(ValueError, match=r"^body\.x\.1 is -inf: "):
            await pending
    assert transport.sent == []


def test_finite_bodies_are_compact_utf8_json() -> None:
    assert json_content({"id": "é", "w": [0.5, 1]}) == '{"id":"é","w":[0.5,1]}'.encode()
    with pytest.raises(TypeError):  # no JSON at all: not this check's to name
        json_content({"when": object()})
