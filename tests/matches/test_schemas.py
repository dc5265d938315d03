"""The batch writes its matches as plain data (schemas.wire_json): the bytes must be those of
match_json, the one wire form, for every float and instant a response can hold."""

from __future__ import annotations

import datetime as dt
from typing import Any

from app.matches.schemas import BatchOut, MatchOut, batch_json, match_json, wire_json

# Floats whose shortest forms differ between writers (exponents, signs, many digits).
AWKWARD = [25.0, -0.0, 1e-7, 3.2e-05, 1e16, 1.5e300, 5e-324, 0.1 + 0.2, -123456.789012345, 8.333333333333334]


def tree(index: int, played_at: dt.datetime) -> dict[str, Any]:
    values = AWKWARD[index:] + AWKWARD[:index]
    return {
        "match_id": f"m{index}",
        "mode": "default",
        "played_at": played_at,
        "created": True,
        "quality": values[0],
        "void": False,
        "players": [
            {
                "player_id": f"p{team}",
                "team": team,
                "before": {"mu": values[1], "sigma": values[2], "conservative": values[3]},
                "after": {"mu": values[4], "sigma": values[5], "conservative": values[6]},
                "provisional": index % 2 == 0,
                "placement": {"played": index, "of": 10} if index % 3 else None,
                "tier": {
                    "before": None if team else "silver",
                    "after": "gold",
                    "promoted": not team,
                    "demoted": False,
                }
                if index % 2
                else None,
            }
            for team in range(2)
        ],
    }


INSTANTS = [
    dt.datetime(2026, 11, 24, 9, 0, tzinfo=dt.UTC),
    dt.datetime(2026, 11, 24, 9, 0, 0, 123456, tzinfo=dt.UTC),
    dt.datetime(2026, 11, 24, 11, 30, 5, tzinfo=dt.timezone(dt.timedelta(hours=2, minutes=30))),
    dt.datetime(1999, 1, 1, 0, 0, 0, 1, tzinfo=dt.timezone(-dt.timedelta(hours=8))),
]


def test_a_match_as_plain_data_has_the_bytes_of_match_json() -> None:
    for index in range(len(AWKWARD)):
        for played_at in INSTANTS:
            data = tree(index, played_at)
            assert wire_json(data) == match_json(MatchOut.model_validate(data))


def test_a_batch_answer_as_plain_data_has_the_bytes_of_the_model() -> None:
    stored = MatchOut.model_validate({**tree(3, INSTANTS[2]), "created": False})
    results: list[dict[str, Any]] = [
        {"match_id": "m1", "status": 201, "match": tree(1, INSTANTS[1]), "problem": None},
        {"match_id": "m3", "status": 200, "match": stored, "problem": None},
        {
            "match_id": None,
            "status": 422,
            "match": None,
            "problem": {"type": "about:blank", "title": "Unprocessable Content", "status": 422,
                        "detail": "teams: Field required", "instance": "/v1/matches/batch",
                        "errors": [{"loc": ["body", "teams"], "msg": "Field required", "type": "missing"}]},
        },
    ]  # fmt: skip
    model = BatchOut.model_validate({"results": results})
    assert batch_json(results) == BatchOut.__pydantic_serializer__.to_json(model)
