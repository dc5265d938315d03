"""A typed Python client for game backends, on httpx, sync and async.

    from app.client import Client
    with Client("http://127.0.0.1:8000", api_key) as api:
        result = api.post_match({"match_id": "g-1", "teams": [...]})

Every operation of the API is a method of both `Client` and `AsyncClient` (app/client/
operations.py). Errors raise ApiError carrying the problem+json. Failed sends are retried
by one policy (app/client/retry.py): 429 and 503 after their Retry-After, connection errors
only for calls safe to repeat, at most 4 sends and 30 s of waiting per call by default
(`retry=RetryPolicy(...)` to change it).
"""

from app.client.calls import ApiError
from app.client.clients import AsyncClient, Client
from app.client.retry import RetryPolicy

__all__ = ["ApiError", "AsyncClient", "Client", "RetryPolicy"]
