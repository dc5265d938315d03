"""ORM models of the two tables the app reads and writes as objects: modes and API keys.

The schema's source of truth is the Alembic migrations (migrations/versions); every other
table is reached by the SQL of its package's repository. tests/db/test_migrations.py checks
that these models match the migrated tables (alembic check, limited to the modelled tables
by migrations/env.py)."""

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
    Identity,
    Integer,
    String,
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
    # Seed 001's gamma per day (migration 0015); the stored `conservative` is drifted to drift_as_of.
    drift_per_day: Mapped[float] = mapped_column(Double, server_default=text("0.0"))
    drift_as_of: Mapped[dt.datetime | None] = mapped_column(Timestamp)
    # Where the rewrite of the stored `conservative` after a change of k or drift (or the daily
    # re-rank) has reached: rows after this player id still hold the old value; NULL: none do
    # (migration 0017, app.leaderboards.rescore).
    rescore_after: Mapped[str | None] = mapped_column(ID)
    # [{"name", "min"}] ascending on the displayed rating, offset + scale · conservative.
    tiers: Mapped[list[dict[str, Any]] | None] = mapped_column(JSONB)
    demotion_margin: Mapped[float] = mapped_column(Double, server_default=text("0.0"))
    display_scale: Mapped[float] = mapped_column(Double, server_default=text("1.0"))
    display_offset: Mapped[float] = mapped_column(Double, server_default=text("0.0"))
    # Moved on by each change of the tier settings; ratings.tier_version says which placed a
    # row's tier (migration 0016, app.leaderboards.retier).
    tier_version: Mapped[int] = mapped_column(Integer, server_default=text("0"))
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
        CheckConstraint("drift_per_day >= 0", name="drift_per_day"),
        CheckConstraint("demotion_margin >= 0", name="demotion_margin"),
    )


class ApiKey(Base):
    """An API key: only its SHA-256 hash is stored."""

    __tablename__ = "api_keys"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(128))
    key_hash: Mapped[str] = mapped_column(String(64))
    scopes: Mapped[list[str]] = mapped_column(ARRAY(String(32)))
    # Mode names and prefixes ending in `*` the key is limited to (migration 0013); NULL: every mode.
    modes: Mapped[list[str] | None] = mapped_column(ARRAY(String(129)))
    bootstrap: Mapped[bool] = mapped_column(Boolean, server_default=text("false"))
    created_at: Mapped[dt.datetime] = mapped_column(Timestamp, server_default=func.now())
    revoked_at: Mapped[dt.datetime | None] = mapped_column(Timestamp)


class Season(Base):
    """A named season of a mode (migration 0009). The current one has no `ended_at`; its
    matches are those with `applied_seq` in (start_seq, end_seq]."""

    __tablename__ = "seasons"

    mode: Mapped[str] = mapped_column(ForeignKey("modes.name", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(ID, primary_key=True)
    # One column naming the season (migration 0010): what `season_standings` is partitioned by.
    id: Mapped[int] = mapped_column(BigInteger, Identity(always=False), unique=True)
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
