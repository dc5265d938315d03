"""Match fingerprints by meaning: stored body hashes rebuilt from the stored rows.

Before, `matches.body_hash` was sha256 of the body as sent, `played_at` included as written,
so the same instant in another offset, or a retry sending back the server-stamped
`played_at`, was a 409. Now it is app.matches.fingerprint: the mode and, per player sorted
by (team, id), team, id, rank, weight and coefficient as IEEE bytes; `played_at` is
compared as an instant against `matches.played_at`. Every stored match has its
participants in match_players, so the new form is rebuilt here, in SQL, for every row.

The downgrade keeps the new fingerprints: the old form hashed the body as sent, which is
not stored. After a downgrade a retry of an earlier match answers 409, never a second
rating.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The text app.matches.fingerprint hashes. COLLATE "C" sorts ids by code point, as Python's
# sorted() does; adding 0.0 folds -0.0 into 0.0, as the Python side does.
_FINGERPRINTS = """
    UPDATE matches AS m SET body_hash = f.fingerprint
    FROM (
        SELECT m.id, encode(sha256(convert_to(
            m.mode || string_agg(
                E'\\n' || p.team || E'\\t' || p.player_id
                || E'\\t' || encode(float8send(p.rank + 0.0::float8), 'hex')
                || E'\\t' || encode(float8send(p.weight + 0.0::float8), 'hex')
                || E'\\t' || encode(float8send(coalesce(p.coefficient, 1.0::float8) + 0.0::float8), 'hex'),
                '' ORDER BY p.team, p.player_id COLLATE "C"),
            'UTF8')), 'hex') AS fingerprint
        FROM matches AS m JOIN match_players AS p ON p.match_pk = m.id
        GROUP BY m.id, m.mode
    ) AS f
    WHERE m.id = f.id
"""


def upgrade() -> None:
    op.execute(_FINGERPRINTS)


def downgrade() -> None:
    pass
