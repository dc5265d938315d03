"""The clients' one retry policy: which failed sends are sent again, and after how long.

- 429 and 503 answers are retried for every call: the service refused them before doing
  anything (rate limit) or rolled their transaction back (a database or Redis outage). The
  wait is the answer's Retry-After (seconds or an HTTP date); without one, the backoff.
- Connection errors (no connection, or the connection lost before an answer: ConnectError,
  ConnectTimeout, ReadError, WriteError, CloseError, RemoteProtocolError) are retried only
  for calls safe to repeat: GET, PUT, DELETE, a match post (its match_id makes a repeat
  answer 200 with the stored result), a void and the lobby computations. Never a ticket,
  a batch, matchmake, a job or a key: their first send may have taken effect.
- Read, write and pool timeouts are not retried: the caller's timeout is the caller's budget.
- Bounded twice: at most `attempts` sends per call, and at most `max_wait` seconds of
  waiting between them. A Retry-After that would pass `max_wait` is not waited for: the
  call fails at once with the 429 or 503 (as ApiError) rather than sleep and fail anyway.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import random
from dataclasses import dataclass

import httpx

RETRIED_STATUSES = frozenset({429, 503})
# Failures of the connection itself, before or while the answer came.
CONNECTION_ERRORS = (
    httpx.ConnectError,
    httpx.ConnectTimeout,
    httpx.ReadError,
    httpx.WriteError,
    httpx.CloseError,
    httpx.RemoteProtocolError,
)


def retry_after(response: httpx.Response, now: dt.datetime | None = None) -> float | None:
    """The answer's Retry-After in seconds (RFC 9110 §10.2.3), or None when absent or unreadable."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return max(0.0, (when - (now or dt.datetime.now(dt.UTC))).total_seconds())


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a client retries (see the module's docstring). `RetryPolicy(attempts=1)` never does."""

    attempts: int = 4
    max_wait: float = 30.0
    backoff: float = 0.25  # the first wait after a connection error; it doubles each time
    max_backoff: float = 4.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts: at least 1 (the first send)")
        if min(self.max_wait, self.backoff, self.max_backoff) < 0:
            raise ValueError("max_wait, backoff and max_backoff: at least 0")

    def start(self) -> Retries:
        return Retries(self)

    def backoff_after(self, sent: int) -> float:
        """Exponential, with jitter in its upper half so a fleet of clients cut off together
        does not come back together."""
        ceiling = min(self.max_backoff, self.backoff * 2.0 ** (sent - 1))
        return ceiling * random.uniform(0.5, 1.0)


class Retries:
    """One call's retry state: how many sends so far and how long it has waited."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.sent = 0
        self.waited = 0.0

    def wait_before_next(self, repeatable: bool, outcome: httpx.Response | Exception) -> float | None:
        """Seconds to wait before sending a call again after `outcome` (the answer or the
        error of send number `self.sent`), or None: stop, and return or raise the outcome.
        `repeatable`: the call is safe to send again after a connection error."""
        if isinstance(outcome, httpx.Response):
            if outcome.status_code not in RETRIED_STATUSES:
                return None
            wait = retry_after(outcome)
            if wait is None:
                wait = self.policy.backoff_after(self.sent)
        elif isinstance(outcome, CONNECTION_ERRORS) and repeatable:
            wait = self.policy.backoff_after(self.sent)
        else:
            return None
        if self.sent >= self.policy.attempts or self.waited + wait > self.policy.max_wait:
            return None
        self.waited += wait
        return wait
