"""The one golden-section search every hyperparameter fit uses (app.rating.golden_section)."""

from __future__ import annotations

import math

import pytest

from app.rating.golden_section import RATIO, golden_section_max


def test_it_finds_a_concave_functions_peak_to_the_intervals_last_width() -> None:
    seen: list[float] = []

    def at(x: float) -> tuple[float, float]:
        seen.append(x)
        return x, -((x - 0.3) ** 2)

    x, _ = golden_section_max(at, -2.0, 2.0, 30, lambda trial: trial[1])
    assert abs(x - 0.3) <= 4.0 * RATIO**30
    assert len(seen) == 32  # two inner points, then one new point a step


def test_with_no_steps_it_is_the_better_of_the_two_inner_points() -> None:
    x = golden_section_max(lambda x: x, 0.0, 1.0, 0, lambda x: x)
    assert x == pytest.approx(RATIO)


def test_the_best_visited_point_is_returned_as_visited() -> None:
    # The peak is the first inner point itself: the answer is that trial, not a bracket's middle.
    def at(x: float) -> float:
        return x

    first_inner = 1.0 - RATIO
    assert golden_section_max(at, 0.0, 1.0, 5, lambda x: -abs(x - first_inner)) == pytest.approx(first_inner)


def test_negative_steps_are_refused() -> None:
    with pytest.raises(ValueError, match="steps must be at least 0"):
        golden_section_max(math.sin, 0.0, 1.0, -1, float)
