"""Use cases for API keys: create, list, revoke, authenticate, bootstrap; and the one check of
a key's modes (`require_mode`), which every route acting on a mode goes through."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from cachetools import TTLCache
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from app.auth import keys, repository
from app.auth.keys import Scope
from app.db.models import ApiKey
from app.errors import Forbidden, NotFound, Unauthorized
from app.ids import EVERY_MODE, ModeScope


async def create_key(
    session: AsyncSession,
    name: str,
    scopes: list[Scope],
    modes: list[str] | None = None,
    within: ModeScope = EVERY_MODE,
) -> tuple[ApiKey, str]:
    """A new key limited to `modes` (None: every mode). A key made by a key limited to modes
    (`within`) must stay within them: 403 otherwise, a key for every mode included."""
    if not within.covers(ModeScope(modes)):
        raise Forbidden(
            f"this key is limited to the modes {list(within.patterns or ())}: "
            "the keys it creates must name modes within them (modes)"
        )
    key_id, key = keys.new_key()
    row = ApiKey(
        id=key_id,
        name=name,
        key_hash=keys.hash_key(key),
        scopes=[s.value for s in scopes],
        modes=modes,
        created_at=dt.datetime.now(dt.UTC),
    )
    session.add(row)
    await session.flush()
    return row, key


async def list_keys(session: AsyncSession, within: ModeScope = EVERY_MODE) -> list[ApiKey]:
    """Every key, or for a key limited to modes (`within`) the keys within them."""
    return [row for row in await repository.list_all(session) if within.covers(ModeScope(row.modes))]


async def revoke_key(session: AsyncSession, key_id: str, within: ModeScope = EVERY_MODE) -> None:
    """Revoke a key and end its ops-page sessions. A key limited to modes (`within`) revokes
    only keys within them; others are not found, as in its list."""
    row = await repository.get(session, key_id)
    if row is None or not within.covers(ModeScope(row.modes)) or not await repository.revoke(session, key_id):
        raise NotFound(f"no active key {key_id!r}")
    await repository.end_sessions_of(session, key_id)
    _known.pop(key_id, None)


@dataclass(frozen=True, slots=True)
class Principal:
    """An authenticated key: its id, scopes and the modes it may act on."""

    key_id: str
    key_hash: str
    scopes: frozenset[str]
    modes: ModeScope = EVERY_MODE


def mode_refused(key: Principal, mode: str) -> Forbidden | None:
    """The 403 for `key` acting on `mode` outside its modes, else None. The one check of a key's
    modes: require_mode raises it; a batch makes it one item's outcome."""
    if key.modes.allows(mode):
        return None
    return Forbidden(
        f"this key is limited to the modes {list(key.modes.patterns or ())}; {mode!r} is not one"
    )


def require_mode(key: Principal, mode: str) -> None:
    """403 unless `key` may act on `mode`."""
    if (refused := mode_refused(key, mode)) is not None:
        raise refused


def require_every_mode(key: Principal, action: str) -> None:
    """403 for a key limited to modes, for what acts on every mode at once (`action`)."""
    if key.modes.limited:
        raise Forbidden(
            f"{action} acts on every mode: this key is limited to {list(key.modes.patterns or ())}"
        )


# Key lookups are cached per process for a few seconds, so a request costs no key query. A
# revocation takes effect at once in the process that made it, elsewhere within this.
KEY_CACHE_SECONDS = 5.0
# Known keys and unknown ids apart, each bounded: a flood of random keys (each one an unknown
# id) evicts only other unknown ids, never the keys in use, and memory stays flat. Unknown ids
# are kept only so a client repeating a revoked key does not cost a query each time: a few
# hundred do (their memory under a flood: docs/benchmarks.md, "A flood of random keys").
KNOWN_KEYS_CACHED = 1024
UNKNOWN_KEYS_CACHED = 256
_known: TTLCache[str, Principal] = TTLCache(maxsize=KNOWN_KEYS_CACHED, ttl=KEY_CACHE_SECONDS)
_unknown: TTLCache[str, bool] = TTLCache(maxsize=UNKNOWN_KEYS_CACHED, ttl=KEY_CACHE_SECONDS)


def cached_keys() -> tuple[int, int]:
    """How many (known, unknown) key ids this process holds, at most the two bounds."""
    return len(_known), len(_unknown)


async def _principal(sessions: async_sessionmaker[AsyncSession], key_id: str) -> Principal | None:
    hit = _known.get(key_id)
    if hit is not None:
        return hit
    if key_id in _unknown:
        return None
    # A session of its own, closed at once: the request's session stays without a connection,
    # so a request that then waits on something else (a match waits for its group commit,
    # which needs a connection of the same pool) holds none, and a burst of requests with a
    # key not cached yet cannot starve the pool.
    async with sessions() as session:
        row = await repository.get(session, key_id)
    if row is None or row.revoked_at is not None:
        _unknown[key_id] = True
        return None
    principal = Principal(row.id, row.key_hash, frozenset(row.scopes), ModeScope(row.modes))
    _known[key_id] = principal
    return principal


async def authenticate(
    sessions: async_sessionmaker[AsyncSession], presented: str | None, needed: Scope
) -> Principal:
    """The key if it is known, active and holds `needed` (admin holds every scope)."""
    if not presented:
        raise Unauthorized("missing API key: send Authorization: Bearer <key>")
    key_id = keys.key_id_of(presented) or keys.bootstrap_id(presented)
    principal = await _principal(sessions, key_id)
    if principal is None or not keys.matches(principal.key_hash, presented):
        raise Unauthorized("unknown or revoked API key")
    return holding(principal, needed)


async def key_of_session(sessions: async_sessionmaker[AsyncSession], key_id: str, needed: Scope) -> Principal:
    """The active key an ops-page session was signed in with (app.auth.sessions found its id),
    if it holds `needed`."""
    principal = await _principal(sessions, key_id)
    if principal is None:
        raise Unauthorized("the key of this session was revoked; sign in again")
    return holding(principal, needed)


def holding(principal: Principal, needed: Scope) -> Principal:
    """`principal` if it holds `needed` (admin holds every scope), else 403."""
    if needed.value not in principal.scopes and Scope.admin.value not in principal.scopes:
        raise Forbidden(f"this key lacks the {needed.value!r} scope")
    return principal


async def ensure_bootstrap_key(session: AsyncSession, configured: str | None) -> str | None:
    """Make sure an admin key exists. Returns a newly generated key to print, else None.

    With ADMIN_API_KEY set, that key is the bootstrap key (earlier generated ones are
    revoked). Without it, one key is generated the first time and never again.
    """
    current = await repository.active_bootstrap(session)
    if configured is not None:
        wanted = keys.bootstrap_id(configured)
        for row in current:
            if row.id != wanted:
                row.revoked_at = dt.datetime.now(dt.UTC)
        existing = await repository.get(session, wanted)
        if existing is None:
            session.add(_bootstrap_row(wanted, "bootstrap admin (ADMIN_API_KEY)", configured))
        elif existing.revoked_at is not None:
            existing.revoked_at = None
        await session.flush()
        return None
    if current:
        return None
    key_id, key = keys.new_key()
    session.add(_bootstrap_row(key_id, "bootstrap admin (generated)", key))
    await session.flush()
    return key


def _bootstrap_row(key_id: str, name: str, key: str) -> ApiKey:
    return ApiKey(
        id=key_id,
        name=name,
        key_hash=keys.hash_key(key),
        scopes=[Scope.admin.value],
        bootstrap=True,
        created_at=dt.datetime.now(dt.UTC),
    )
