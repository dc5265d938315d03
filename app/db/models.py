"""The tables of DESIGN.md. Alembic owns the schema; these models mirror it."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Double,
    ForeignKey,
    ForeignKeyConstraint,
    Identity,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    func,
    text,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import Mapped, mapped_column

from app.db.base import Base

ID = String(128)
Timestamp = DateTime(timezone=True)


class Mode(Base):
    """A rating scale with its own model parameters and, optionally, a queue shape."""

    __tablename__ = "modes"

    name: Mapped[str] = mapped_column(ID, primary_key=True)
    mu: Mapped[float] = mapped_column(Double, server_default=text("25.0"))
    sigma: Mapped[float] = mapped_column(Double, server_default=text("8.333333333333334"))
    beta: Mapped[float] = mapped_column(Double, server_default=text("4.166666666666667"))
    tau: Mapped[float] = mapped_column(Double, server_default=text("0.08333333333333334"))
    draw_probability: Mapped[float] = mapped_column(Double, server_default=text("0.1"))
    conservative_k: Mapped[float] = mapped_column(Double, server_default=text("3.0"))
    team_performance: Mapped[str] = mapped_column(String(32), server_default=text("'sum'"))
    tie_model: Mapped[str] = mapped_column(String(32), server_default=text("'chain'"))
    teams: Mapped[int] = mapped_column(Integer, server_default=text("2"))
    team_size: Mapped[int] = mapped_column(Integer, server_default=text("1"))
    min_matches_for_leaderboard: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    # Width of the leaderboard's count buckets in `conservative`; fixed at creation (sigma/64).
    leaderboard_bucket_width: Mapped[float] = mapped_column(Double, server_default=text("0.13"))
    settings: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default=text("'{}'::jsonb"))
    # The ordinal of the current season (app.seasons); 0 until the first switch.
    season: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    created_at: Mapped[dt.datetime] = mapped_column(Timestamp, server_default=func.now())
    updated_at: Mapped[dt.datetime] = mapped_column(Timestamp, server_default=func.now())

    __table_args__ = (
        CheckConstraint("sigma > 0 AND beta > 0 AND tau >= 0", name="positive_scales"),
        CheckConstraint("draw_probability >= 0 AND draw_probability < 1", name="draw_probability"),
        CheckConstraint("leaderboard_bucket_width > 0", name="leaderboard_bucket_width"),
    )


class Player(Base):
    __tablename__ = "players"

    id: Mapped[str] = mapped_column(ID, primary_key=True)
    created_at: Mapped[dt.datetime] = mapped_column(Timestamp, server_default=func.now())


class Rating(Base):
    """One player's current skill in one mode, with counters."""

    __tablename__ = "ratings"

    player_id: Mapped[str] = mapped_column(ForeignKey("players.id", ondelete="CASCADE"), primary_key=True)
    mode: Mapped[str] = mapped_column(ForeignKey("modes.name", ondelete="CASCADE"), primary_key=True)
    mu: Mapped[float] = mapped_column(Double)
    sigma: Mapped[float] = mapped_column(Double)
    # mu − k·sigma with the mode's k, kept by the writing transaction for leaderboards.
    conservative: Mapped[float] = mapped_column(Double)
    matches: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    wins: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    losses: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    draws: Mapped[int] = mapped_column(Integer, server_default=text("0"))
    last_played_at: Mapped[dt.datetime | None] = mapped_column(Timestamp)
    updated_at: Mapped[dt.datetime] = mapped_column(Timestamp, server_default=func.now())
    # The season these values belong to; behind the mode's, the row awaits its archive and
    # reset (migration 0008's season_catch_up). Set on insert by a trigger.
    season: Mapped[int] = mapped_column(Integer, server_default=text("0"))

    __table_args__ = (
        Index(
            "ix_ratings_leaderboard",
            "mode",
            conservative.desc(),
            "player_id",
            postgresql_include=["mu", "sigma", "matches"],
        ),
        CheckConstraint("sigma > 0", name="positive_sigma"),
    )


