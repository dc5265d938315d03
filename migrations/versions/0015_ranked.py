"""What players see of their rank: skill drift with time away, placements, tiers (issue 39).

- `modes.drift_per_day`: seed 001's gamma per day (eq. 4). Before a player's next match their
  variance grows by gamma² per day since their last match. `modes.drift_as_of` is the instant
  the stored `conservative` column (the leaderboards' order and counts) is drifted to: every
  statement that writes it drifts the row's sigma from its last_played_at to that instant
  (app.db.conservative), and a daily re-rank (app.leaderboards.drift) moves it forward.
- `modes.tiers` (JSON list of {name, min} ascending), `demotion_margin`, `display_scale` and
  `display_offset`; `ratings.tier`, the index of the player's tier in the list (NULL: no tier:
  not ranked yet, or the mode has none), written with the rating in the match's transaction.
- `tier_deltas`: +1/-1 rows per (mode, tier) from a statement trigger on ratings, in the writing
  transaction, folded in the background as `leaderboard_deltas` are (migration 0003): the tier
  counts are exact after every commit and cost a sum over a few rows per tier to read.
- `season_standings.tier`: the tier a player ended an archived season in, by name.

Placements need no column: `min_matches_for_leaderboard` is the number of placement matches
(docs/api.md).

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Statement-level with transition tables, as leaderboard_track; a player counts in their
# tier's row while the tier is set. Bulk rewrites (app.leaderboard_bulk) recount after.
_TRACK = """
CREATE FUNCTION tier_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('app.leaderboard_bulk', true) = 'on' THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO tier_deltas (mode, tier, delta)
        SELECT n.mode, n.tier, count(*) FROM new_rows n WHERE n.tier IS NOT NULL GROUP BY 1, 2;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO tier_deltas (mode, tier, delta)
        SELECT o.mode, o.tier, -count(*) FROM old_rows o WHERE o.tier IS NOT NULL GROUP BY 1, 2;
    ELSE
        INSERT INTO tier_deltas (mode, tier, delta)
        SELECT mode, tier, sum(delta) FROM (
            SELECT o.mode, o.tier, -1 AS delta FROM old_rows o WHERE o.tier IS NOT NULL
            UNION ALL
            SELECT n.mode, n.tier, 1 FROM new_rows n WHERE n.tier IS NOT NULL
        ) AS moves
        GROUP BY mode, tier
        HAVING sum(delta) <> 0;
    END IF;
    RETURN NULL;
