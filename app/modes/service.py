"""Use cases for modes, and the per-process cache of their rating environments."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Mode
from app.errors import NotFound, ValidationFailed
from app.leaderboards import repository as leaderboards
from app.matchmaking.proposals import Relaxation
from app.modes import repository
from app.modes.schemas import QUEUE_DEFAULTS, SETTINGS_DEFAULTS, ModeUpdate
from app.rating import RatingInputError, TrueSkill

# Another process's PUT reaches this one's cache within this many seconds.
CACHE_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class ModeRules:
    """What rating a match, and forming one, need to know about a mode."""

    name: str
    env: TrueSkill
    conservative_k: float
    teams: int = 2
    team_size: int = 1
    relax: Relaxation = field(default_factory=Relaxation)
    ticket_ttl: float = QUEUE_DEFAULTS["ticket_ttl_seconds"]


_cache: dict[str, tuple[float, ModeRules]] = {}


def environment(
    mu: float,
    sigma: float,
    beta: float | None,
    tau: float | None,
    draw_probability: float,
    tie_model: str,
    team_performance: str,
    settings: dict[str, float],
) -> TrueSkill:
    return TrueSkill(
        mu,
        sigma,
        beta,
        tau,
        draw_probability,
        tie_model=tie_model,
        team_performance=team_performance,
        c0=settings["size_penalty_c0"],
        c1=settings["size_penalty_c1"],
        roster_cap=int(settings["roster_cap"]),
    )


def rules_of(mode: Mode) -> ModeRules:
    queue = {**SETTINGS_DEFAULTS, **(mode.settings or {})}
    env = environment(
        mode.mu,
        mode.sigma,
        mode.beta,
        mode.tau,
        mode.draw_probability,
        mode.tie_model,
        mode.team_performance,
        queue,
    )
    relax = Relaxation(queue["quality_start"], queue["quality_floor"], queue["relax_seconds"])
    return ModeRules(
        mode.name, env, mode.conservative_k, mode.teams, mode.team_size, relax, queue["ticket_ttl_seconds"]
    )


async def resolve(session: AsyncSession, name: str) -> ModeRules:
    """The mode's rules, cached briefly; 404 for an unknown mode."""
    now = time.monotonic()
    hit = _cache.get(name)
    if hit is not None and hit[0] > now:
        return hit[1]
    mode = await repository.get(session, name)
    if mode is None:
        raise NotFound(f"no mode {name!r}")
    rules = rules_of(mode)
    _cache[name] = (now + CACHE_SECONDS, rules)
    return rules


async def find_mode(session: AsyncSession, name: str) -> Mode | None:
    return await repository.get(session, name)


async def get_mode(session: AsyncSession, name: str) -> Mode:
    mode = await repository.get(session, name)
    if mode is None:
        raise NotFound(f"no mode {name!r}")
    return mode


async def list_modes(session: AsyncSession) -> list[Mode]:
    return await repository.list_all(session)


async def put_mode(session: AsyncSession, name: str, update: ModeUpdate) -> Mode:
    values = update.model_dump(exclude_none=True)
    current = await repository.get(session, name)
    extra = {key: values.pop(key) for key in SETTINGS_DEFAULTS if key in values}
    settings = (current.settings if current is not None else None) or {}
    if extra:
        settings = values["settings"] = {**settings, **extra}
    merged = {
        key: values.get(key, getattr(current, key) if current is not None else None)
        for key in ("mu", "sigma", "beta", "tau", "draw_probability", "tie_model", "team_performance")
    }
    sigma = merged["sigma"] if merged["sigma"] is not None else 25.0 / 3.0
    try:
        environment(
            merged["mu"] if merged["mu"] is not None else 25.0,
            sigma,
            # A new mode's own defaults (below), not the library's fixed 25/6 and 25/300.
            merged["beta"] if merged["beta"] is not None else sigma / 2.0,
            merged["tau"] if merged["tau"] is not None else sigma / 100.0,
            merged["draw_probability"] if merged["draw_probability"] is not None else 0.1,
            merged["tie_model"] or "chain",
            merged["team_performance"] or "sum",
            {**SETTINGS_DEFAULTS, **settings},
        )
    except RatingInputError as exc:
        raise ValidationFailed(str(exc), errors=[{"loc": ["body"], "msg": str(exc)}]) from None
    if current is None:
        # New modes take beta = sigma/2 and tau = sigma/100 unless given (seed 000 §5).
        sigma = values.get("sigma", 25.0 / 3.0)
        values.setdefault("beta", sigma / 2.0)
        values.setdefault("tau", sigma / 100.0)
        # Leaderboard count buckets: a few hundred across a typical spread of skills.
        values["leaderboard_bucket_width"] = sigma / 64.0
    rescore = (
        current is not None and values.get("conservative_k", current.conservative_k) != current.conservative_k
    )
    recount = rescore or (
        current is not None
        and values.get("min_matches_for_leaderboard", current.min_matches_for_leaderboard)
        != current.min_matches_for_leaderboard
    )
    if recount:
        # Waits for the mode's in-flight rating writes; new ones wait for this commit.
        await leaderboards.lock_mode(session, name)
    mode = await repository.upsert(session, name, values)
    if recount:
        await leaderboards.recount(session, name, rescore=rescore)
    _cache.pop(name, None)
    return mode
