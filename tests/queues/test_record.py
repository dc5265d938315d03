"""The pool record's codec (app/queues/record.py) and the Lua that reads it agree, field by field."""

from __future__ import annotations

import json

import numpy as np
from redis.asyncio import Redis

from app.queues import record
from app.queues.record import HEADER_DOUBLES, HeaderField
from app.queues.scripts import _KEPT, _PARSE


def _record(players: list[str], regions: dict[str, float]) -> bytes:
    header = np.arange(1.0, HEADER_DOUBLES + 1.0)
    header[HeaderField.PLAYERS] = len(players)
    header[HeaderField.REGIONS] = len(regions)
    header[HeaderField.EXPIRES_AT] = 1234.5
    ratings = np.array([[25.0 + i, 8.0] for i in range(len(players))], dtype="<f8").tobytes()
    return record.encode(
        header.astype("<f8").tobytes(), ratings, list(regions.values()), '{"a":1}', list(regions), players
    )


def test_the_python_side_reads_back_what_it_wrote() -> None:
    value = _record(["p1", "p2"], {"eu": 12.5, "us": 80.0})
    headers = record.headers_of([value, value])
    assert headers.shape == (2, HEADER_DOUBLES)
    assert headers[1, HeaderField.EXPIRES_AT] == record.field_of(value, HeaderField.EXPIRES_AT) == 1234.5
    start, end = record.latency_span(value, 2, 2)
    assert np.frombuffer(value[start:end], dtype="<f8").tolist() == [12.5, 80.0]
    assert record.tail(value, 2) == [b'{"a":1}', b"eu\tus", b'["p1","p2"]']


async def test_the_lua_reads_the_fields_the_codec_names(redis_url: str) -> None:
    redis = Redis.from_url(redis_url)
    try:
        for players, regions in [(["solo"], {}), (["a", "b", "c"], {"eu": 1.0, "asia": 250.0})]:
            value = _record(players, regions)
            kept = record.kept("f" * 32, value, b"1234.5") + record.kept("e" * 32, value, b"99.25")
            script = (
                _PARSE
                + _KEPT
                + """
local expires, names = parse(ARGV[1])
local tickets = unkeep(ARGV[2])
return {tostring(expires), cjson.encode(names), tickets[1][1], tickets[2][2] == ARGV[1] and 1 or 0,
        tickets[2][3]}
"""
            )
            expires, names, first, same, text = await redis.eval(script, 0, value, kept)  # type: ignore[misc]
            assert float(expires) == 1234.5
            assert json.loads(names) == players
            assert (first, same, text) == (b"f" * 32, 1, b"99.25")
    finally:
        await redis.aclose()
