"""Smoothed learning curves (smooth jobs) and seeded ratings (replays start from them).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # One row per player and mode: the TrueSkill Through Time posterior at each day played.
    op.create_table(
        "learning_curves",
        sa.Column("mode", sa.String(length=128), nullable=False),
        sa.Column("player_id", sa.String(length=128), nullable=False),
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("days", postgresql.ARRAY(sa.Double()), nullable=False),
        sa.Column("mu", postgresql.ARRAY(sa.Double()), nullable=False),
        sa.Column("sigma", postgresql.ARRAY(sa.Double()), nullable=False),
        sa.ForeignKeyConstraint(
            ["mode"], ["modes.name"], name=op.f("fk_learning_curves_mode_modes"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("mode", "player_id", name=op.f("pk_learning_curves")),
    )
    # What an admin set with PUT /v1/players/{id}/ratings/{mode}: a replay starts there.
    op.create_table(
        "rating_seeds",
        sa.Column("player_id", sa.String(length=128), nullable=False),
        sa.Column("mode", sa.String(length=128), nullable=False),
        sa.Column("mu", sa.Double(), nullable=False),
        sa.Column("sigma", sa.Double(), nullable=False),
        sa.Column("set_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["mode"], ["modes.name"], name=op.f("fk_rating_seeds_mode_modes"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name=op.f("fk_rating_seeds_player_id_players"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("player_id", "mode", name=op.f("pk_rating_seeds")),
    )
    op.create_index("ix_jobs_status", "jobs", ["status", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_jobs_status", table_name="jobs")
    op.drop_table("rating_seeds")
    op.drop_table("learning_curves")
