"""Waits and qualities as histograms: queue statistics and wait estimates from counts per bin.

A queue keeps what its recent matches were like as counts per bin (per quarter minute, in
Redis), never as samples: any number of matches costs a bounded number of counters, and a
percentile over a window is a sum of counts. Waits are binned on a log scale (bins 10% wide:
a wait's relative error, not its absolute one, is what a player notices), qualities on a
linear one.

A ticket's wait estimate reads the waits of recent tickets like it: the same skill band (its
players' mean mu in steps of the mode's β, the scale on which TrueSkill's draw quality falls
off: seed 000 §2, eq. 4), uncertainty band and region. How long a ticket waits depends on how
many others of near skill are around, and at the edges of the skill distribution fewer are, so
the bands carry most of what the whole queue's average would blur; the uncertainty band most
of all, as a ticket of uncertain skill waits for the quality threshold to relax. Under a
matchmaking loop a wait is counted in calls (calls_waited): the ticket's phase in the loop is
its own, the calls it sits through are its class's (median_calls, expected_wait). Without a
loop's rhythm, the estimate is the median of the class's waits among the ones at least as long
as the ticket's own so far (conditioning on having waited that long, so an estimate never
falls below the time already spent).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# Waits below this share bin 0; above, bins are WAIT_RATIO wide, up to WAIT_BINS - 1.
WAIT_FLOOR_S = 0.1
WAIT_RATIO = 1.1
WAIT_BINS = 130  # 0.1 s · 1.1^128 ≈ 20,000 s: past any ticket's lifetime
QUALITY_BINS = 200  # 0.005 wide


def wait_bins(seconds: FloatArray) -> IntArray:
    """The bin of each wait."""
    scaled = np.log(np.maximum(seconds, WAIT_FLOOR_S) / WAIT_FLOOR_S) / math.log(WAIT_RATIO)
    bins: IntArray = np.minimum(np.floor(scaled).astype(np.int64) + (seconds >= WAIT_FLOOR_S), WAIT_BINS - 1)
    return bins


def wait_edges(bin_: int) -> tuple[float, float]:
    """The waits a bin holds, [low, high)."""
    if bin_ == 0:
        return 0.0, WAIT_FLOOR_S
    return WAIT_FLOOR_S * WAIT_RATIO ** (bin_ - 1), WAIT_FLOOR_S * WAIT_RATIO**bin_


def quality_bins(quality: FloatArray) -> IntArray:
    bins: IntArray = np.clip(np.floor(quality * QUALITY_BINS).astype(np.int64), 0, QUALITY_BINS - 1)
    return bins


def quality_edges(bin_: int) -> tuple[float, float]:
    return bin_ / QUALITY_BINS, (bin_ + 1) / QUALITY_BINS


def percentile(counts: Mapping[int, int], share: float, wait: bool) -> float | None:
    """The value below which `share` of the counted values lie, interpolated within its bin
    (geometrically for waits, linearly for qualities); None when nothing was counted."""
    total = sum(counts.values())
    if total <= 0:
        return None
    target = share * total
    seen = 0.0
    for bin_ in sorted(counts):
        count = counts[bin_]
        if count <= 0:
            continue
        if seen + count >= target:
            return _within(bin_, (target - seen) / count, wait)
        seen += count
    return _within(max(counts), 1.0, wait)


def _within(bin_: int, fraction: float, wait: bool) -> float:
    low, high = wait_edges(bin_) if wait else quality_edges(bin_)
    return _between(low, high, fraction) if wait else low + (high - low) * fraction


def _between(low: float, high: float, fraction: float) -> float:
    """A fraction of the way from low to high on a wait bin's log scale (linear from 0)."""
    if low <= 0:
        return high * fraction
    return float(low * (high / low) ** fraction)


