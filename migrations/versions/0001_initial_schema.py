"""Initial schema: the tables of DESIGN.md, and the `default` mode.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("scopes", postgresql.ARRAY(sa.String(length=32)), nullable=False),
        sa.Column("bootstrap", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
    )
    op.create_table(
        "modes",
        sa.Column("name", sa.String(length=128), nullable=False),
        sa.Column("mu", sa.Double(), server_default=sa.text("25.0"), nullable=False),
        sa.Column("sigma", sa.Double(), server_default=sa.text("8.333333333333334"), nullable=False),
        sa.Column("beta", sa.Double(), server_default=sa.text("4.166666666666667"), nullable=False),
        sa.Column("tau", sa.Double(), server_default=sa.text("0.08333333333333334"), nullable=False),
        sa.Column("draw_probability", sa.Double(), server_default=sa.text("0.1"), nullable=False),
        sa.Column("conservative_k", sa.Double(), server_default=sa.text("3.0"), nullable=False),
        sa.Column("team_performance", sa.String(length=32), server_default=sa.text("'sum'"), nullable=False),
        sa.Column("tie_model", sa.String(length=32), server_default=sa.text("'chain'"), nullable=False),
        sa.Column("teams", sa.Integer(), server_default=sa.text("2"), nullable=False),
        sa.Column("team_size", sa.Integer(), server_default=sa.text("1"), nullable=False),
        sa.Column("min_matches_for_leaderboard", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column(
            "settings",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(
            "draw_probability >= 0 AND draw_probability < 1", name=op.f("ck_modes_draw_probability")
        ),
        sa.CheckConstraint("sigma > 0 AND beta > 0 AND tau >= 0", name=op.f("ck_modes_positive_scales")),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_modes")),
    )
    op.create_table(
        "players",
        sa.Column("id", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_players")),
    )
    op.create_table(
        "jobs",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("mode", sa.String(length=128), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=16), server_default=sa.text("'queued'"), nullable=False),
        sa.Column("progress", sa.Double(), server_default=sa.text("0.0"), nullable=False),
        sa.Column(
            "params",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        sa.Column("result", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.CheckConstraint("status IN ('queued', 'running', 'done', 'failed')", name=op.f("ck_jobs_status")),
        sa.ForeignKeyConstraint(
            ["mode"], ["modes.name"], name=op.f("fk_jobs_mode_modes"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_jobs")),
    )
    op.create_table(
        "matches",
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("match_id", sa.String(length=128), nullable=False),
        sa.Column("mode", sa.String(length=128), nullable=False),
        sa.Column("played_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("body_hash", sa.String(length=64), nullable=False),
        sa.Column("quality", sa.Double(), nullable=False),
        sa.Column("response", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("void", sa.Boolean(), server_default=sa.text("false"), nullable=False),
        sa.Column("applied_seq", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["mode"], ["modes.name"], name=op.f("fk_matches_mode_modes"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_matches")),
        sa.UniqueConstraint("match_id", name=op.f("uq_matches_match_id")),
    )
    op.create_index("ix_matches_mode_played_at", "matches", ["mode", "played_at", "id"], unique=False)
    op.create_table(
        "ratings",
        sa.Column("player_id", sa.String(length=128), nullable=False),
        sa.Column("mode", sa.String(length=128), nullable=False),
        sa.Column("mu", sa.Double(), nullable=False),
        sa.Column("sigma", sa.Double(), nullable=False),
        sa.Column("conservative", sa.Double(), nullable=False),
        sa.Column("matches", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("wins", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("losses", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("draws", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("last_played_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint("sigma > 0", name=op.f("ck_ratings_positive_sigma")),
        sa.ForeignKeyConstraint(
            ["mode"], ["modes.name"], name=op.f("fk_ratings_mode_modes"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name=op.f("fk_ratings_player_id_players"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("player_id", "mode", name=op.f("pk_ratings")),
    )
    op.create_index(
        "ix_ratings_leaderboard",
        "ratings",
        ["mode", sa.literal_column("conservative DESC"), "player_id"],
        unique=False,
    )
    op.create_table(
        "match_players",
        sa.Column("match_pk", sa.BigInteger(), nullable=False),
        sa.Column("player_id", sa.String(length=128), nullable=False),
        sa.Column("mode", sa.String(length=128), nullable=False),
        sa.Column("team", sa.Integer(), nullable=False),
        sa.Column("rank", sa.Double(), nullable=False),
        sa.Column("weight", sa.Double(), server_default=sa.text("1.0"), nullable=False),
        sa.Column("mu_before", sa.Double(), nullable=False),
        sa.Column("sigma_before", sa.Double(), nullable=False),
        sa.Column("mu_after", sa.Double(), nullable=False),
        sa.Column("sigma_after", sa.Double(), nullable=False),
        sa.ForeignKeyConstraint(
            ["match_pk"], ["matches.id"], name=op.f("fk_match_players_match_pk_matches"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["player_id"], ["players.id"], name=op.f("fk_match_players_player_id_players"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("match_pk", "player_id", name=op.f("pk_match_players")),
    )
    op.create_index(
        "ix_match_players_player",
        "match_players",
        ["player_id", "mode", sa.literal_column("match_pk DESC")],
        unique=False,
    )
    op.execute("CREATE SEQUENCE match_applied_seq")
    # A fresh install has a `default` mode with the TrueSkill defaults (API.md, Game modes).
    op.execute("INSERT INTO modes (name) VALUES ('default')")


def downgrade() -> None:
    op.drop_index("ix_match_players_player", table_name="match_players")
    op.drop_table("match_players")
    op.drop_index("ix_ratings_leaderboard", table_name="ratings")
    op.drop_table("ratings")
    op.drop_index("ix_matches_mode_played_at", table_name="matches")
    op.drop_table("matches")
    op.execute("DROP SEQUENCE match_applied_seq")
    op.drop_table("jobs")
    op.drop_table("players")
    op.drop_table("modes")
    op.drop_table("api_keys")
