"""/readyz names the dependency that does not answer (503), and /healthz stays up."""

from __future__ import annotations

import httpx
import pytest

from app.config import Settings
from app.main import create_app

UNREACHABLE_POSTGRES = "postgresql://postgres@127.0.0.1:1/nowhere"
UNREACHABLE_REDIS = "redis://127.0.0.1:1/0"


@pytest.mark.parametrize(
    ("broken", "named"),
    [({"database_url": UNREACHABLE_POSTGRES}, "postgres"), ({"redis_url": UNREACHABLE_REDIS}, "redis")],
)
async def test_readyz_names_the_failed_dependency(
    settings: Settings, broken: dict[str, str], named: str
) -> None:
    app = create_app(settings.model_copy(update=broken))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            ready = await client.get("/readyz")
            assert ready.status_code == 503
            assert ready.headers["content-type"] == "application/problem+json"
            assert ready.json()["detail"] == f"not ready: {named} unavailable"
            assert ready.headers["retry-after"]
            assert (await client.get("/healthz")).status_code == 200
