"""Seasons: a mode's named seasons and the archived standings of the ones that ended.

`seasons` holds one row per season of a mode; the current one has no `ended_at`. A
season's matches are those whose `applied_seq` lies in (start_seq, end_seq]: the switch
reads the high-water mark of `match_applied_seq` while it holds the mode's exclusive lock,
so every match falls on one side of it by commit order.

`season_standings` keeps the ratings of an ended season as they were at the switch: every
rated player, with the rank they held (null when below the leaderboard's minimum of
matches). `player_id` is a plain column (no foreign key): erasure rewrites it to a
pseudonym and the row keeps its rank, rating and counts.

Revision ID: 0008_h5
Revises: 0007
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0008_h5"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "seasons",
        sa.Column("mode", sa.String(length=128), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("ordinal", sa.Integer(), nullable=False),
        sa.Column("reset", sa.String(length=8), nullable=False),
        sa.Column("pull", sa.Double(), nullable=False),
        sa.Column("widen", sa.Double(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("start_seq", sa.BigInteger(), nullable=False),
        sa.Column("end_seq", sa.BigInteger(), nullable=True),
        sa.Column("players", sa.BigInteger(), nullable=True),
        sa.Column("ranked", sa.BigInteger(), nullable=True),
        sa.Column("min_matches", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["mode"], ["modes.name"], name=op.f("fk_seasons_mode_modes"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("mode", "name", name=op.f("pk_seasons")),
        sa.UniqueConstraint("mode", "ordinal", name=op.f("uq_seasons_mode")),
        sa.CheckConstraint("reset IN ('none', 'soft', 'hard')", name=op.f("ck_seasons_reset")),
    )
    op.create_table(
        "season_standings",
        sa.Column("mode", sa.String(length=128), nullable=False),
        sa.Column("season", sa.String(length=128), nullable=False),
        sa.Column("player_id", sa.String(length=128), nullable=False),
        sa.Column("rank", sa.BigInteger(), nullable=True),
        sa.Column("mu", sa.Double(), nullable=False),
        sa.Column("sigma", sa.Double(), nullable=False),
        sa.Column("conservative", sa.Double(), nullable=False),
        sa.Column("matches", sa.Integer(), nullable=False),
        sa.Column("wins", sa.Integer(), nullable=False),
        sa.Column("losses", sa.Integer(), nullable=False),
        sa.Column("draws", sa.Integer(), nullable=False),
        sa.Column("last_played_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["mode", "season"],
            ["seasons.mode", "seasons.name"],
            name=op.f("fk_season_standings_mode_seasons"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("mode", "season", "player_id", name=op.f("pk_season_standings")),
    )
    op.create_index(
        "ix_season_standings_rank",
        "season_standings",
        ["mode", "season", "rank"],
        postgresql_where=sa.text("rank IS NOT NULL"),
    )


def downgrade() -> None:
    op.drop_index("ix_season_standings_rank", table_name="season_standings")
    op.drop_table("season_standings")
    op.drop_table("seasons")
