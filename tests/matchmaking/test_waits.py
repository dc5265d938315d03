"""Waits and qualities as histograms (app/matchmaking/waits.py): percentiles read from bins
stay within a bin's width of the exact ones, and an estimate never falls below the wait so far."""

from __future__ import annotations

import numpy as np
import pytest

from app.matchmaking import waits


def counts(bins: np.ndarray) -> dict[int, int]:
    found, number = np.unique(bins, return_counts=True)
    return {int(b): int(n) for b, n in zip(found, number, strict=True)}


def test_wait_bins_are_ten_percent_wide_and_cover_every_wait() -> None:
    seconds = np.array([0.0, 0.05, 0.1, 0.105, 0.111, 1.0, 60.0, 1e9])
    bins = waits.wait_bins(seconds)
    assert bins.tolist() == sorted(bins.tolist())
    assert bins[0] == bins[1] == 0 and bins[2] == bins[3] == 1 and bins[4] == 2
    assert bins[-1] == waits.WAIT_BINS - 1
    for second, bin_ in zip(seconds[:-1], bins[:-1].tolist(), strict=True):
        low, high = waits.wait_edges(bin_)
        assert low <= second < high


@pytest.mark.parametrize("share", [0.5, 0.9, 0.99])
def test_wait_percentiles_are_within_a_bin_of_the_exact_ones(share: float) -> None:
    rng = np.random.default_rng(7)
    sample = rng.lognormal(3.0, 1.0, 50_000)
    found = waits.percentile(counts(waits.wait_bins(sample)), share, wait=True)
    exact = float(np.quantile(sample, share))
    assert found is not None and abs(found - exact) / exact < 0.05


def test_quality_percentiles_and_an_empty_window() -> None:
    rng = np.random.default_rng(8)
    sample = rng.beta(5, 3, 10_000)
    for share in (0.1, 0.5, 0.9):
        found = waits.percentile(counts(waits.quality_bins(sample)), share, wait=False)
        assert found is not None and abs(found - float(np.quantile(sample, share))) <= 1 / waits.QUALITY_BINS
    assert waits.percentile({}, 0.5, wait=True) is None


def test_the_estimate_is_the_median_of_the_waits_beyond_the_wait_so_far() -> None:
    rng = np.random.default_rng(9)
    sample = rng.exponential(30.0, 50_000)
    binned = counts(waits.wait_bins(sample))
    for waited in (0.0, 10.0, 45.0):
        found = waits.median_beyond(binned, waited)
        exact = float(np.median(sample[sample >= waited]))
        assert found is not None and found >= waited and abs(found - exact) / exact < 0.05
    assert waits.median_beyond(binned, 1e6) is None


def test_skill_bands_step_by_beta_over_the_players_mean() -> None:
    bands = waits.skill_bands(np.array([25.0, 50.0, -3.0]), np.array([1, 2, 1]), 4.0)
    assert bands.tolist() == [6, 6, -1]
    assert waits.uncertainty_bands(np.array([1.0, 8.0, 100.0]), np.array([1, 2, 1]), 4.0).tolist() == [
        0,
        1,
        5,
    ]
    assert waits.fallbacks(6, 1, None) == ("6.1|-", "6.1|*", "*.1|*", "*")
    # A ticket's class counts in every wider class its estimate may fall back to.
    assert waits.wider("6.1|eu") == waits.fallbacks(6, 1, "eu")[1:]


def test_calls_waited_counts_the_calls_before_the_one_that_matched() -> None:
    # Calls every 2 s: a ticket that had waited up to 2 s when a call read the pool was
    # queued since the call before; one that had waited 2 to 4 s sat through one.
    waited = np.array([0.0, 0.3, 2.0, 2.1, 5.9, 1e6])
    assert waits.calls_waited(waited, 2.0).tolist() == [0, 0, 0, 1, 2, waits.CALLS_CAP]
    assert waits.calls_waited(waited, 0.0).tolist() == [0] * 6  # no rhythm yet


def test_median_calls_is_the_lower_median_of_those_at_least_as_long() -> None:
    counts = {0: 5, 1: 5, 4: 3}
    assert waits.median_calls(counts, 0) == 1  # 13 counted: the 7th is a 1
    assert waits.median_calls({0: 5, 1: 5}, 0) == 0  # a tie goes to the shorter wait
    assert waits.median_calls(counts, 1) == 1  # 8 counted: the 4th (lower of 4th and 5th)
    assert waits.median_calls(counts, 2) == 4
    assert waits.median_calls(counts, 5) is None


def test_expected_wait_adds_an_interval_per_further_call() -> None:
    assert waits.expected_wait(0.2, 0.5, 2.0, 0, 0) == pytest.approx(0.7)
    assert waits.expected_wait(0.2, 0.5, 2.0, 0, 3) == pytest.approx(6.7)
    assert waits.expected_wait(4.0, 0.5, 2.0, 2, 3) == pytest.approx(6.5)
    assert waits.expected_wait(4.0, 0.5, 2.0, 3, 1) == pytest.approx(4.5)  # never before the next call
