"""app/api/match_posts.py answers POST /v1/matches before FastAPI's request handling, on parts of
FastAPI that are not a published API: FastAPI is pinned exactly, and these tests fail when the
installed version or those parts change, so an upgrade is a deliberate edit of both."""

from __future__ import annotations

import inspect

import fastapi
from fastapi.dependencies.utils import request_body_to_args
from fastapi.routing import APIRoute

from app.api.matches import router
from tests.pins import pinned


def test_the_installed_fastapi_is_the_pinned_one() -> None:
    assert fastapi.__version__ == pinned("fastapi")


def test_the_parts_the_match_route_uses_have_the_shape_it_expects() -> None:
    assert list(inspect.signature(request_body_to_args).parameters) == [
        "body_fields",
        "received_body",
        "embed_body_fields",
    ]
    assert inspect.iscoroutinefunction(request_body_to_args)
    post = next(r for r in router.routes if isinstance(r, APIRoute) and r.path == "/v1/matches")
    # The fast path validates with the route's own body field and passes it first.
    assert post.body_field is not None
    assert post.body_field.name == next(iter(inspect.signature(post.endpoint).parameters))
