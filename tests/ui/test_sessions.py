"""The ops page's sessions (app.auth.sessions, app.api.ui): the cookie holds a random session id
that expires, never the key; signing out ends the session, revoking the key ends all of its
sessions, and a session works on every instance of the service."""

from __future__ import annotations

import hashlib

import httpx
import psycopg

from app.api.ui import COOKIE
from app.config import Settings
from tests.ui.test_pages import Headers, sign_in


def session_of(signed: httpx.Response) -> str:
    assert signed.status_code == 303 and signed.headers["location"] == "/ui", signed.text
    cookie = signed.headers["set-cookie"]
    name, _, rest = cookie.partition("=")
    assert name == COOKIE
    return rest.split(";")[0]


def with_session(session_id: str) -> dict[str, str]:
    return {"Cookie": f"{COOKIE}={session_id}"}


def stored_sessions(database_url: str, key_id: str) -> list[tuple[str, float]]:
    """(id hash, seconds left) of the key's sessions."""
    with psycopg.connect(database_url) as conn:
        rows = conn.execute(
            "SELECT id_hash, extract(epoch FROM expires_at - now())::float8 FROM ui_sessions "
            "WHERE key_id = %s",
            (key_id,),
        ).fetchall()
    return [(str(h), float(left)) for h, left in rows]


async def read_key(client: httpx.AsyncClient, admin: Headers) -> tuple[str, str]:
    created = await client.post("/v1/keys", json={"name": "ui-session", "scopes": ["read"]}, headers=admin)
    assert created.status_code == 201
    return created.json()["id"], created.json()["key"]


async def page(client: httpx.AsyncClient, session_id: str) -> int:
    # A client of its own holds no cookie of an earlier sign-in: only the one sent here counts.
    return (await client.get("/ui", headers=with_session(session_id))).status_code


async def test_the_cookie_holds_a_random_session_id_never_the_key(
    client: httpx.AsyncClient, admin_headers: Headers, database_url: str, settings: Settings
) -> None:
    key_id, key = await read_key(client, admin_headers)
    signed = await sign_in(client, key)
    session_id = session_of(signed)
    cookie = signed.headers["set-cookie"]
    assert key not in cookie and key_id not in cookie and session_id not in key
    assert len(session_id) >= 43  # 32 random bytes, base64url
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
    assert f"Max-Age={settings.ui_session_s}" in cookie
    client.cookies.clear()
    assert await page(client, session_id) == 200

    # Only the id's hash is stored, with the session's expiry.
    [(id_hash, left)] = stored_sessions(database_url, key_id)
    assert id_hash == hashlib.sha256(session_id.encode()).hexdigest()
    assert settings.ui_session_s - 60 < left <= settings.ui_session_s
    # Each sign-in is a session of its own; the key itself is no session.
    other = session_of(await sign_in(client, key))
    client.cookies.clear()
    assert other != session_id and len(stored_sessions(database_url, key_id)) == 2
    assert await page(client, key) == 303
    assert await page(client, session_id + "x") == 303


async def test_an_expired_session_asks_to_sign_in_again(
    client: httpx.AsyncClient, admin_headers: Headers, database_url: str
) -> None:
    key_id, key = await read_key(client, admin_headers)
    session_id = session_of(await sign_in(client, key))
    client.cookies.clear()
    assert await page(client, session_id) == 200
    with psycopg.connect(database_url) as conn:
        conn.execute(
            "UPDATE ui_sessions SET expires_at = now() - interval '1 second' WHERE id_hash = %s",
            (hashlib.sha256(session_id.encode()).hexdigest(),),
        )
    expired = await client.get("/ui", headers=with_session(session_id))
    assert expired.status_code == 303 and expired.headers["location"] == "/ui/login"
    # The next sign-in clears expired sessions away.
    fresh = session_of(await sign_in(client, key))
    client.cookies.clear()
    assert [h for h, _ in stored_sessions(database_url, key_id)] == [
        hashlib.sha256(fresh.encode()).hexdigest()
    ]
    assert await page(client, fresh) == 200


async def test_signing_out_ends_the_session(
    client: httpx.AsyncClient, admin_headers: Headers, database_url: str
) -> None:
    key_id, key = await read_key(client, admin_headers)
    session_id = session_of(await sign_in(client, key))
    kept = session_of(await sign_in(client, key))  # another browser, still signed in
    client.cookies.clear()
    out = await client.post("/ui/logout", headers=with_session(session_id))
    assert out.status_code == 303 and out.headers["location"] == "/ui/login"
    assert f'{COOKIE}=""' in out.headers["set-cookie"] and "Max-Age=0" in out.headers["set-cookie"]
    # A copy of the cookie kept elsewhere is worth nothing now.
    assert await page(client, session_id) == 303
    assert await page(client, kept) == 200
    assert len(stored_sessions(database_url, key_id)) == 1
    assert (await client.post("/ui/logout")).status_code == 303  # signed out already: nothing to end


async def test_revoking_the_key_ends_its_sessions_on_every_instance(
    client: httpx.AsyncClient, admin_headers: Headers, database_url: str, live_server: str
) -> None:
    key_id, key = await read_key(client, admin_headers)
    here = session_of(await sign_in(client, key))
    client.cookies.clear()
    async with httpx.AsyncClient(base_url=live_server, timeout=30) as elsewhere:
        # A session opened on one instance works on another (another process, the same database).
        assert (await elsewhere.get("/ui", headers=with_session(here))).status_code == 200
        there = session_of(
            await elsewhere.post(
                "/ui/login",
                content=f"key={key}",
                headers={"content-type": "application/x-www-form-urlencoded"},
            )
        )
        elsewhere.cookies.clear()
        assert await page(client, there) == 200

        assert (await client.delete(f"/v1/keys/{key_id}", headers=admin_headers)).status_code == 204
        assert stored_sessions(database_url, key_id) == []
        # At once on both instances: the other one's key cache does not keep the session alive.
        for session_id in (here, there):
            assert await page(client, session_id) == 303
            assert (await elsewhere.get("/ui", headers=with_session(session_id))).status_code == 303
