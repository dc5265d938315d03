"""The ops page: server-rendered HTML for people with a `read` key.

A browser cannot send a bearer header, so signing in puts the key in an HTTP-only,
SameSite=Strict cookie scoped to /ui; `Authorization: Bearer` works too. The pages only
read, and are left out of the OpenAPI document.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.api.deps import RedisDep, Resources, ResourcesDep, SessionDep, authenticate, bearer_token
from app.auth.keys import Scope
from app.errors import AppError, Unauthorized
from app.ui import pages
from app.ui.render import page

router = APIRouter(prefix="/ui", include_in_schema=False)

COOKIE = "skill_ui_key"
MAX_LOGIN_FORM = 4096


def _presented(request: Request) -> str | None:
    return bearer_token(request) or request.cookies.get(COOKIE) or None


def _to_login() -> RedirectResponse:
    return RedirectResponse("/ui/login", status_code=303)


def _error(exc: AppError) -> HTMLResponse:
    return page("error.html", exc.status, title=exc.title, detail=exc.detail)


async def _signed_in_page(
    request: Request,
    res: Resources,
    template: str,
    build: Callable[[], Awaitable[dict[str, Any]]],
) -> Response:
    """`template` filled by `build` for a request holding a read key; else the sign-in
    redirect, or an error page (403, 429, or what building the page raised)."""
    try:
        key = await authenticate(request, res, _presented(request), Scope.read)
    except Unauthorized:
        return _to_login()
    except AppError as exc:
        return _error(exc)
    request.state.api_key_id = key.key_id
    try:
        return page(template, **await build())
    except AppError as exc:
        return _error(exc)


@router.get("/login")
async def login_form() -> HTMLResponse:
    return page("login.html", signed_in=False, message=None)


@router.post("/login")
async def login(request: Request, res: ResourcesDep) -> Response:
    body = await request.body()
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded" or len(body) > MAX_LOGIN_FORM:
        return page("login.html", 400, signed_in=False, message="Send the sign-in form.")
    try:
        key = parse_qs(body.decode("utf-8"), max_num_fields=4).get("key", [""])[0].strip()
    except (UnicodeDecodeError, ValueError):
        return page("login.html", 400, signed_in=False, message="The form is not valid UTF-8.")
    try:
        await authenticate(request, res, key, Scope.read)
    except AppError as exc:
        login_page = page("login.html", exc.status, signed_in=False, message=exc.detail)
        if "Retry-After" in exc.headers:  # a 429: too many failed sign-ins from this address
            login_page.headers["Retry-After"] = exc.headers["Retry-After"]
        return login_page
    response = RedirectResponse("/ui", status_code=303)
    response.set_cookie(
        COOKIE, key, httponly=True, samesite="strict", path="/ui", secure=request.url.scheme == "https"
    )
    return response


@router.post("/logout")
async def logout() -> Response:
    response = _to_login()
    response.delete_cookie(COOKIE, path="/ui")
    return response


@router.get("")
async def modes(request: Request, session: SessionDep, redis: RedisDep, res: ResourcesDep) -> Response:
    build = lambda: pages.modes_page(session, redis)  # noqa: E731
    return await _signed_in_page(request, res, "modes.html", build)


@router.get("/modes/{mode}")
async def leaderboard(
    request: Request,
    mode: str,
    session: SessionDep,
    redis: RedisDep,
    res: ResourcesDep,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
    season: Annotated[str | None, Query(max_length=128)] = None,
) -> Response:
    build = lambda: pages.leaderboard_page(session, redis, mode, cursor, season)  # noqa: E731
    return await _signed_in_page(request, res, "leaderboard.html", build)


@router.get("/players")
async def find_player(
    id: Annotated[str, Query(max_length=128)], mode: Annotated[str | None, Query(max_length=128)] = None
) -> Response:
    """The player search box: on to the player's page."""
    target = f"/ui/players/{quote(id.strip(), safe='')}"
    return RedirectResponse(target + (f"?mode={quote(mode, safe='')}" if mode else ""), status_code=303)


@router.get("/players/{player_id}")
async def player(
    request: Request,
    player_id: str,
    session: SessionDep,
    res: ResourcesDep,
    mode: Annotated[str | None, Query(max_length=128)] = None,
) -> Response:
    build = lambda: pages.player_page(session, player_id, mode)  # noqa: E731
    return await _signed_in_page(request, res, "player.html", build)
