"""The service's own Prometheus metrics (request latency lives with the middleware).

Counters of rating writes move only when their transaction commits (`after_commit`), so a
rolled-back request never counts. Counters are per process: what the command line does
(import, replay, smooth) runs in its own process and reaches no /metrics (docs/metrics.md).
Queue gauges are read from Redis when /metrics is scraped: the queue is shared by every
instance, so any instance reports the same depth.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from prometheus_client import Counter, Gauge, Histogram

MATCHES_RATED = Counter(
    "skill_matches_rated_total", "Matches rated by POST /v1/matches and /v1/matches/batch", ["mode"]
)
# What writes ratings, the `source` of RATINGS_WRITTEN: a posted match, a replay job, an
# admin's override (PUT /v1/players/{id}/ratings/{mode}), a season switch's reset.
RATING_SOURCES = ("match", "replay", "admin", "season")
RATINGS_WRITTEN = Counter(
    "skill_ratings_written_total",
    f"Player ratings written, by what wrote them (source: {', '.join(RATING_SOURCES)})",
    ["mode", "source"],
)
QUEUE_TICKETS = Gauge("skill_queue_tickets", "Tickets waiting in the queue", ["mode"])
QUEUE_OLDEST_WAIT = Gauge(
    "skill_queue_oldest_wait_seconds", "How long the oldest waiting ticket has waited", ["mode"]
)
QUEUE_WAIT = Histogram(
    "skill_queue_wait_seconds",
    "How long each matched ticket waited in the queue",
    ["mode"],
    buckets=(0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800),
)
QUALITY_BUCKETS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)
MATCH_QUALITY = Histogram(
    "skill_formed_match_quality",
    "Draw-probability quality (seed 000 eq. 7) of the matches the queue formed, backfills' fills included",
    ["mode"],
    buckets=QUALITY_BUCKETS,
)
QUEUE_BACKFILLS = Gauge("skill_queue_backfills", "Live backfills of the queue, open slots or not", ["mode"])
QUEUE_BACKFILL_OPEN_SLOTS = Gauge(
    "skill_queue_backfill_open_slots",
    "Open slots of the live backfills (a fill waiting on its ready check holds its slots)",
    ["mode"],
)
BACKFILL_FILLS = Counter("skill_backfill_fills_total", "Backfills' fills the queue claimed", ["mode"])
BACKFILL_FILL_QUALITY = Histogram(
    "skill_backfill_fill_quality",
    "Draw-probability quality (seed 000 eq. 7) of each claimed fill's completed match",
    ["mode"],
    buckets=QUALITY_BUCKETS,
)


def observe_all(histogram: Histogram, values: Sequence[float] | npt.NDArray[np.float64]) -> None:
    """histogram.observe(v) for every v, binned at once: observing a thousand waits one by one
    takes a lock and a bucket walk each. Uses the child's bucket counters (prometheus_client's
    own layout); without them it falls back to observing one by one."""
    buckets = getattr(histogram, "_buckets", None)
    bounds = getattr(histogram, "_upper_bounds", None)
    total = getattr(histogram, "_sum", None)
    if buckets is None or bounds is None or total is None:
        for value in values:
            histogram.observe(value)
        return
    if not len(values):
        return
    # observe() counts a value in the first bucket whose bound is >= it.
    counts = np.bincount(np.searchsorted(bounds, values, side="left"), minlength=len(bounds))
    for bucket, count in zip(buckets, counts.tolist(), strict=False):
        if count:
            bucket.inc(count)
    total.inc(float(np.sum(values)))
