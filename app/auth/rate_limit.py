"""Per-key request rate limits: a token bucket per API key, in this process.

A key may burst `burst` requests, then `rate` a second. Each instance keeps its own
buckets (no Redis round trip per request, and the limit keeps working while Redis is
down), so with N instances behind a balancer a key gets up to N times the rate.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class TokenBuckets:
    rate: float  # tokens a second; 0 turns the limit off
    burst: float
    clock: Callable[[], float] = time.monotonic
    _buckets: dict[str, tuple[float, float]] = field(default_factory=dict)  # key -> (tokens, at)

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
