"""The season catch-up locks ratings in the order match posts lock them.

`season_catch_up` (migrations 0010, 0015, 0016) locked the rows it archives and resets in
`player_id COLLATE "C"` order (code points), while a match post locks its players' ratings
`ORDER BY r.mode, r.player_id` in the database's default collation
(app.matches.repository._LOCK), as the re-tier and re-score batches do. Under a linguistic
collation the two orders differ for some pairs of ids ('a-b' and 'ab', 'B' and 'a'): a season's
reset chunk and a post sharing two such players could each hold one row and wait for the
other, a deadlock PostgreSQL breaks by failing one of them. The catch-up now locks in the
default collation, the order of every other writer of ratings rows (docs/design.md).

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0018"
down_revision: str | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The posts' order within one mode: player id in the default collation (one mode per call).
POSTS_ORDER = "player_id"
# 0016's order, for the downgrade.
CODE_POINT_ORDER = 'player_id COLLATE "C"'


def _catch_up(order: str) -> str:
    """0016's season_catch_up, locking its rows in `order`."""
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
           m.min_matches_for_leaderboard AS least, m.tier_version
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
        ORDER BY {order} FOR UPDATE', 'season_standings_' || s.archive)
    USING p_mode, s.ordinal, p_players, p_from, p_to, s.archive, s.tiers;
    EXECUTE '
        UPDATE ratings
        SET mu = season_mu(mu, $6, $8), sigma = season_sigma(sigma, $7, $9),
            conservative = season_mu(mu, $6, $8) - $10 * season_sigma(sigma, $7, $9),
            matches = 0, wins = 0, losses = 0, draws = 0, last_played_at = NULL, season = $2,
            tier = CASE WHEN $14 = 0 THEN ranked_tier($11, $12, $13,
                        season_mu(mu, $6, $8) - $10 * season_sigma(sigma, $7, $9)) END,
            tier_version = $15,
            updated_at = now()
        WHERE ' || picked
    USING p_mode, s.ordinal, p_players, p_from, p_to, s.mu0, s.sigma0, s.pull, s.widen, s.k,
          s.tiers, s.display_scale, s.display_offset, s.least, s.tier_version;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END
$$
"""


def upgrade() -> None:
    op.execute(_catch_up(POSTS_ORDER))


def downgrade() -> None:
    op.execute(_catch_up(CODE_POINT_ORDER))