def median_beyond(counts: Mapping[int, int], waited: float) -> float | None:
    """The median of the counted waits that are at least `waited` (of the bin holding
    `waited`, the share above it, as if its waits were spread evenly); None when none are."""
    start = int(wait_bins(np.array([waited]))[0])
    low, high = wait_edges(start)
    cut = max(waited, low)
    kept: dict[int, float] = {}
    for bin_, count in counts.items():
        if bin_ > start:
            kept[bin_] = count
        elif bin_ == start:
            kept[bin_] = count * (high - cut) / (high - low)
    total = sum(kept.values())
    seen = 0.0
    for bin_ in sorted(kept):
        share = kept[bin_]
        if share > 0 and seen + share >= total / 2:
            fraction = (total / 2 - seen) / share
            bottom, top = wait_edges(bin_)
            return _between(cut if bin_ == start else bottom, top, fraction)
        seen += share
    return None


def skill_bands(mu_sum: FloatArray, size: IntArray, beta: float) -> IntArray:
    """Each ticket's skill band: its players' mean mu in steps of β."""
    bands: IntArray = np.floor(mu_sum / np.maximum(size, 1) / beta).astype(np.int64)
    return bands


def uncertainty_bands(var_sum: FloatArray, size: IntArray, beta: float) -> IntArray:
    """Each ticket's uncertainty band: its players' root mean sigma² in steps of β/2. A
    ticket of uncertain skill draws a lower quality with anyone (seed 000 eq. 4: each σ² adds
    to the 2β² under the square root), so it waits for the threshold to relax, however many
    players of its mean skill are around."""
    bands: IntArray = np.floor(np.sqrt(var_sum / np.maximum(size, 1)) / (beta / 2)).astype(np.int64)
    return bands


def ticket_class(band: int, uncertainty: int, region: str | None) -> str:
    """The name of the class of tickets a wait estimate pools: a skill band, an uncertainty
    band and a region."""
    return f"{band}.{uncertainty}|{region or '-'}"


def fallbacks(band: int, uncertainty: int, region: str | None) -> Sequence[str]:
    """The classes an estimate tries, narrowest first: the bands in its region, the bands in
    any region, its uncertainty band at any skill, the whole queue."""
    return (ticket_class(band, uncertainty, region), f"{band}.{uncertainty}|*", f"*.{uncertainty}|*", "*")


def wider(name: str) -> Sequence[str]:
    """The classes a ticket of class `name` counts in besides its own, as `fallbacks` tries them."""
    band, _, _ = name.partition("|")
    uncertainty = band.partition(".")[2]
    return (f"{band}|*", f"*.{uncertainty}|*", "*")


# A ticket's wait, in matchmaking calls: the calls that read the pool while it waited and left
# it there, before the one that matched it. A matchmaking loop calls at a rhythm, so a wait is
# the time to the first call after the ticket was queued (its phase in the loop, which the
# loop's rhythm says for a ticket just queued) plus whole intervals; the calls are what the
# ticket's class says, the phase is what its own enqueue time says. Counted in calls, the
# waits of a class do not mix the phases of its tickets into their spread.
CALLS_CAP = 255


def calls_waited(waited: FloatArray, interval: float) -> IntArray:
    """The calls each matched ticket sat through, from its wait when the call that matched it
    read the pool and the calls' mean interval: ceil(waited / interval) - 1 (0 when the
    interval is not known yet)."""
    if interval <= 0:
        return np.zeros(len(waited), dtype=np.int64)
    calls: IntArray = np.clip(np.ceil(waited / interval).astype(np.int64) - 1, 0, CALLS_CAP)
    return calls


def median_calls(counts: Mapping[int, int], beyond: int) -> int | None:
    """The lower median of the counted calls that are at least `beyond` (a ticket that sat
    through that many already); None when none are. The lower one: a wait one call too short
    is a smaller relative error than one call too long."""
    kept = sorted((calls, count) for calls, count in counts.items() if calls >= beyond and count > 0)
    total = sum(count for _, count in kept)
    seen = 0
    for calls, count in kept:
        seen += count
        if 2 * seen >= total:
            return calls
    return None


def expected_wait(waited: float, to_next_call: float, interval: float, sat_through: int, calls: int) -> float:
    """A queued ticket's expected wait in all: its wait so far, to the next call's answer,
    then a whole interval per further call it is expected to sit through."""
    return waited + to_next_call + interval * max(0, calls - sat_through)
