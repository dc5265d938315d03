"""HTTP shapes of game modes."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from app.ids import Identifier
from app.matchmaking.roles import MAX_ROLES
from app.rating.performance import PAPER_C0, PAPER_C1, PAPER_ROSTER_CAP, TeamPerformance
from app.rating.tie_layer import TieModel

# Teams a match may have: MANY_TEAMS_LIMIT, or up to MAX_TEAMS for teams of MANY_TEAMS_SIZE or fewer.
MANY_TEAMS_LIMIT = 64
MANY_TEAMS_SIZE = 4
MAX_TEAMS = 200


# The most tiers a mode may have.
MAX_TIERS = 50


class TierIn(BaseModel):
    """One tier: its name and the displayed rating it starts at."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.:+ -]+$")
    min: float = Field(ge=-1e15, le=1e15, allow_inf_nan=False)


class Tier(BaseModel):
    name: str
    min: float


class ModeUpdate(BaseModel):
    """Rating parameters of a mode. Omitted fields keep their current value (defaults on creation)."""

    model_config = ConfigDict(extra="forbid")

    mu: float | None = Field(None, ge=-1e15, le=1e15, allow_inf_nan=False)
    sigma: float | None = Field(None, ge=1e-12, le=1e15, allow_inf_nan=False)
    beta: float | None = Field(None, ge=1e-9, le=1e15, allow_inf_nan=False)
    tau: float | None = Field(None, ge=0, le=1e15, allow_inf_nan=False)
    draw_probability: float | None = Field(None, ge=0, lt=1, allow_inf_nan=False)
    conservative_k: float | None = Field(None, ge=0, le=100, allow_inf_nan=False)
    team_performance: TeamPerformance | None = Field(
        None,
        description="team performance from its players': sum (TrueSkill), mean, weighted (per-player "
        "coefficient in each match), size-penalised-mean (seed 002 eq. 4)",
    )
    tie_model: TieModel | None = Field(
        None, description="chain (TrueSkill) or tie-layer (seed 002 §3, for large multiway ties)"
    )
    size_penalty_c0: float | None = Field(
        None, ge=-10, le=10, allow_inf_nan=False, description="size-penalised-mean: c0 of (c0 + c1·n)"
    )
    size_penalty_c1: float | None = Field(
        None, ge=-10, le=10, allow_inf_nan=False, description="size-penalised-mean: c1 of (c0 + c1·n)"
    )
    roster_cap: int | None = Field(
        None, ge=1, le=1000, description="size-penalised-mean: rosters above it play as their top N"
    )
    teams: int | None = Field(
        None,
        ge=2,
        le=MAX_TEAMS,
        description=f"queue shape: teams per match ({MANY_TEAMS_LIMIT} at most, or {MAX_TEAMS} for teams "
        f"of {MANY_TEAMS_SIZE} or fewer players)",
    )
    team_size: int | None = Field(None, ge=1, le=100, description="queue shape: players per team")
    team_size_min: int | None = Field(
        None,
        ge=1,
        le=100,
        description="queue: the fewest players a team may start with (default and null: team_size); the "
        "size a match accepts falls from full to this over relax_seconds of its longest wait",
    )
    teams_min: int | None = Field(
        None,
        ge=2,
        le=MAX_TEAMS,
        description="queue: the fewest teams a match may start with (default and null: teams), for "
        "free-for-all and battle royale; relaxes as team_size_min does",
    )
    roles: dict[Identifier, Annotated[int, Field(ge=1, le=100)]] | None = Field(
        None,
        min_length=1,
        max_length=MAX_ROLES,
        description="queue: the composition of every team, players per role, adding up to team_size "
        '(e.g. {"tank": 1, "healer": 1, "damage": 3}); tickets then list each player\'s roles; null '
        "removes it",
    )
    min_matches_for_leaderboard: int | None = Field(
        None,
        ge=0,
        le=1_000_000,
        description="placement matches: a player with fewer is provisional and off the leaderboard "
        "(the same number as placement_matches)",
    )
    placement_matches: int | None = Field(
        None,
        ge=0,
        le=1_000_000,
        description="matches a player is provisional for (placement n of N); the same setting as "
        "min_matches_for_leaderboard: give either, or both equal",
    )
    drift_per_day: float | None = Field(
        None,
        ge=0,
        le=1e6,
        allow_inf_nan=False,
        description="skill drift gamma per day (seed 001 eq. 4): before a player's next match sigma² "
        "grows by drift_per_day² per day since their last match; 0 (default) for none",
    )
    tiers: list[TierIn] | None = Field(
        None,
        max_length=MAX_TIERS,
        description="tiers on the displayed rating, ascending by min with distinct names; [] removes "
        "them. The lowest holds everyone below the second",
    )
    demotion_margin: float | None = Field(
        None,
        ge=0,
        le=1e15,
        allow_inf_nan=False,
        description="a player is demoted only below their tier's min minus this (displayed units)",
    )
    display_scale: float | None = Field(
        None,
        gt=0,
        le=1e9,
        allow_inf_nan=False,
        description="displayed rating = display_offset + display_scale · conservative (clients round it)",
    )
    display_offset: float | None = Field(None, ge=-1e15, le=1e15, allow_inf_nan=False)
    quality_start: float | None = Field(None, ge=0, le=1, description="queue: quality a match needs at once")
    quality_floor: float | None = Field(None, ge=0, le=1, description="queue: quality needed after relaxing")
    relax_seconds: float | None = Field(
        None, ge=0, le=86_400, description="queue: wait to relax to the floor"
    )
    ticket_ttl_seconds: float | None = Field(None, ge=1, le=86_400, description="queue: ticket lifetime")
    max_latency_ms: float | None = Field(
        None,
        ge=0,
        le=60_000,
        allow_inf_nan=False,
        description="queue: a match forms only in a region where every ticket's latency is within this "
        "(tickets list `latencies`); null removes the rule",
    )
    max_latency_relaxed_ms: float | None = Field(
        None,
        ge=0,
        le=60_000,
        allow_inf_nan=False,
        description="queue: the latency limit after relax_seconds of wait (default: max_latency_ms)",
    )
    accept_timeout_s: float | None = Field(
        None,
        ge=1,
        le=300,
        allow_inf_nan=False,
        description="queue: the ready check; every player of a proposal must accept it within this many "
        "seconds, or it fails (null, the default: no ready check, proposals are accepted at once)",
    )


