"""JSON logs carry the request id and never an API key."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from app import logs
from tests.conftest import ADMIN_KEY


@pytest.fixture
def json_logs() -> object:
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    logs.configure("json", "INFO")
    yield
    root.handlers[:], root.level = saved


async def test_access_log_is_json_with_request_id_and_no_key(
    json_logs: object, client: httpx.AsyncClient, capsys: pytest.CaptureFixture[str]
) -> None:
    logs.configure("json", "INFO")  # bind the handler to the captured stderr
    await client.get("/v1/keys", headers={"Authorization": f"Bearer {ADMIN_KEY}", "X-Request-ID": "trace-1"})
    await client.get("/v1/keys", headers={"Authorization": "Bearer ssk_0011223344556677_wrongsecret"})
    err = capsys.readouterr().err
    entries = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    access = [e for e in entries if e["logger"] == "app.access"]
    assert any(
        e["request_id"] == "trace-1" and e["path"] == "/v1/keys" and e["status"] == 200 for e in access
    )
    assert ADMIN_KEY not in err
    assert "wrongsecret" not in err
