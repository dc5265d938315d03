"""Use cases for modes, and the per-process cache of their rating environments."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cachetools import TTLCache
from sqlalchemy import func
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.bulk import unbounded
from app.db.locks import lock_mode
from app.db.models import Mode
from app.errors import UnknownMode, ValidationFailed
from app.ids import EVERY_MODE, ModeScope
from app.leaderboards import repository as leaderboards
from app.matchmaking.proposals import Composition, LatencyRule, MatchShape, Relaxation
from app.modes import repository
from app.modes.schemas import (
    MANY_TEAMS_LIMIT,
    MANY_TEAMS_SIZE,
    NULLABLE_SETTINGS,
    QUEUE_DEFAULTS,
    SETTINGS_DEFAULTS,
    ModeUpdate,
)
from app.rating import RatingInputError, TrueSkill
from app.rating.tiers import Tiers, tiers_of

# Another process's PUT reaches this one's cache within this many seconds.
CACHE_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class ModeRules:
    """What rating a match, and forming one, need to know about a mode."""

    name: str
    env: TrueSkill
    conservative_k: float
    shape: MatchShape = field(default_factory=lambda: MatchShape(2, 1))
    relax: Relaxation = field(default_factory=Relaxation)
    ticket_ttl: float = QUEUE_DEFAULTS["ticket_ttl_seconds"]
    latency: LatencyRule | None = None
    # Seed 001's gamma per day (app.rating.drift): 0, no drift.
    drift_per_day: float = 0.0
    # Placement matches: a player with fewer is provisional and off the leaderboard.
    placement_matches: int = 0
    tiers: Tiers | None = None
    accept_timeout: float | None = None  # the ready check's seconds; None: no ready check
    # The version of the tier settings `tiers` holds (migration 0016).
    tier_version: int = 0

    @property
    def teams(self) -> int:
        return self.shape.teams

    @property
    def team_size(self) -> int:
        return self.shape.team_size


# Only modes that exist are cached; with more than this, the least recent ones are re-read.
MODES_CACHED = 1024
_cache: TTLCache[str, ModeRules] = TTLCache(maxsize=MODES_CACHED, ttl=CACHE_SECONDS)

# What a match's rating depends on: a change to one of these makes the stored ratings
# differ from what a replay would compute. conservative_k and min_matches_for_leaderboard
# only order the leaderboard (recounted at once); the queue settings rate nothing.
RATING_PARAMETERS = (
    "mu",
    "sigma",
    "beta",
    "tau",
    "draw_probability",
    "tie_model",
    "team_performance",
    "size_penalty_c0",
    "size_penalty_c1",
    "roster_cap",
    "drift_per_day",
)


@dataclass(frozen=True, slots=True)
class ModeChange:
    """A mode as written, whether its stored ratings now call for a replay job, the version of
    its tier settings when this change moved it on (None: they did not change), and whether
    its stored scores are to be rewritten (`rescore`): the work of the job that re-tiers and
    re-scores its players (app.jobs.service.queue_retier)."""

    mode: Mode
    replay_recommended: bool
    tier_version: int | None = None
    rescore: bool = False


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
        mode.name,
        env,
        mode.conservative_k,
        shape_of(mode.teams, mode.team_size, mode.settings or {}),
        relax,
        queue["ticket_ttl_seconds"],
        latency_rule(mode.settings or {}, queue["relax_seconds"]),
        mode.drift_per_day,
        mode.min_matches_for_leaderboard,
        tiers_of(mode.tiers, mode.demotion_margin, mode.display_scale, mode.display_offset),
        (mode.settings or {}).get("accept_timeout_s"),
        mode.tier_version,
    )


def shape_of(teams: int, team_size: int, settings: dict[str, Any]) -> MatchShape:
    """The mode's match shape: its size, the minimums (unset: the full size) and roles."""
    roles = settings.get("roles")
    return MatchShape(
        teams,
        team_size,
        settings.get("teams_min") or 0,
        settings.get("team_size_min") or 0,
        Composition.of(roles) if roles else None,
    )


def latency_rule(settings: dict[str, float | None], relax_seconds: float) -> LatencyRule | None:
    """The mode's latency rule; None without max_latency_ms. It relaxes over relax_seconds."""
    start = settings.get("max_latency_ms")
    if start is None:
        return None
    relaxed = settings.get("max_latency_relaxed_ms")
    return LatencyRule(start, start if relaxed is None else relaxed, relax_seconds)


