"""docs/client.md documents every public method of app.client's two clients, each under a
heading with the signature the code has, and the route and retry behaviour each one sends."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

from app.client import AsyncClient, Client
from app.client.calls import Operation
from app.client.operations import Operations

DOC = (Path(__file__).resolve().parents[1] / "docs" / "client.md").read_text()
# "### `signature`", then the paragraph under it.
HEADING = re.compile(r"^### `(?P<signature>.+)`\n\n(?P<text>(?:.+\n)+)", re.MULTILINE)
# A dotted module path before a name: app.matches.schemas.MatchOut, typing.Any, httpx.BaseTransport.
MODULES = re.compile(r"\b(?:[a-z_]\w*\.)+(?=[A-Za-z_])")


class Shown(str):
    """An annotation as the page writes it (a str that inspect prints without quotes)."""

    def __repr__(self) -> str:
        return str(self)


def shown(annotation: Any) -> Any:
    if annotation in (inspect.Parameter.empty, inspect.Signature.empty):
        return annotation
    if annotation is None:
        return Shown("None")
    text = annotation.__qualname__ if isinstance(annotation, type) else inspect.formatannotation(annotation)
    return Shown(MODULES.sub("", text))


def rendered(name: str, signature: inspect.Signature, returns: bool = True) -> str:
    parameters = [p.replace(annotation=shown(p.annotation)) for p in signature.parameters.values()]
    result = shown(signature.return_annotation) if returns else inspect.Signature.empty
    return f"{name}{signature.replace(parameters=parameters, return_annotation=result)}"


def public_methods(client: Client | AsyncClient) -> dict[str, Any]:
    found = {name: getattr(client, name) for name in dir(client) if not name.startswith("_")}
    return {name: value for name, value in found.items() if callable(value)}


def documented() -> dict[str, str]:
    """Heading signature -> the paragraph under it."""
    return {m["signature"]: m["text"] for m in HEADING.finditer(DOC)}


def expected() -> set[str]:
    sync, later = Client("http://127.0.0.1:9", "k"), AsyncClient("http://127.0.0.1:9", "k")
    signatures = {
        rendered(cls.__name__, inspect.signature(cls, eval_str=True), returns=False)
        for cls in (Client, AsyncClient)
    }
    for client in (sync, later):
        for name, method in public_methods(client).items():
            signature = inspect.signature(method, eval_str=True)
            signatures.add(rendered(name, signature))
    return signatures


def test_every_public_method_of_both_clients_is_documented_with_its_signature() -> None:
    headings = documented()
    assert "post_match(match: MatchIn | dict[str, Any]) -> MatchOut" in headings
    missing = sorted(expected() - set(headings))
    assert missing == [], "methods docs/client.md lacks, or documents with another signature"
    assert sorted(set(headings) - expected()) == [], "docs/client.md documents methods the clients lack"


def test_the_async_client_has_the_same_operations_as_coroutine_functions() -> None:
    sync, later = Client("http://127.0.0.1:9", "k"), AsyncClient("http://127.0.0.1:9", "k")
    operations = [name for name, value in vars(Operations).items() if isinstance(value, Operation)]
    assert len(operations) > 30
    for name in operations:
        assert inspect.signature(getattr(sync, name)) == inspect.signature(getattr(later, name)), name
        assert inspect.iscoroutinefunction(getattr(later, name)), name
        assert not inspect.iscoroutinefunction(getattr(sync, name)), name


def test_each_operation_s_paragraph_names_its_route_and_whether_it_is_retried() -> None:
    sync = Client("http://127.0.0.1:9", "k")
    headings = documented()
    for name, operation in vars(Operations).items():
        if not isinstance(operation, Operation):
            continue
        text = headings[rendered(name, inspect.signature(getattr(sync, name), eval_str=True))]
        assert text.startswith(f"`{operation.method} {operation.route}` · "), name
        assert ("· not retried." in text) is (not operation.repeatable), name
        assert ("· retried." in text) is operation.repeatable, name


def test_the_check_sees_a_changed_return_type() -> None:
    # What the check compares: the code's signature, so an annotation that changes fails it.
    text = rendered("get_match", inspect.signature(Client("http://127.0.0.1:9", "k").get_match))
    assert text == "get_match(match_id: str) -> MatchOut"
    assert text.replace("MatchOut", "Request") not in documented()
