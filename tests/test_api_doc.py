"""docs/api.md describes exactly the operations of openapi/openapi.json (its own heading
convention is stated at its top: one "### `METHOD /path`" heading per operation)."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
METHODS = ("GET", "PUT", "POST", "DELETE", "PATCH", "HEAD", "OPTIONS")
HEADING = re.compile(r"^### `(?P<method>[A-Z]+) (?P<path>/\S*)`$", re.MULTILINE)
# A method then a path anywhere in the text (headings, prose, code): what the page names.
NAMED = re.compile(rf"\b(?P<method>{'|'.join(METHODS)}) (?P<path>/[A-Za-z0-9_{{}}/.:-]*)")


def documented_operations(text: str) -> tuple[Counter[tuple[str, str]], set[tuple[str, str]]]:
    """(operations with a heading, counted; every method-and-path the text names)."""
    headed = Counter((m["method"], m["path"]) for m in HEADING.finditer(text))
    named = {(m["method"], m["path"].rstrip(".:")) for m in NAMED.finditer(text)}
    return headed, named


def openapi_operations() -> set[tuple[str, str]]:
    document = json.loads((ROOT / "openapi" / "openapi.json").read_text())
    return {
        (method.upper(), path)
        for path, item in document["paths"].items()
        for method in item
        if method.upper() in METHODS
    }


def test_every_operation_has_one_heading_and_the_page_names_no_other() -> None:
    operations = openapi_operations()
    assert len(operations) > 20, "the OpenAPI document lists the service's operations"
    headed, named = documented_operations((ROOT / "docs" / "api.md").read_text())
    assert sorted(operations - set(headed)) == [], "operations without a heading in docs/api.md"
    assert sorted(named - operations) == [], "docs/api.md names operations the service does not have"
    assert [op for op, n in headed.items() if n > 1] == [], "one heading per operation"


def test_the_check_sees_a_missing_and_an_invented_operation() -> None:
    text = (ROOT / "docs" / "api.md").read_text()
    without = text.replace("### `GET /v1/jobs/{job_id}`\n", "### Jobs\n")
    headed, _ = documented_operations(without)
    assert ("GET", "/v1/jobs/{job_id}") not in headed
    _, named = documented_operations(text + "\nAlso `PATCH /v1/players/{player_id}`.\n")
    assert ("PATCH", "/v1/players/{player_id}") in named - openapi_operations()
