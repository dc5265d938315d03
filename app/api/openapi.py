"""Amendments to the generated OpenAPI document, where FastAPI's generator says other than
the service does. (The problem+json answers are declared by app.api.problems.document.)

- An optional query parameter is absent or a value, never null: a query string has no null,
  and `?wait=null` is a 422. FastAPI writes `X | None = None` as `anyOf: [X, null]`, which
  generated clients type as nullable; the document says the parameter's own schema.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI


def amend(app: FastAPI) -> None:
    """Amend the document `app.openapi` builds, in place (FastAPI caches it; amending it
    again changes nothing)."""
    built: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        schema = built()
        _query_parameters_not_null(schema)
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _query_parameters_not_null(schema: dict[str, Any]) -> None:
    for item in schema["paths"].values():
        for operation in item.values():
            for parameter in operation.get("parameters", []):
                if parameter["in"] != "query" or parameter.get("required"):
                    continue
                declared = parameter["schema"]
                variants = declared.get("anyOf", [])
                values = [v for v in variants if v != {"type": "null"}]
                if len(values) == 1 and len(variants) == 2:
                    kept = {k: v for k, v in declared.items() if k != "anyOf"}
                    parameter["schema"] = {**values[0], **kept}
