"""Token buckets: per API key (request rate) and per client address (failed authentications).

A bucket holds up to `burst` tokens and refills at `rate` a second; a request spends one.
Each instance keeps its own buckets (no Redis round trip per request, and the limit keeps
working while Redis is down), so with N instances behind a balancer a key gets up to N
times the rate. At most `max_buckets` are kept: the least recently used goes first, and a
bucket that comes back starts full again, so the bound only ever errs towards letting a
request through.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from cachetools import LRUCache


@dataclass
class TokenBuckets:
    rate: float  # tokens a second; 0 turns the limit off
    burst: float
    clock: Callable[[], float] = time.monotonic
    max_buckets: int = 100_000
    _buckets: LRUCache[str, tuple[float, float]] = field(init=False)  # key -> (tokens, at)

    def __post_init__(self) -> None:
        self._buckets = LRUCache(maxsize=self.max_buckets)

    def take(self, key: str) -> float:
        """Spend one token of `key`: 0.0 if allowed, else the seconds until one is free."""
        if self.rate <= 0:
            return 0.0
        now = self.clock()
        tokens, at = self._buckets.get(key, (self.burst, now))
        tokens = min(self.burst, tokens + (now - at) * self.rate)
        if tokens >= 1.0:
            self._buckets[key] = (tokens - 1.0, now)
            return 0.0
        self._buckets[key] = (tokens, now)
        return (1.0 - tokens) / self.rate

    def __len__(self) -> int:
        return len(self._buckets)
