"""Season standings partitioned by season: an archive filled without indexes, ranked once.

Migration 0009's archive was one table whose every row paid, as the switch's job inserted it,
a primary-key insert, a rank-index insert (in random rank order) and a foreign-key check: half
the switch's cost (docs/benchmarks.md, "Where the switch's time goes"). Now:

- `seasons.id`, a single-column key of a season, which `season_standings` is partitioned by
  (LIST, one partition per ended season, `season_standings_<id>`); the archive's reads name it,
  so they read one partition.
- The switch creates the ending season's partition as a plain table (no index, no foreign
  key, a CHECK of its season id so that attaching it needs no scan), not attached: the job's
  chunks and the posts' trigger (`season_catch_up`) insert there, unranked.
- Once no row is behind, the job copies it ranked (a window function) into a fresh table,
  builds its primary key and rank index by sort, swaps it in under the same name and attaches
  it (the foreign key to `seasons` is then checked in one query). Until then the season's
  archive answers 503, as it did until it was ranked.

`season_catch_up` now takes the players as a list, a range of ids (the job's chunks: one
index range, no id array), or both, and archives them unranked.

Existing archives move into partitions: attached for ranked seasons, left to their job (which
ranks every row again) for a season still being archived.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_COLUMNS = """
    player_id varchar(128) NOT NULL,
    rank bigint,
    mu float8 NOT NULL,
    sigma float8 NOT NULL,
    conservative float8 NOT NULL,
    matches integer NOT NULL,
    wins integer NOT NULL,
    losses integer NOT NULL,
    draws integer NOT NULL,
    last_played_at timestamptz
"""
_VALUES = "player_id, rank, mu, sigma, conservative, matches, wins, losses, draws, last_played_at"

# Archive then reset the mode's rows behind its season among `p_players` (when given) and with
# ids in [p_from, p_to) (each bound when given), locking them in code-point order of player id:
# the order a match post proposes its players' rows (the trigger of 0009 catches them up one
# by one), so the job's chunks and the posts never wait on each other in a cycle. The rows go
# unranked into the ending season's partition (`season_standings_<id>`, app.seasons.repository
# names it too), which is not attached yet. EXECUTE plans each call with its values, so the
# absent filters fold away. Returns the rows reset.
_CATCH_UP = """
CREATE FUNCTION season_catch_up(p_mode varchar, p_players varchar[] DEFAULT NULL,
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

# 0009's function, for the downgrade.
_CATCH_UP_0009 = """
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


def _seasons_with_rows() -> list[tuple[int, bool]]:
    """(id, ranked) of every ended season: each gets a partition."""
    rows = op.get_bind().execute(
        sa.text("SELECT id, ranked IS NOT NULL FROM seasons WHERE ended_at IS NOT NULL ORDER BY id")
    )
    return [(int(r[0]), bool(r[1])) for r in rows]


def upgrade() -> None:
    op.add_column("seasons", sa.Column("id", sa.BigInteger(), sa.Identity(always=False), nullable=False))
    op.create_unique_constraint(op.f("uq_seasons_id"), "seasons", ["id"])
    op.execute("DROP FUNCTION season_catch_up(varchar, varchar[], bigint[])")
    op.execute("ALTER TABLE season_standings RENAME TO season_standings_0009")
    op.execute("ALTER INDEX ix_season_standings_rank RENAME TO ix_season_standings_0009_rank")
    op.execute("ALTER TABLE season_standings_0009 RENAME CONSTRAINT pk_season_standings TO pk_ss_0009")
    op.execute(
        "ALTER TABLE season_standings_0009 RENAME CONSTRAINT fk_season_standings_mode_seasons TO fk_ss_0009"
    )
    op.execute(f"""
        CREATE TABLE season_standings (
            season_id bigint NOT NULL,
            {_COLUMNS},
            CONSTRAINT pk_season_standings PRIMARY KEY (season_id, player_id),
            CONSTRAINT fk_season_standings_season_id_seasons FOREIGN KEY (season_id)
                REFERENCES seasons (id) ON DELETE CASCADE
        ) PARTITION BY LIST (season_id)
    """)
    op.execute(
        "CREATE INDEX ix_season_standings_rank ON season_standings (season_id, rank) WHERE rank IS NOT NULL"
    )
    for season_id, ranked in _seasons_with_rows():
        part = f"season_standings_{season_id}"
        op.execute(
            f"CREATE TABLE {part} (LIKE season_standings INCLUDING DEFAULTS,"
            f" CONSTRAINT ck_{part}_season CHECK (season_id = {season_id}))"
        )
        op.execute(f"""
            INSERT INTO {part} (season_id, {_VALUES})
            SELECT s.id, {", ".join("a." + c.strip() for c in _VALUES.split(","))}
            FROM season_standings_0009 a JOIN seasons s ON s.mode = a.mode AND s.name = a.season
            WHERE s.id = {season_id}
        """)
        if ranked:  # a season still being archived is left to its job, which ranks it
            op.execute(f"ALTER TABLE season_standings ATTACH PARTITION {part} FOR VALUES IN ({season_id})")
    op.execute("DROP TABLE season_standings_0009")
    op.execute(_CATCH_UP)


def downgrade() -> None:
    op.execute("DROP FUNCTION season_catch_up(varchar, varchar[], varchar, varchar)")
    op.execute("ALTER TABLE season_standings RENAME TO season_standings_0010")
    op.execute("ALTER INDEX ix_season_standings_rank RENAME TO ix_season_standings_0010_rank")
    op.execute("ALTER TABLE season_standings_0010 RENAME CONSTRAINT pk_season_standings TO pk_ss_0010")
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
    for season_id, _ in _seasons_with_rows():
        part = f"season_standings_{season_id}"
        if op.get_bind().execute(sa.text("SELECT to_regclass(:t)"), {"t": part}).scalar() is None:
            continue
        # Attached or still being filled (its rows unranked: 0009's job ranks them).
        op.execute(f"""
            INSERT INTO season_standings (mode, season, {_VALUES})
            SELECT s.mode, s.name, {", ".join("a." + c.strip() for c in _VALUES.split(","))}
            FROM {part} a JOIN seasons s ON s.id = a.season_id
        """)
        op.execute(f"DROP TABLE {part}")
    op.execute("DROP TABLE season_standings_0010")
    op.drop_constraint(op.f("uq_seasons_id"), "seasons", type_="unique")
    op.drop_column("seasons", "id")
    op.execute(_CATCH_UP_0009)