END
$$
"""

# The tier a rating lies in without history (app.rating.tiers.Tiers.base, its Python twin):
# the highest of the ascending tiers whose min the displayed rating offset + scale · c reaches,
# the lowest below them all; NULL without tiers.
_RANKED_TIER = """
CREATE FUNCTION ranked_tier(p_tiers jsonb, p_scale float8, p_offset float8, p_conservative float8)
RETURNS smallint LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (
    SELECT CAST(greatest(count(*) FILTER (
        WHERE CAST(t ->> 'min' AS float8) <= p_offset + p_scale * p_conservative) - 1, 0)
        AS smallint)
    FROM jsonb_array_elements(coalesce(p_tiers, '[]'::jsonb)) AS t
    HAVING count(*) > 0
)
"""

# 0010's season_catch_up, which also archives the player's tier by name and re-tiers from the
# reset rating: placed where it lies when the reset player is on the leaderboard (a mode
# without placement matches), none while placing again.
_CATCH_UP = """
CREATE OR REPLACE FUNCTION season_catch_up(p_mode varchar, p_players varchar[] DEFAULT NULL,
                                           p_from varchar DEFAULT NULL, p_to varchar DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    s record;
    n integer;
    picked constant text := '
        mode = $1 AND season < $2 AND ($3 IS NULL OR player_id = ANY($3))
        AND ($4 IS NULL OR player_id >= $4) AND ($5 IS NULL OR player_id < $5)';
BEGIN
    SELECT m.season AS ordinal, m.mu AS mu0, m.sigma AS sigma0, m.conservative_k AS k,
           cur.pull, cur.widen, prev.id AS archive, m.tiers, m.display_scale, m.display_offset,
           m.min_matches_for_leaderboard AS least
    INTO s
    FROM modes m
    JOIN seasons cur ON cur.mode = m.name AND cur.ordinal = m.season
    JOIN seasons prev ON prev.mode = m.name AND prev.ordinal = m.season - 1
    WHERE m.name = p_mode;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    EXECUTE format('
        INSERT INTO %I (season_id, player_id, mu, sigma, conservative, matches, wins, losses, draws,
                        last_played_at, tier)
        SELECT $6, player_id, mu, sigma, conservative, matches, wins, losses, draws, last_played_at,
               $7 -> tier ->> ''name''
        FROM ratings WHERE ' || picked || '
        ORDER BY player_id COLLATE "C" FOR UPDATE', 'season_standings_' || s.archive)
    USING p_mode, s.ordinal, p_players, p_from, p_to, s.archive, s.tiers;
    EXECUTE '
        UPDATE ratings
        SET mu = season_mu(mu, $6, $8), sigma = season_sigma(sigma, $7, $9),
            conservative = season_mu(mu, $6, $8) - $10 * season_sigma(sigma, $7, $9),
            matches = 0, wins = 0, losses = 0, draws = 0, last_played_at = NULL, season = $2,
            tier = CASE WHEN $14 = 0 THEN ranked_tier($11, $12, $13,
                        season_mu(mu, $6, $8) - $10 * season_sigma(sigma, $7, $9)) END,
            updated_at = now()
        WHERE ' || picked
    USING p_mode, s.ordinal, p_players, p_from, p_to, s.mu0, s.sigma0, s.pull, s.widen, s.k,
          s.tiers, s.display_scale, s.display_offset, s.least;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$
"""

_CATCH_UP_0010 = """
CREATE OR REPLACE FUNCTION season_catch_up(p_mode varchar, p_players varchar[] DEFAULT NULL,
                                           p_from varchar DEFAULT NULL, p_to varchar DEFAULT NULL)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    s record;
    n integer;
    picked constant text := '
        mode = $1 AND season < $2 AND ($3 IS NULL OR player_id = ANY($3))
        AND ($4 IS NULL OR player_id >= $4) AND ($5 IS NULL OR player_id < $5)';
BEGIN
    SELECT m.season AS ordinal, m.mu AS mu0, m.sigma AS sigma0, m.conservative_k AS k,
           cur.pull, cur.widen, prev.id AS archive
    INTO s
    FROM modes m
    JOIN seasons cur ON cur.mode = m.name AND cur.ordinal = m.season
    JOIN seasons prev ON prev.mode = m.name AND prev.ordinal = m.season - 1
    WHERE m.name = p_mode;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    EXECUTE format('
        INSERT INTO %I (season_id, player_id, mu, sigma, conservative, matches, wins, losses, draws,
                        last_played_at)
        SELECT $6, player_id, mu, sigma, conservative, matches, wins, losses, draws, last_played_at
        FROM ratings WHERE ' || picked || '
        ORDER BY player_id COLLATE "C" FOR UPDATE', 'season_standings_' || s.archive)
    USING p_mode, s.ordinal, p_players, p_from, p_to, s.archive;
    EXECUTE '
        UPDATE ratings
        SET mu = season_mu(mu, $6, $8), sigma = season_sigma(sigma, $7, $9),
            conservative = season_mu(mu, $6, $8) - $10 * season_sigma(sigma, $7, $9),
            matches = 0, wins = 0, losses = 0, draws = 0, last_played_at = NULL, season = $2,
            updated_at = now()
        WHERE ' || picked
    USING p_mode, s.ordinal, p_players, p_from, p_to, s.mu0, s.sigma0, s.pull, s.widen, s.k;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$
"""


def upgrade() -> None:
    op.add_column(
        "modes", sa.Column("drift_per_day", sa.Double(), server_default=sa.text("0.0"), nullable=False)
    )
    op.add_column("modes", sa.Column("drift_as_of", sa.DateTime(timezone=True), nullable=True))
    op.add_column("modes", sa.Column("tiers", sa.dialects.postgresql.JSONB(), nullable=True))
    op.add_column(
        "modes", sa.Column("demotion_margin", sa.Double(), server_default=sa.text("0.0"), nullable=False)
    )
    op.add_column(
        "modes", sa.Column("display_scale", sa.Double(), server_default=sa.text("1.0"), nullable=False)
    )
    op.add_column(
        "modes", sa.Column("display_offset", sa.Double(), server_default=sa.text("0.0"), nullable=False)
    )
    op.create_check_constraint("drift_per_day", "modes", "drift_per_day >= 0")
    op.create_check_constraint("demotion_margin", "modes", "demotion_margin >= 0")
    op.add_column("ratings", sa.Column("tier", sa.SmallInteger(), nullable=True))
    op.add_column("season_standings", sa.Column("tier", sa.String(length=64), nullable=True))
    op.create_table(
        "tier_deltas",
        sa.Column("id", sa.BigInteger(), sa.Identity(), nullable=False),
        sa.Column("mode", sa.String(length=128), nullable=False),
        sa.Column("tier", sa.SmallInteger(), nullable=False),
        sa.Column("delta", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["mode"], ["modes.name"], name=op.f("fk_tier_deltas_mode_modes"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tier_deltas")),
    )
    op.create_index("ix_tier_deltas_tier", "tier_deltas", ["mode", "tier"], postgresql_include=["delta"])
    # A tier's page: its players in leaderboard order, read from the index alone.
    op.create_index(
        "ix_ratings_tier",
        "ratings",
        ["mode", "tier", sa.literal_column("conservative DESC"), "player_id"],
        postgresql_include=["mu", "sigma", "matches"],
        postgresql_where=sa.text("tier IS NOT NULL"),
    )
    op.execute(_RANKED_TIER)
    op.execute(_TRACK)
    for event, referencing in (
        ("INSERT", "NEW TABLE AS new_rows"),
        ("UPDATE", "OLD TABLE AS old_rows NEW TABLE AS new_rows"),
        ("DELETE", "OLD TABLE AS old_rows"),
    ):
        op.execute(
            f"CREATE TRIGGER tier_{event.lower()} AFTER {event} ON ratings "
            f"REFERENCING {referencing} FOR EACH STATEMENT EXECUTE FUNCTION tier_track()"
        )
    op.execute(_CATCH_UP)


def downgrade() -> None:
    op.execute(_CATCH_UP_0010)
    for event in ("insert", "update", "delete"):
        op.execute(f"DROP TRIGGER tier_{event} ON ratings")
    op.execute("DROP FUNCTION tier_track()")
    op.execute("DROP FUNCTION ranked_tier(jsonb, float8, float8, float8)")
    op.drop_index("ix_ratings_tier", table_name="ratings")
    op.drop_index("ix_tier_deltas_tier", table_name="tier_deltas")
    op.drop_table("tier_deltas")
    op.drop_column("season_standings", "tier")
    op.drop_column("ratings", "tier")
    op.drop_constraint(op.f("ck_modes_demotion_margin"), "modes", type_="check")
    op.drop_constraint(op.f("ck_modes_drift_per_day"), "modes", type_="check")
    for column in (
        "display_offset",
        "display_scale",
        "demotion_margin",
        "tiers",
        "drift_as_of",
        "drift_per_day",
    ):
        op.drop_column("modes", column)
