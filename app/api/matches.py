"""Match results: game backends post them (results:write), ops read and void them."""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import APIRouter, Request, Response, status
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from pydantic import ValidationError

from app.api.deps import AdminKey, ReadKey, ResourcesDep, ResultsKey, SessionDep, resources, results_key
from app.api.problems import problem_body, validation_failed
from app.auth.service import Principal, mode_refused, require_mode
from app.errors import AppError
from app.ids import Identifier
from app.matches import recording, service
from app.matches.schemas import BatchIn, BatchOut, MatchIn, MatchOut, batch_json, match_json

router = APIRouter(prefix="/v1/matches", tags=["matches"])

JSON = "application/json"
# Reading or voiding an imported match before its replay has rated it.
NOT_RATED_YET: dict[int | str, dict[str, Any]] = {
    409: {"description": "Imported and not rated yet (a replay job rates it)"}
}


async def post_match(body: MatchIn, res: ResourcesDep, key: ResultsKey) -> Response:
    """Rate a finished match in one transaction, exactly once per match_id. Players the
    mode has not seen start at its prior. The same match again returns 200 and the stored
    response, byte for byte but for `created`: the same mode, teams, players, ranks (a score
    counts as its negated rank), weights and coefficients, in any player order within a
    team, and `played_at` at the same instant in any offset, or omitted. Any other
    difference under a used match_id returns 409."""
    require_mode(key, body.mode)
    # Posts that arrive together share a transaction (group commit); the answer comes after it commits.
    result = await res.matches.record(body)
    return Response(result.json, status_code=201 if result.created else 200, media_type=JSON)


class MatchPostRoute(APIRoute):
    """POST /v1/matches, the service's busiest write, as declared (its path, its OpenAPI, the
    app's middleware and exception handlers around it), with a request handler of its own:
    it runs the route's dependencies and validates the body by calling what FastAPI would
    call, in FastAPI's order, without FastAPI's general dependency solving (FastAPI's
    documented way to customise a route: `get_route_handler`)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        async def handle(request: Request) -> Response:
            res = await resources(request)
            key = await results_key(request, res)
            return await post_match(_body(await request.body()), res, key)

        return handle


def _body(raw: bytes) -> MatchIn:
    """The body as the route's MatchIn, or the 422 FastAPI raises for it: errors located under
    "body", the body validated as FastAPI validates one (from attributes)."""
    if not raw:
        missing = {"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}
        raise RequestValidationError([missing])
    try:
        # A body that is not JSON was answered 400 by the middleware (app.api.middleware):
        # only blanks fail here.
        parsed = json.loads(raw)
    except json.JSONDecodeError as exc:
        invalid = {"type": "json_invalid", "loc": ("body", exc.pos), "msg": "JSON decode error", "input": {}}
        raise RequestValidationError([invalid], body=exc.doc) from None
    try:
        return MatchIn.model_validate(parsed, from_attributes=True)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        raise RequestValidationError(
            [{**e, "loc": ("body", *e["loc"])} for e in errors], body=parsed
        ) from None


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
    route_class_override=MatchPostRoute,
)


@router.post("/batch", operation_id="post_matches_batch", response_model=BatchOut)
async def post_matches_batch(body: BatchIn, request: Request, res: ResourcesDep, key: ResultsKey) -> Response:
    """Rate up to 1,000 matches in one transaction, in the listed order. Each item gets what
    POST /v1/matches would answer for it (201, 200, 409 or 422, with the match or the
    problem), so a bad item fails alone; a match_id repeated in the batch counts as posted
    after the earlier one. An item of a mode outside the key's modes is that item's 403.
    Exactly once per match_id across batches and single posts. Only a
    body that is not `{"matches": [...]}` with 1 to 1,000 items is a 422 for the whole
    request, and a database failure is a 503; then nothing of it is applied."""
    items = [_item(raw, key) for raw in body.matches]
    outcomes = await res.batches.record(items)
    path = request.url.path
    results = [_result(raw, outcome, path) for raw, outcome in zip(body.matches, outcomes, strict=True)]
    return Response(batch_json(results), media_type=JSON)


def _item(raw: Any, key: Principal) -> MatchIn | AppError:
    try:
        item = MatchIn.model_validate(raw)
    except ValidationError as exc:
        # Located as in the single post's 422: the item is that post's body.
        return validation_failed([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()])
    return mode_refused(key, item.mode) or item


def _result(raw: Any, outcome: recording.Outcome, path: str) -> dict[str, Any]:
    """One item of the answer (BatchItemOut) as plain data: batch_json writes them all at once."""
    match_id = raw.get("match_id") if isinstance(raw, dict) else None
    if not isinstance(match_id, str):
        match_id = None
    if isinstance(outcome, AppError):
        # An unknown mode is the single post's 404; in a batch the item is what is wrong.
        status_code = outcome.status if outcome.status in (403, 409) else 422
        body = problem_body(status_code, outcome.detail, path, outcome.errors)
        return {"match_id": match_id, "status": status_code, "match": None, "problem": body}
    status_code = 201 if outcome.created else 200
    return {"match_id": match_id, "status": status_code, "match": outcome.data, "problem": None}


@router.get(
    "/{match_id}",
    operation_id="get_match",
    response_model=MatchOut,
    responses=NOT_RATED_YET,
)
async def get_match(match_id: Identifier, session: SessionDep, key: ReadKey) -> Response:
    """The stored result of a match. For a key limited to modes, a match of another mode is a 404."""
    return Response(match_json(await service.get_match(session, match_id, key.modes)), media_type=JSON)


@router.post(
    "/{match_id}/void",
    operation_id="void_match",
    response_model=MatchOut,
    responses=NOT_RATED_YET,
)
async def void_match(match_id: Identifier, session: SessionDep, key: AdminKey) -> Response:
    """Mark a match void. Ratings are corrected by the next replay job. For a key limited to
    modes, a match of another mode is a 404."""
    return Response(match_json(await service.void_match(session, match_id, key.modes)), media_type=JSON)