QUEUE_DEFAULTS = {
    "quality_start": 0.4,
    "quality_floor": 0.05,
    "relax_seconds": 60.0,
    "ticket_ttl_seconds": 300.0,
}
# Seed 002 eq. 4 (the paper's values).
PERFORMANCE_DEFAULTS = {
    "size_penalty_c0": PAPER_C0,
    "size_penalty_c1": PAPER_C1,
    "roster_cap": PAPER_ROSTER_CAP,
}
# Mode settings kept in the `settings` JSON column rather than a column of their own.
SETTINGS_DEFAULTS: dict[str, float] = {**QUEUE_DEFAULTS, **PERFORMANCE_DEFAULTS}
# Settings that may be unset (null: no latency rule, no composition, no smaller matches), also
# kept in `settings`.
LATENCY_SETTINGS = ("max_latency_ms", "max_latency_relaxed_ms")
SHAPE_SETTINGS = ("roles", "team_size_min", "teams_min")
READY_SETTINGS = ("accept_timeout_s",)
NULLABLE_SETTINGS = (*LATENCY_SETTINGS, *SHAPE_SETTINGS, *READY_SETTINGS)


class ModeOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    name: str
    mu: float
    sigma: float
    beta: float
    tau: float
    draw_probability: float
    conservative_k: float
    team_performance: str
    tie_model: str
    size_penalty_c0: float
    size_penalty_c1: float
    roster_cap: int
    teams: int
    team_size: int
    teams_min: int
    team_size_min: int
    roles: dict[str, int] | None
    min_matches_for_leaderboard: int
    placement_matches: int = Field(description="the same number as min_matches_for_leaderboard")
    drift_per_day: float
    drift_as_of: dt.datetime | None = Field(
        description="the instant the leaderboards' conservative ratings are drifted to (moved to the "
        "present at least every 12 hours); null without drift"
    )
    tiers: list[Tier]
    demotion_margin: float
    display_scale: float
    display_offset: float
    quality_start: float
    quality_floor: float
    relax_seconds: float
    ticket_ttl_seconds: float
    max_latency_ms: float | None
    max_latency_relaxed_ms: float | None
    accept_timeout_s: float | None
    created_at: dt.datetime
    updated_at: dt.datetime

    @classmethod
    def of(cls, mode: object, **extra: object) -> Self:
        settings = {**SETTINGS_DEFAULTS, **(getattr(mode, "settings", None) or {})}
        stored = {*SETTINGS_DEFAULTS, *NULLABLE_SETTINGS, "placement_matches", "tiers"}
        fields = {
            name: getattr(mode, name) for name in cls.model_fields if name not in stored and name not in extra
        }
        latency = {k: settings.get(k) for k in (*LATENCY_SETTINGS, *READY_SETTINGS)}
        # The minimums read as the full size when unset.
        shape = {
            "roles": settings.get("roles"),
            "team_size_min": settings.get("team_size_min") or fields["team_size"],
            "teams_min": settings.get("teams_min") or fields["teams"],
        }
        ranking = {
            "placement_matches": fields["min_matches_for_leaderboard"],
            "tiers": getattr(mode, "tiers", None) or [],
        }
        return cls(
            **fields, **{k: settings[k] for k in SETTINGS_DEFAULTS}, **latency, **shape, **ranking, **extra
        )


