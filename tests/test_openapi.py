"""openapi/openapi.json is the app's schema, exported by `make openapi`."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi import FastAPI

DOCUMENT = Path(__file__).resolve().parents[1] / "openapi" / "openapi.json"


def test_exported_document_matches_the_app(app: FastAPI) -> None:
    exported = json.loads(DOCUMENT.read_text())
    assert exported == json.loads(json.dumps(app.openapi())), (
        "run `make openapi` to refresh openapi/openapi.json"
    )


def test_operation_ids_are_unique_and_stable(app: FastAPI) -> None:
    ids = [op["operationId"] for item in app.openapi()["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids))
    assert all("__" not in op_id for op_id in ids), "generated ids mean an operation_id is missing"
