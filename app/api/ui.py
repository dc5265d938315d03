"""The ops page: server-rendered HTML for people with a `read` key.

A browser cannot send a bearer header, so signing in opens a server-side session
(app.auth.sessions) whose random id, never the key, goes in an HTTP-only, SameSite=Strict
cookie scoped to /ui, expiring with the session (UI_SESSION_S). Signing out ends the session;
revoking the key ends all of its sessions. `Authorization: Bearer` works too. A key limited to
modes sees those modes only. The pages only read, and are left out of the OpenAPI document.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any
from urllib.parse import parse_qs, quote

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.api.deps import (
    RedisDep,
    Resources,
    ResourcesDep,
    SessionDep,
    authenticate,
    authenticate_session,
    bearer_token,
    check_path_mode,
)
from app.auth import sessions
from app.auth.keys import Scope
from app.auth.service import Principal, require_mode
from app.errors import AppError, Unauthorized
from app.ui import pages
from app.ui.render import page

router = APIRouter(prefix="/ui", include_in_schema=False)

COOKIE = "skill_ui_session"
MAX_LOGIN_FORM = 4096


async def _signed_in_key(request: Request, res: Resources) -> Principal:
    """The key of the request's bearer header, else of its session cookie."""
    presented = bearer_token(request)
    if presented is not None:
        return await authenticate(request, res, presented, Scope.read)
    return await authenticate_session(request, res, request.cookies.get(COOKIE), Scope.read)


def _to_login() -> RedirectResponse:
    return RedirectResponse("/ui/login", status_code=303)


def _error(exc: AppError) -> HTMLResponse:
    return page("error.html", exc.status, title=exc.title, detail=exc.detail)


async def _signed_in_page(
    request: Request,
    res: Resources,
    template: str,
    build: Callable[[Principal], Awaitable[dict[str, Any]]],
    mode: str | None = None,
) -> Response:
    """`template` filled by `build(key)` for a request holding a read key that may act on the
    page's mode (its `{mode}` path parameter, or `mode`); else the sign-in redirect, or an
    error page (403, 429, or what building the page raised)."""
    try:
        key = await _signed_in_key(request, res)
    except Unauthorized:
        return _to_login()
    except AppError as exc:
        return _error(exc)
    request.state.api_key_id = key.key_id
    try:
        check_path_mode(request, key)
        if mode is not None:
            require_mode(key, mode)
        return page(template, **await build(key))
    except AppError as exc:
        return _error(exc)


@router.get("/login")
async def login_form() -> HTMLResponse:
    return page("login.html", signed_in=False, message=None)


@router.post("/login")
async def login(request: Request, res: ResourcesDep, session: SessionDep) -> Response:
    body = await request.body()
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded" or len(body) > MAX_LOGIN_FORM:
        return page("login.html", 400, signed_in=False, message="Send the sign-in form.")
    try:
        key = parse_qs(body.decode("utf-8"), max_num_fields=4).get("key", [""])[0].strip()
    except (UnicodeDecodeError, ValueError):
        return page("login.html", 400, signed_in=False, message="The form is not valid UTF-8.")
    try:
        principal = await authenticate(request, res, key, Scope.read)
    except AppError as exc:
        login_page = page("login.html", exc.status, signed_in=False, message=exc.detail)
        if "Retry-After" in exc.headers:  # a 429: too many failed sign-ins from this address
            login_page.headers["Retry-After"] = exc.headers["Retry-After"]
        return login_page
    seconds = res.settings.ui_session_s
    session_id = await sessions.sign_in(session, principal, seconds)
    response = RedirectResponse("/ui", status_code=303)
    response.set_cookie(
        COOKIE,
        session_id,
        max_age=seconds,
        httponly=True,
        samesite="strict",
        path="/ui",
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/logout")
async def logout(request: Request, session: SessionDep) -> Response:
    await sessions.sign_out(session, request.cookies.get(COOKIE))
    response = _to_login()
    response.delete_cookie(COOKIE, path="/ui")
    return response


@router.get("")
async def modes(request: Request, session: SessionDep, redis: RedisDep, res: ResourcesDep) -> Response:
    build = lambda key: pages.modes_page(session, redis, key.modes)  # noqa: E731
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
    build = lambda key: pages.leaderboard_page(session, redis, mode, cursor, season)  # noqa: E731
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
    build = lambda key: pages.player_page(session, player_id, mode, key.modes)  # noqa: E731
    return await _signed_in_page(request, res, "player.html", build, mode)