# How a new season starts from the old one (app.seasons; the formula is in docs/api.md).
Reset = Literal["none", "soft", "hard"]


class SeasonOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    name: str
    ordinal: int = Field(description="0 for the mode's first season, then 1, 2, ...")
    reset: Reset = Field(description="the reset the season started with")
    pull: float
    widen: float
    started_at: dt.datetime
    ended_at: dt.datetime | None = Field(description="null for the current season")
    players: int | None = Field(description="ended seasons: rated players archived")
    ranked: int | None = Field(description="ended seasons: players on its final leaderboard")


class ModeDetail(ModeOut):
    """One mode with its seasons."""

    season: SeasonOut = Field(description="the current season")
    past_seasons: list[SeasonOut] = Field(
        description="ended seasons, latest first; GET /v1/leaderboards/{mode}?season=NAME reads one"
    )


class ModeChanged(ModeOut):
    """The mode as written by a PUT."""

    replay_recommended: bool = Field(
        description="true when this change altered a rating parameter (mu, sigma, beta, tau, "
        "draw_probability, tie_model, team_performance, size_penalty_c0, size_penalty_c1, "
        "roster_cap) of a mode that already has matches: stored ratings keep the old "
        'parameters until a replay job (POST /v1/modes/{mode}/jobs {"kind": "replay"}) '
        "re-rates the history"
    )
    retier_job: str | None = Field(
        description="the job (GET /v1/jobs/{job_id}) re-tiering the mode's players when this change "
        "altered what places the tiers (tiers, demotion_margin, display_scale, display_offset, "
        "conservative_k, placement_matches); null otherwise. Until it is done, a player it has not "
        "reached is placed by the new settings at their next match, and GET /v1/modes/{mode}/tiers "
        "counts them under `retiering`. A change of conservative_k or drift_per_day makes the same job "
        "re-score the leaderboard first, in batches; leaderboard reads say `rescoring` until it is done",
    )


class ModeList(BaseModel):
    modes: list[ModeOut]
