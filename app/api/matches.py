"""Match results: game backends post them (results:write), ops read and void them."""

from __future__ import annotations

import email.message
import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, Request, Response, status
from fastapi.dependencies.utils import request_body_to_args
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import ValidationError
from pydantic_core import PydanticUndefined as Undefined
from starlette.requests import ClientDisconnect

from app.api.deps import AdminKey, ReadKey, Resources, ResourcesDep, ResultsKey, SessionDep, authorize
from app.api.middleware import PARSED_JSON
from app.api.problems import problem_body, validation_failed
from app.auth.keys import Scope
from app.errors import AppError
from app.ids import Identifier
from app.matches import batch, service
from app.matches.schemas import BatchIn, BatchOut, MatchIn, MatchOut, batch_json, match_json

router = APIRouter(prefix="/v1/matches", tags=["matches"])

JSON = "application/json"
# Reading or voiding an imported match before its replay has rated it.
NOT_RATED_YET: dict[int | str, dict[str, Any]] = {
    409: {"description": "Imported and not rated yet (a replay job rates it)"}
}


class _BelowDependencies(APIRoute):
    """POST /v1/matches, the service's busiest write, run below FastAPI's request handling.

    The route is declared as any other (post_match below: its OpenAPI, its body model, its
    key) and FastAPI still routes to it and renders its errors, but its handler does by hand
    what FastAPI's would, in the same order and with the same errors, without the generic
    machinery each request pays for there (solving dependencies, re-reading the headers):
    1. the body, as FastAPI reads it: the JSON RequestBody already parsed (PARSED_JSON),
       the raw bytes for a media type that is not JSON, nothing when empty; an unparsable
       body is FastAPI's 422 json_invalid;
    2. the key (require(Scope.results_write): 401, 403, 429);
    3. the body validated by the route's own body field (FastAPI's request_body_to_args);
    4. the endpoint.
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        body_field = self.body_field
        endpoint = self.endpoint
        assert body_field is not None

        async def handle(request: Request) -> Response:
            body = await _body(request)
            res: Resources = request.app.state.resources
            await authorize(request, res, Scope.results_write)
            values, errors = await request_body_to_args([body_field], body, embed_body_fields=False)
            if errors:
                raise RequestValidationError(errors, body=body)
            response: Response = await endpoint(values[body_field.name], res, None)
            return response

        return handle


async def _body(request: Request) -> Any:
    raw = await _read(request)
    if not raw:
        return Undefined
    content_type = request.headers.get("content-type")
    if content_type is None or not _json_media(content_type):
        return raw
    parsed = request.scope.get(PARSED_JSON, Undefined)
    if parsed is not Undefined:
        return parsed
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise RequestValidationError(
            [
                {
                    "type": "json_invalid",
                    "loc": ("body", exc.pos),
                    "msg": "JSON decode error",
                    "input": {},
                    "ctx": {"error": exc.msg},
                }
            ],
            body=exc.doc,
        ) from exc


async def _read(request: Request) -> bytes:
    """The request's body, as Request.body reads it, without its async generator (a good
    share of this route's own time)."""
    chunks: list[bytes] = []
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _json_media(content_type: str) -> bool:
    """Whether FastAPI reads a body of this media type as JSON: application/json or
    application/*+json, parameters aside."""
    if content_type == JSON:
        return True
    message = email.message.Message()
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (
        subtype == "json" or subtype.endswith("+json")
    )


async def post_match(body: MatchIn, res: ResourcesDep, _: ResultsKey) -> Response:
    """Rate a finished match in one transaction, exactly once per match_id. Players the
    mode has not seen start at its prior. The same match again returns 200 and the stored
    response, byte for byte but for `created`: the same mode, teams, players, ranks (a score
    counts as its negated rank), weights and coefficients, in any player order within a
    team, and `played_at` at the same instant in any offset, or omitted. Any other
    difference under a used match_id returns 409."""
    # Posts that arrive together share a transaction (group commit); the answer comes after it commits.
    result = await res.matches.record(body)
    return Response(result.json, status_code=201 if result.created else 200, media_type=JSON)


router.add_api_route(
    "",
    post_match,
    methods=["POST"],
    operation_id="post_match",
    status_code=status.HTTP_201_CREATED,
    response_model=MatchOut,
    responses={
        200: {"model": MatchOut, "description": "Already recorded: the stored response"},
        409: {"description": "The match id was used for a different match"},
    },
    route_class_override=_BelowDependencies,
)


@router.post("/batch", operation_id="post_matches_batch", response_model=BatchOut)
async def post_matches_batch(body: BatchIn, request: Request, res: ResourcesDep, _: ResultsKey) -> Response:
    """Rate up to 1,000 matches in one transaction, in the listed order. Each item gets what
    POST /v1/matches would answer for it (201, 200, 409 or 422, with the match or the
    problem), so a bad item fails alone; a match_id repeated in the batch counts as posted
    after the earlier one. Exactly once per match_id across batches and single posts. Only a
    body that is not `{"matches": [...]}` with 1 to 1,000 items is a 422 for the whole
    request, and a database failure is a 503; then nothing of it is applied."""
    items = [_item(raw) for raw in body.matches]
    outcomes = await batch.record_batch(res.engine, res.sessions, items, res.batches)
    path = request.url.path
    results = [_result(raw, outcome, path) for raw, outcome in zip(body.matches, outcomes, strict=True)]
    return Response(batch_json(results), media_type=JSON)


def _item(raw: Any) -> MatchIn | AppError:
    try:
        return MatchIn.model_validate(raw)
    except ValidationError as exc:
        # Located as in the single post's 422: the item is that post's body.
        return validation_failed([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()])


def _result(raw: Any, outcome: batch.BatchOutcome, path: str) -> dict[str, Any]:
    """One item of the answer (BatchItemOut) as plain data: batch_json writes them all at once."""
    match_id = raw.get("match_id") if isinstance(raw, dict) else None
    if not isinstance(match_id, str):
        match_id = None
    if isinstance(outcome, AppError):
        # An unknown mode is the single post's 404; in a batch the item is what is wrong.
        status_code = 409 if outcome.status == 409 else 422
        body = problem_body(status_code, outcome.detail, path, outcome.errors)
        return {"match_id": match_id, "status": status_code, "match": None, "problem": body}
    if isinstance(outcome, batch.Applied):
        return {"match_id": match_id, "status": 201, "match": outcome.match, "problem": None}
    status_code = 201 if outcome.created else 200
    return {"match_id": match_id, "status": status_code, "match": outcome.match, "problem": None}


@router.get(
    "/{match_id}",
    operation_id="get_match",
    response_model=MatchOut,
    responses=NOT_RATED_YET,
)
async def get_match(match_id: Identifier, session: SessionDep, _: ReadKey) -> Response:
    """The stored result of a match."""
    return Response(match_json(await service.get_match(session, match_id)), media_type=JSON)


@router.post(
    "/{match_id}/void",
    operation_id="void_match",
    response_model=MatchOut,
    responses=NOT_RATED_YET,
)
async def void_match(match_id: Identifier, session: SessionDep, _: AdminKey) -> Response:
    """Mark a match void. Ratings are corrected by the next replay job."""
    return Response(match_json(await service.void_match(session, match_id)), media_type=JSON)