def cached(name: str) -> ModeRules | None:
    """The mode's rules if this process holds them (resolve reads them otherwise)."""
    return _cache.get(name)


async def resolve(session: AsyncSession, name: str) -> ModeRules:
    """The mode's rules, cached briefly; 404 for an unknown mode."""
    hit = _cache.get(name)
    if hit is not None:
        return hit
    mode = await repository.get(session, name)
    if mode is None:
        raise UnknownMode(name)
    rules = rules_of(mode)
    _cache[name] = rules
    return rules


async def find_mode(session: AsyncSession, name: str) -> Mode | None:
    return await repository.get(session, name)


async def get_mode(session: AsyncSession, name: str) -> Mode:
    mode = await repository.get(session, name)
    if mode is None:
        raise UnknownMode(name)
    return mode


async def list_modes(session: AsyncSession, within: ModeScope = EVERY_MODE) -> list[Mode]:
    """Every mode `within` allows."""
    return [mode for mode in await repository.list_all(session) if within.allows(mode.name)]


def _rating_parameters(mode: Mode) -> dict[str, object]:
    settings = {**SETTINGS_DEFAULTS, **(mode.settings or {})}
    return {key: settings[key] if key in settings else getattr(mode, key) for key in RATING_PARAMETERS}


def _check_relaxation(settings: dict[str, float | None]) -> None:
    """The queue relaxes from quality_start down to quality_floor, never up, and its latency
    limit from max_latency_ms up to max_latency_relaxed_ms, never down."""
    start, floor = settings["quality_start"], settings["quality_floor"]
    if start is not None and floor is not None and floor > start:
        msg = f"quality_floor ({floor}) must not exceed quality_start ({start})"
        raise ValidationFailed(
            msg,
            errors=[
                {"loc": ["body", "quality_floor"], "msg": msg, "type": "value_error"},
                {"loc": ["body", "quality_start"], "msg": msg, "type": "value_error"},
            ],
        )
    limit, relaxed = settings.get("max_latency_ms"), settings.get("max_latency_relaxed_ms")
    if limit is not None and relaxed is not None and relaxed < limit:
        msg = f"max_latency_relaxed_ms ({relaxed:g}) is below max_latency_ms ({limit:g}): a limit only widens"
        raise ValidationFailed(
            msg, errors=[{"loc": ["body", "max_latency_relaxed_ms"], "msg": msg, "type": "value_error"}]
        )


def check_shape(teams: int, team_size: int, settings: dict[str, Any], sent: set[str]) -> None:
    """The queue's shape as it would be after the change: teams past MANY_TEAMS_LIMIT only for
    small teams, minimums not above the full size, a composition that adds up to the team
    size. Each refusal names the field sent that makes it."""

    def refuse(message: str, *fields: str) -> None:
        named = [f for f in fields if f in sent] or list(fields[:1])
        raise ValidationFailed(
            message, errors=[{"loc": ["body", f], "msg": message, "type": "value_error"} for f in named]
        )

    if teams > MANY_TEAMS_LIMIT and team_size > MANY_TEAMS_SIZE:
        refuse(
            f"teams may exceed {MANY_TEAMS_LIMIT} only for teams of {MANY_TEAMS_SIZE} players or fewer "
            f"({teams} teams of {team_size})",
            "teams",
            "team_size",
        )
    size_min, teams_min = settings.get("team_size_min"), settings.get("teams_min")
    if size_min is not None and size_min > team_size:
        refuse(f"team_size_min ({size_min}) is above team_size ({team_size})", "team_size_min", "team_size")
    if teams_min is not None and teams_min > teams:
        refuse(f"teams_min ({teams_min}) is above teams ({teams})", "teams_min", "teams")
    roles = settings.get("roles")
    if roles:
        total = sum(roles.values())
        if total != team_size:
            refuse(f"the roles add up to {total} players, not team_size {team_size}", "roles", "team_size")
        if size_min is not None and size_min < team_size:
            refuse(
                "a composition fixes the team size: team_size_min must equal team_size",
                "team_size_min",
                "roles",
            )