class LeaderboardDelta(Base):
    """+n/-n eligible players in one bucket of `conservative`, written by a trigger on ratings
    (migration 0003) and compacted to one row per bucket in the background."""

    __tablename__ = "leaderboard_deltas"

    id: Mapped[int] = mapped_column(BigInteger, Identity(), primary_key=True)
    mode: Mapped[str] = mapped_column(ForeignKey("modes.name", ondelete="CASCADE"))
    bucket: Mapped[int] = mapped_column(BigInteger)
    delta: Mapped[int] = mapped_column(BigInteger)

    __table_args__ = (Index("ix_leaderboard_deltas_bucket", "mode", "bucket", postgresql_include=["delta"]),)


class Match(Base):
    """A rated match: the idempotency record and its stored response."""

    __tablename__ = "matches"

    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)
    match_id: Mapped[str] = mapped_column(ID, unique=True)
    mode: Mapped[str] = mapped_column(ForeignKey("modes.name", ondelete="CASCADE"))
    played_at: Mapped[dt.datetime] = mapped_column(Timestamp)
    body_hash: Mapped[str] = mapped_column(String(64))
    quality: Mapped[float] = mapped_column(Double)
    response: Mapped[dict[str, Any]] = mapped_column(JSONB)
    void: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    # The order ratings were applied in: drawn after the participants' rows are locked,
    # so matches that share a player are numbered in the order they changed ratings.
    applied_seq: Mapped[int | None] = mapped_column(BigInteger)
    created_at: Mapped[dt.datetime] = mapped_column(Timestamp, server_default=func.now())

    __table_args__ = (Index("ix_matches_mode_played_at", "mode", "played_at", "id"),)


class MatchPlayer(Base):
    """One participant of a match, with the rating before and after it."""

    __tablename__ = "match_players"

    match_pk: Mapped[int] = mapped_column(ForeignKey("matches.id", ondelete="CASCADE"), primary_key=True)
    # No foreign key to players: the row is written with its player (migration 0005).
    player_id: Mapped[str] = mapped_column(ID, primary_key=True)
    mode: Mapped[str] = mapped_column(ID)
    team: Mapped[int] = mapped_column(Integer)
    rank: Mapped[float] = mapped_column(Double)
    weight: Mapped[float] = mapped_column(Double, server_default=text("1.0"))
    # The team-performance coefficient the match gave (team_performance "weighted"), else null.
    coefficient: Mapped[float | None] = mapped_column(Double, nullable=True)
    mu_before: Mapped[float] = mapped_column(Double)
    sigma_before: Mapped[float] = mapped_column(Double)
    mu_after: Mapped[float] = mapped_column(Double)
    sigma_after: Mapped[float] = mapped_column(Double)

    __table_args__ = (Index("ix_match_players_player", "player_id", "mode", match_pk.desc()),)


class ApiKey(Base):
    """An API key: only its SHA-256 hash is stored."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    key_hash: Mapped[str] = mapped_column(String(64))
    scopes: Mapped[list[str]] = mapped_column(ARRAY(String(32)))
    bootstrap: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    created_at: Mapped[dt.datetime] = mapped_column(Timestamp, server_default=func.now())
    revoked_at: Mapped[dt.datetime | None] = mapped_column(Timestamp)


class Job(Base):
    """A history job (replay or smooth) and its progress."""

    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    mode: Mapped[str] = mapped_column(ForeignKey("modes.name", ondelete="CASCADE"))
    kind: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(16), server_default=text("'queued'"))
    progress: Mapped[float] = mapped_column(Double, server_default=text("0.0"))
    params: Mapped[dict[str, Any]] = mapped_column(JSONB, server_default=text("'{}'::jsonb"))
    result: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(Timestamp, server_default=func.now())
    started_at: Mapped[dt.datetime | None] = mapped_column(Timestamp)
    finished_at: Mapped[dt.datetime | None] = mapped_column(Timestamp)
    # Touched every few seconds by the running process; stale means that process died.
    heartbeat_at: Mapped[dt.datetime | None] = mapped_column(Timestamp)
    attempts: Mapped[int] = mapped_column(Integer, server_default=text("0"))

    __table_args__ = (
        CheckConstraint("status IN ('queued', 'running', 'done', 'failed')", name="status"),
        Index("ix_jobs_status", "status", "created_at"),
    )


class LearningCurve(Base):
    """A player's TrueSkill Through Time posterior at each day played, from a smooth job."""

    __tablename__ = "learning_curves"

    mode: Mapped[str] = mapped_column(ForeignKey("modes.name", ondelete="CASCADE"), primary_key=True)
    player_id: Mapped[str] = mapped_column(ID, primary_key=True)
    job_id: Mapped[str] = mapped_column(String(36))
    days: Mapped[list[float]] = mapped_column(ARRAY(Double))
    mu: Mapped[list[float]] = mapped_column(ARRAY(Double))
    sigma: Mapped[list[float]] = mapped_column(ARRAY(Double))


