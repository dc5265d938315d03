"""openapi/openapi.json is the app's schema, exported by `make openapi`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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


# What generated clients (tests/test_typescript_client.py) need from the document, each rule a
# stumble openapi-typescript met: the types they make are then exact, with no hand edits.
PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}


def document() -> dict[str, Any]:
    return json.loads(DOCUMENT.read_text())  # the app's, by the test above


def operations(doc: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method, operation in item.items():
            yield f"{method.upper()} {path}", operation


def referenced(node: Any, schemas: dict[str, Any], found: set[str]) -> set[str]:
    """The component schemas `node` refers to, directly or through other components."""
    if isinstance(node, dict):
        ref = node.get("$ref", "")
        if ref.startswith("#/components/schemas/") and (name := ref.rpartition("/")[2]) not in found:
            found.add(name)
            referenced(schemas[name], schemas, found)
        for value in node.values():
            referenced(value, schemas, found)
    elif isinstance(node, list):
        for value in node:
            referenced(value, schemas, found)
    return found


def test_every_field_of_an_answer_is_required_but_a_problem_s_errors() -> None:
    # A field the service always sends, declared optional, is `field?: T` in TypeScript.
    doc = document()
    schemas = doc["components"]["schemas"]
    answered = referenced([op["responses"] for _, op in operations(doc)], schemas, set())
    assert {"MatchOut", "ProposalOut", "Problem", "BatchItemOut"} <= answered
    optional = {
        (name, field)
        for name in answered
        for field in schemas[name].get("properties", {})
        if field not in schemas[name].get("required", [])
    }
    assert optional == {("Problem", "errors"), ("FieldError", "type")}


def test_no_schema_is_copied_inline() -> None:
    # An inline copy of a component (BatchIn's items were MatchIn's) is an anonymous type.
    doc = document()
    names = set(doc["components"]["schemas"])

    def copies(node: Any, at: str) -> Iterator[str]:
        if isinstance(node, dict):
            if node.get("type") == "object" and node.get("title") in names and not at.endswith(node["title"]):
                yield f"{at}: a copy of {node['title']}"
            for key, value in node.items():
                yield from copies(value, f"{at}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                yield from copies(value, f"{at}/{index}")

    assert list(copies(doc, "#")) == []
    batch = doc["components"]["schemas"]["BatchItemOut"]["properties"]["problem"]
    assert batch["anyOf"][0] == PROBLEM_REF


def test_optional_query_parameters_are_not_nullable() -> None:
    # A query string has no null (`?wait=null` is a 422); absent is how a client leaves it out.
    for name, operation in operations(document()):
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "query":
                assert "anyOf" not in parameter["schema"], (name, parameter["name"])
                assert parameter["schema"].get("type") != "null", (name, parameter["name"])


def test_every_answer_has_a_schema_and_every_error_is_a_problem() -> None:
    for name, operation in operations(document()):
        for status, response in operation["responses"].items():
            if status == "204":
                assert "content" not in response, name
                continue
            ((media, content),) = response["content"].items()
            assert content.get("schema"), f"{name} {status}: no schema"
            if status[0] in "45":
                assert (media, content["schema"]) == ("application/problem+json", PROBLEM_REF), name
            if status in ("429", "503"):
                assert response["headers"]["Retry-After"]["schema"]["type"] == "integer", name