def _check_ranking(values: dict[str, Any]) -> None:
    """Placement matches are the leaderboard minimum under another name; tiers ascend strictly
    by min with distinct names. Each refusal names the field."""
    placements = values.pop("placement_matches", None)
    least = values.get("min_matches_for_leaderboard")
    if placements is not None:
        if least is not None and least != placements:
            msg = (
                f"placement_matches ({placements}) and min_matches_for_leaderboard ({least}) are one "
                "setting: give one, or both equal"
            )
            raise ValidationFailed(
                msg, errors=[{"loc": ["body", "placement_matches"], "msg": msg, "type": "value_error"}]
            )
        values["min_matches_for_leaderboard"] = placements
    tiers = values.get("tiers")
    if tiers is None:
        return
    seen: set[str] = set()
    for index, tier in enumerate(tiers):
        msg = ""
        if tier["name"] in seen:
            msg = f"tier name {tier['name']!r} appears twice"
        elif index and tier["min"] <= tiers[index - 1]["min"]:
            msg = f"tiers must ascend by min: {tier['min']:g} follows {tiers[index - 1]['min']:g}"
        if msg:
            raise ValidationFailed(
                f"tiers.{index}: {msg}",
                errors=[{"loc": ["body", "tiers", index], "msg": msg, "type": "value_error"}],
            )
        seen.add(tier["name"])


# What the tiers are placed by: a change re-tiers the mode (a job: app.leaderboards.retier).
TIER_SETTINGS = (
    "tiers",
    "demotion_margin",
    "display_scale",
    "display_offset",
    "conservative_k",
    "min_matches_for_leaderboard",
)


async def put_mode(session: AsyncSession, name: str, update: ModeUpdate) -> ModeChange:
    values = update.model_dump(exclude_none=True)
    _check_ranking(values)
    current = await repository.get(session, name)
    extra: dict[str, float | None] = {key: values.pop(key) for key in SETTINGS_DEFAULTS if key in values}
    # The latency limits, the shape's settings and the ready check may be set to null (no rule,
    # none, the full size, off), so they go by the fields sent.
    for key in NULLABLE_SETTINGS:
        values.pop(key, None)
        if key in update.model_fields_set:
            extra[key] = getattr(update, key)
    settings = (current.settings if current is not None else None) or {}
    if extra:
        settings = values["settings"] = {k: v for k, v in {**settings, **extra}.items() if v is not None}
    _check_relaxation({**SETTINGS_DEFAULTS, **settings})
    check_shape(
        values.get("teams", current.teams if current is not None else 2),
        values.get("team_size", current.team_size if current is not None else 1),
        settings,
        update.model_fields_set,
    )
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
        # New modes take beta = sigma/2 and tau = sigma/100 unless given (seed 000 §4.2).
        sigma = values.get("sigma", 25.0 / 3.0)
        values.setdefault("beta", sigma / 2.0)
        values.setdefault("tau", sigma / 100.0)
        # Leaderboard count buckets: a few hundred across a typical spread of skills.
        values["leaderboard_bucket_width"] = sigma / 64.0
    # Read before the upsert: it refreshes `current` in place.
    before = _rating_parameters(current) if current is not None else None

    def changes(key: str) -> bool:
        return current is not None and key in values and values[key] != getattr(current, key)

    redrift = changes("drift_per_day")
    if redrift or (current is None and values.get("drift_per_day")):
        # The leaderboards are drifted to this instant from now on (app.leaderboards.drift).
        values["drift_as_of"] = func.now()
    # The stored `conservative` of every rating is now behind: the re-tier job re-scores the
    # rows in batches (app.leaderboards.rescore); reads say `rescoring` until it is done.
    rescore = changes("conservative_k") or redrift
    if rescore:
        values["rescore_after"] = ""
    retier = any(changes(key) for key in TIER_SETTINGS)
    # The leaderboard's membership changed: recounted here, one statement over the mode's rows
    # (it runs past the request statement timeout on a big mode, so that is lifted).
    recount = changes("min_matches_for_leaderboard")
    if recount:
        await unbounded(session)
    if rescore or recount:
        # Waits for the mode's in-flight rating writes, which may have read the old settings
        # (a post, a re-score batch, a season's reset chunk); new ones wait for this commit,
        # which rewrites no rating for a re-score.
        await lock_mode(session, name)
    mode = await repository.upsert(session, name, values)
    # Every stored tier is now behind the mode's settings until the re-tier job (or a match)
    # places it again; the counts show only the players placed by the current ones.
    version = await repository.next_tier_version(session, name) if retier else None
    if recount:
        await leaderboards.recount(session, name)
    _cache.pop(name, None)
    # Stored ratings were computed with the old parameters; only a replay recomputes them.
    changed = before is not None and before != _rating_parameters(mode)
    return ModeChange(mode, changed and await repository.has_matches(session, name), version, rescore)