class RatingSeed(Base):
    """A rating an admin set (migrations from other systems): a replay starts the player there."""

    __tablename__ = "rating_seeds"

    player_id: Mapped[str] = mapped_column(ForeignKey("players.id", ondelete="CASCADE"), primary_key=True)
    mode: Mapped[str] = mapped_column(ForeignKey("modes.name", ondelete="CASCADE"), primary_key=True)
    mu: Mapped[float] = mapped_column(Double)
    sigma: Mapped[float] = mapped_column(Double)
    set_at: Mapped[dt.datetime] = mapped_column(Timestamp, server_default=func.now())


class Season(Base):
    """A named season of a mode (migration 0008). The current one has no `ended_at`; its
    matches are those with `applied_seq` in (start_seq, end_seq]."""

    __tablename__ = "seasons"

    mode: Mapped[str] = mapped_column(ForeignKey("modes.name", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(ID, primary_key=True)
    ordinal: Mapped[int] = mapped_column(Integer)
    reset: Mapped[str] = mapped_column(String(8))
    pull: Mapped[float] = mapped_column(Double)
    widen: Mapped[float] = mapped_column(Double)
    started_at: Mapped[dt.datetime] = mapped_column(Timestamp)
    ended_at: Mapped[dt.datetime | None] = mapped_column(Timestamp)
    start_seq: Mapped[int] = mapped_column(BigInteger)
    end_seq: Mapped[int | None] = mapped_column(BigInteger)
    # Filled when the season ends: rated players archived, those ranked, the minimum then.
    players: Mapped[int | None] = mapped_column(BigInteger)
    ranked: Mapped[int | None] = mapped_column(BigInteger)
    min_matches: Mapped[int | None] = mapped_column(Integer)

    __table_args__ = (
        UniqueConstraint("mode", "ordinal"),
        CheckConstraint("reset IN ('none', 'soft', 'hard')", name="reset"),
    )


class SeasonStanding(Base):
    """One player's rating, counts and rank at the end of a season. `player_id` has no
    foreign key: erasure rewrites it to a pseudonym, and the row keeps the rest."""

    __tablename__ = "season_standings"

    mode: Mapped[str] = mapped_column(ID, primary_key=True)
    season: Mapped[str] = mapped_column(ID, primary_key=True)
    player_id: Mapped[str] = mapped_column(ID, primary_key=True)
    rank: Mapped[int | None] = mapped_column(BigInteger)
    mu: Mapped[float] = mapped_column(Double)
    sigma: Mapped[float] = mapped_column(Double)
    conservative: Mapped[float] = mapped_column(Double)
    matches: Mapped[int] = mapped_column(Integer)
    wins: Mapped[int] = mapped_column(Integer)
    losses: Mapped[int] = mapped_column(Integer)
    draws: Mapped[int] = mapped_column(Integer)
    last_played_at: Mapped[dt.datetime | None] = mapped_column(Timestamp)

    __table_args__ = (
        ForeignKeyConstraint(["mode", "season"], ["seasons.mode", "seasons.name"], ondelete="CASCADE"),
        Index(
            "ix_season_standings_rank", "mode", "season", "rank", postgresql_where=text("rank IS NOT NULL")
        ),
    )
