"""Attributes as one canonical string, and the group a string falls in."""

from __future__ import annotations

from app.matchmaking.pool import attribute_group, canonical_attributes


def test_canonical_attributes_are_compact_json_sorted_by_key() -> None:
    assert canonical_attributes({"region": "eu", "mode": {"b": 1, "a": [2, 3]}}) == (
        '{"mode":{"a":[2,3],"b":1},"region":"eu"}'
    )
    assert canonical_attributes({}) == "{}"


def test_equal_attributes_share_a_group_of_48_bits_and_others_do_not() -> None:
    one = canonical_attributes({"a": "x", "b": 1})
    assert attribute_group(one) == attribute_group(canonical_attributes({"b": 1, "a": "x"}))
    groups = {attribute_group(canonical_attributes({"region": f"r{i}"})) for i in range(200)}
    assert len(groups) == 200
    assert all(0 <= g < 2**48 for g in groups)
    assert max(groups) >= 2**40  # the whole 48 bits are used, not a short digest
    assert float(max(groups)) == max(groups)  # exact in a float64 column
