"""Leaderboard ranks in O(buckets): per-bucket counts kept by a trigger on ratings.

A player's rank is one plus the number of eligible players ahead of them. Counting
those rows in the leaderboard index costs ~50 ms at a million players, so the ratings
table keeps a histogram of eligible players per bucket of `conservative`:
`leaderboard_deltas` receives +1/-1 rows from a statement trigger, in the writing
transaction (so a rank read right after a write sees it), and is compacted to one row
per bucket in the background. Inserting deltas never waits on another writer, unlike
updating shared counter rows. A rank is then the sum of the counts of the buckets
ahead plus an index count inside the player's own bucket.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# floor(conservative / width), clamped so that no finite value overflows bigint.
_BUCKET = """
CREATE FUNCTION leaderboard_bucket(conservative float8, width float8) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN greatest(least(floor(conservative / width), 4e18), -4e18)::bigint
"""

# Statement-level, with transition tables: one INSERT of deltas per writing statement.
# Bulk rewrites (replay, import) set app.leaderboard_bulk and rebuild the counts after.
_TRACK = """
CREATE FUNCTION leaderboard_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('app.leaderboard_bulk', true) = 'on' THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO leaderboard_deltas (mode, bucket, delta)
        SELECT n.mode, leaderboard_bucket(n.conservative, m.leaderboard_bucket_width), count(*)
        FROM new_rows n JOIN modes m ON m.name = n.mode
        WHERE n.matches >= m.min_matches_for_leaderboard
        GROUP BY 1, 2;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO leaderboard_deltas (mode, bucket, delta)
        SELECT o.mode, leaderboard_bucket(o.conservative, m.leaderboard_bucket_width), -count(*)
        FROM old_rows o JOIN modes m ON m.name = o.mode
        WHERE o.matches >= m.min_matches_for_leaderboard
        GROUP BY 1, 2;
    ELSE
        INSERT INTO leaderboard_deltas (mode, bucket, delta)
        SELECT mode, bucket, sum(delta) FROM (
            SELECT o.mode, leaderboard_bucket(o.conservative, m.leaderboard_bucket_width) AS bucket,
                   -1 AS delta
            FROM old_rows o JOIN modes m ON m.name = o.mode
            WHERE o.matches >= m.min_matches_for_leaderboard
            UNION ALL
            SELECT n.mode, leaderboard_bucket(n.conservative, m.leaderboard_bucket_width), 1
            FROM new_rows n JOIN modes m ON m.name = n.mode
            WHERE n.matches >= m.min_matches_for_leaderboard
        ) AS moves
        GROUP BY mode, bucket
        HAVING sum(delta) <> 0;
    END IF;
    RETURN NULL;
END
$$
"""


def upgrade() -> None:
    # Fixed when the mode is created (prior sigma / 64): changing it means recounting.
    op.add_column(
        "modes",
        sa.Column("leaderboard_bucket_width", sa.Double(), server_default=sa.text("0.13"), nullable=False),
    )
    op.execute("UPDATE modes SET leaderboard_bucket_width = sigma / 64")
    op.create_check_constraint("leaderboard_bucket_width", "modes", "leaderboard_bucket_width > 0")
    op.create_table(
        "leaderboard_deltas",
        sa.Column("id", sa.BigInteger(), sa.Identity(), nullable=False),
        sa.Column("mode", sa.String(length=128), nullable=False),
        sa.Column("bucket", sa.BigInteger(), nullable=False),
        sa.Column("delta", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["mode"], ["modes.name"], name=op.f("fk_leaderboard_deltas_mode_modes"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_leaderboard_deltas")),
    )
    op.create_index(
        "ix_leaderboard_deltas_bucket",
        "leaderboard_deltas",
        ["mode", "bucket"],
        postgresql_include=["delta"],
    )
    # Pages and in-bucket counts read only the index.
    op.drop_index("ix_ratings_leaderboard", table_name="ratings")
    op.create_index(
        "ix_ratings_leaderboard",
        "ratings",
        ["mode", sa.literal_column("conservative DESC"), "player_id"],
        postgresql_include=["mu", "sigma", "matches"],
    )
    op.execute(_BUCKET)
    op.execute(_TRACK)
    for event, referencing in (
        ("INSERT", "NEW TABLE AS new_rows"),
        ("UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"),
        ("DELETE", "OLD TABLE AS old_rows"),
    ):
        op.execute(
            f"CREATE TRIGGER leaderboard_{event.lower()} AFTER {event} ON ratings "
            f"REFERENCING {referencing} FOR EACH STATEMENT EXECUTE FUNCTION leaderboard_track()"
        )
    op.execute("""
        INSERT INTO leaderboard_deltas (mode, bucket, delta)
        SELECT r.mode, leaderboard_bucket(r.conservative, m.leaderboard_bucket_width), count(*)
        FROM ratings r JOIN modes m ON m.name = r.mode
        WHERE r.matches >= m.min_matches_for_leaderboard
        GROUP BY 1, 2
    """)


def downgrade() -> None:
    for event in ("insert", "update", "delete"):
        op.execute(f"DROP TRIGGER leaderboard_{event} ON ratings")
    op.execute("DROP FUNCTION leaderboard_track()")
    op.execute("DROP FUNCTION leaderboard_bucket(float8, float8)")
    op.drop_index("ix_ratings_leaderboard", table_name="ratings")
    op.create_index(
        "ix_ratings_leaderboard", "ratings", ["mode", sa.literal_column("conservative DESC"), "player_id"]
    )
    op.drop_index("ix_leaderboard_deltas_bucket", table_name="leaderboard_deltas")
    op.drop_table("leaderboard_deltas")
    op.drop_constraint(op.f("ck_modes_leaderboard_bucket_width"), "modes", type_="check")
    op.drop_column("modes", "leaderboard_bucket_width")
