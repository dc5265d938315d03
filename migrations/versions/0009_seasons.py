"""Seasons: a mode's named seasons and the archived standings of the ones that ended.

`seasons` holds one row per season of a mode; the current one has no `ended_at`. A
season's matches are those whose `applied_seq` lies in (start_seq, end_seq]: the switch
reads the high-water mark of `match_applied_seq` while it holds the mode's exclusive lock,
so every match falls on one side of it by commit order.

`season_standings` keeps the ratings of an ended season as they were at the switch: every
rated player, with the rank they held (null when below the leaderboard's minimum of
matches). `player_id` is a plain column (no foreign key): erasure rewrites it to a
pseudonym and the row keeps its rank, rating and counts.

The switch itself is O(1): under the mode's exclusive lock it records the boundary and
moves `modes.season` on. Each ratings row carries the season its values belong to
(`ratings.season`); a row behind its mode's season is archived and reset before anything
reads it for a write: by `season_catch_up`, which the switch job runs over every row in
chunks, and which a BEFORE INSERT trigger on ratings runs for the row being inserted. A
match post inserts its players' ratings (ON CONFLICT DO NOTHING) before it locks and reads
them, so the first match a player plays in a new season starts from their reset rating.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# The reset (docs/api.md, "Seasons"): one formula, hard = (1, 1), none = (0, 0); the ends are
# exact (the prior, or the value unchanged), not the formula's rounding.
_MU = """
CREATE FUNCTION season_mu(mu float8, mu0 float8, pull float8) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN pull = 0 THEN mu WHEN pull = 1 THEN mu0 ELSE mu0 + (1 - pull) * (mu - mu0) END
"""
_SIGMA = """
CREATE FUNCTION season_sigma(sigma float8, sigma0 float8, widen float8) RETURNS float8
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN widen = 0 THEN sigma WHEN widen = 1 THEN sigma0
            ELSE sqrt(sigma * sigma + widen * (sigma0 * sigma0 - sigma * sigma)) END
"""

# Archive then reset the given players' rows of the mode that are behind its season, locking
# them in code-point order of player id: the order a match post proposes its players' rows
# (the trigger below catches them up one by one) and the job's chunks go in, so the two never
# wait on each other in a cycle. `p_ranks` (the job's) gives each player's final rank, in
# the order of `p_players`; without it the row is ranked when the job completes. Returns the
# rows reset.
_CATCH_UP = """
CREATE FUNCTION season_catch_up(p_mode varchar, p_players varchar[], p_ranks bigint[] DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    s record;
    n integer;
BEGIN
    SELECT m.season AS ordinal, m.mu AS mu0, m.sigma AS sigma0, m.conservative_k AS k,
           cur.pull, cur.widen, prev.name AS archive
    INTO s
    FROM modes m
    JOIN seasons cur ON cur.mode = m.name AND cur.ordinal = m.season
    JOIN seasons prev ON prev.mode = m.name AND prev.ordinal = m.season - 1
    WHERE m.name = p_mode;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    INSERT INTO season_standings
        (mode, season, player_id, rank, mu, sigma, conservative, matches, wins, losses, draws,
         last_played_at)
    SELECT r.mode, s.archive, r.player_id, x.rank, r.mu, r.sigma, r.conservative, r.matches, r.wins,
           r.losses, r.draws, r.last_played_at
    FROM (SELECT * FROM ratings
          WHERE mode = p_mode AND player_id = ANY(p_players) AND season < s.ordinal
          ORDER BY player_id COLLATE "C" FOR UPDATE) AS r
    LEFT JOIN unnest(p_players, p_ranks) AS x(player_id, rank) ON x.player_id = r.player_id
    ON CONFLICT DO NOTHING;
    UPDATE ratings r
    SET mu = season_mu(r.mu, s.mu0, s.pull), sigma = season_sigma(r.sigma, s.sigma0, s.widen),
        conservative = season_mu(r.mu, s.mu0, s.pull) - s.k * season_sigma(r.sigma, s.sigma0, s.widen),
        matches = 0, wins = 0, losses = 0, draws = 0, last_played_at = NULL, season = s.ordinal,
        updated_at = now()
    WHERE r.mode = p_mode AND r.player_id = ANY(p_players) AND r.season < s.ordinal;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$
"""

# A new row belongs to its mode's current season; an existing row behind it (the insert
# will conflict) is caught up first, so the statement after sees the reset rating.
_STAMP = """
CREATE FUNCTION season_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    current_season integer;
BEGIN
    SELECT season INTO current_season FROM modes WHERE name = NEW.mode;
    NEW.season := coalesce(current_season, 0);
    -- One index probe on the common path: the row is current (or new), nothing to catch up.
    IF NEW.season > 0 AND EXISTS (
        SELECT 1 FROM ratings WHERE player_id = NEW.player_id AND mode = NEW.mode AND season < NEW.season
    ) THEN
        PERFORM season_catch_up(NEW.mode, ARRAY[NEW.player_id]::varchar[]);
    END IF;
    RETURN NEW;
END
$$
"""


def upgrade() -> None:
    # Existing rows (and modes) are in season 0; a mode's first switch moves it to 1.
    op.add_column("modes", sa.Column("season", sa.Integer(), server_default=sa.text("0"), nullable=False))
    op.add_column("ratings", sa.Column("season", sa.Integer(), server_default=sa.text("0"), nullable=False))
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
    op.execute(_MU)
    op.execute(_SIGMA)
    op.execute(_CATCH_UP)
    op.execute(_STAMP)
    op.execute(
        "CREATE TRIGGER season_stamp BEFORE INSERT ON ratings FOR EACH ROW EXECUTE FUNCTION season_stamp()"
    )


def downgrade() -> None:
    op.execute("DROP TRIGGER season_stamp ON ratings")
    op.execute("DROP FUNCTION season_stamp()")
    op.execute("DROP FUNCTION season_catch_up(varchar, varchar[], bigint[])")
    op.execute("DROP FUNCTION season_sigma(float8, float8, float8)")
    op.execute("DROP FUNCTION season_mu(float8, float8, float8)")
    op.drop_index("ix_season_standings_rank", table_name="season_standings")
    op.drop_table("season_standings")
    op.drop_table("seasons")
    op.drop_column("ratings", "season")
    op.drop_column("modes", "season")
