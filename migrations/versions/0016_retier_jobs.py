"""Re-tiering as a job (issue 39): which settings each stored tier was placed by.

A change of a mode's tier settings (tiers, demotion_margin, display_scale, display_offset, k,
placement matches) used to re-tier every player in the PUT's transaction, one statement over
the mode's rows. It now moves `modes.tier_version` on and queues a job that re-tiers the mode
in short batches (app.leaderboards.retier).

- `modes.tier_version`: bumped by each change of the tier settings.
- `ratings.tier_version`: the modes.tier_version the row's tier was placed by. A row behind
  the mode's is re-tiered by the job, or by a match that reaches it first (placed afresh where
  its rating lies, then stepped by the match), never twice: each writer compares the versions.
- `tier_deltas.version`: the counts keep each version apart, so GET /v1/modes/{mode}/tiers
  counts the players tiered by the current settings, exact after every commit, while the job
  moves the others over.
- season_catch_up stamps the reset row with the version its tier was placed by.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _track(version: bool) -> str:
    """0015's tier_track; with `version`, each delta row is of the version its tier was placed by."""
    keys = "mode, tier, version" if version else "mode, tier"
    new = "n.mode, n.tier, n.tier_version" if version else "n.mode, n.tier"
    old = "o.mode, o.tier, o.tier_version" if version else "o.mode, o.tier"
    groups = "1, 2, 3" if version else "1, 2"
    return f"""
CREATE OR REPLACE FUNCTION tier_track() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('app.leaderboard_bulk', true) = 'on' THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'INSERT' THEN
        INSERT INTO tier_deltas ({keys}, delta)
        SELECT {new}, count(*) FROM new_rows n WHERE n.tier IS NOT NULL GROUP BY {groups};
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO tier_deltas ({keys}, delta)
        SELECT {old}, -count(*) FROM old_rows o WHERE o.tier IS NOT NULL GROUP BY {groups};
    ELSE
        INSERT INTO tier_deltas ({keys}, delta)
        SELECT {keys}, sum(delta) FROM (
            SELECT {old}, -1 AS delta FROM old_rows o WHERE o.tier IS NOT NULL
            UNION ALL
            SELECT {new}, 1 FROM new_rows n WHERE n.tier IS NOT NULL
        ) AS moves ({keys}, delta)
        GROUP BY {keys}
        HAVING sum(delta) <> 0;
    END IF;
    RETURN NULL;
END
$$
"""


def _catch_up(version: bool) -> str:
    """0015's season_catch_up; with `version`, the reset row is stamped with the mode's tier_version."""
    return f"""
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
           m.min_matches_for_leaderboard AS least{", m.tier_version" if version else ""}
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
            {"tier_version = $15," if version else ""}
            updated_at = now()
        WHERE ' || picked
    USING p_mode, s.ordinal, p_players, p_from, p_to, s.mu0, s.sigma0, s.pull, s.widen, s.k,
          s.tiers, s.display_scale, s.display_offset, s.least{", s.tier_version" if version else ""};
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$
"""


def upgrade() -> None:
    op.add_column(
        "modes", sa.Column("tier_version", sa.Integer(), server_default=sa.text("0"), nullable=False)
    )
    op.add_column(
        "ratings", sa.Column("tier_version", sa.Integer(), server_default=sa.text("0"), nullable=False)
    )
    op.add_column(
        "tier_deltas", sa.Column("version", sa.Integer(), server_default=sa.text("0"), nullable=False)
    )
    op.drop_index("ix_tier_deltas_tier", table_name="tier_deltas")
    op.create_index(
        "ix_tier_deltas_tier", "tier_deltas", ["mode", "version", "tier"], postgresql_include=["delta"]
    )
    op.execute(_track(version=True))
    op.execute(_catch_up(version=True))


def downgrade() -> None:
    op.execute(_catch_up(version=False))
    op.execute(_track(version=False))
    op.drop_index("ix_tier_deltas_tier", table_name="tier_deltas")
    # The versions fold into one count per tier: each version's players sat in some tier.
    op.execute("""
        WITH gone AS (DELETE FROM tier_deltas RETURNING mode, tier, delta)
        INSERT INTO tier_deltas (mode, tier, delta)
        SELECT mode, tier, sum(delta) FROM gone GROUP BY mode, tier HAVING sum(delta) <> 0
    """)
    op.drop_column("tier_deltas", "version")
    op.create_index("ix_tier_deltas_tier", "tier_deltas", ["mode", "tier"], postgresql_include=["delta"])
    op.drop_column("ratings", "tier_version")
    op.drop_column("modes", "tier_version")
