"""Store a match's response as `json` (its text, checked once) instead of `jsonb`.

The stored response is only ever read back whole (a retry's answer, GET /v1/matches/{id}, a
void) and rewritten whole (a replay); erasure is the one statement that edits inside it, and
casts. `jsonb` parsed every document into its binary form on write: about 900 bytes per 2v2
match. pgbench of the batch's shape did 4,800-5,000 matches/s with jsonb and 5,590 with json
in the same period, and 193,651 documents took 2.1 s to store as jsonb against 0.7 s as json
(docs/benchmarks.md, "The batch against PostgreSQL alone").

The upgrade rewrites the matches table once.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute("ALTER TABLE matches ALTER COLUMN response TYPE json USING CAST(response AS json)")


def downgrade() -> None:
    op.execute("ALTER TABLE matches ALTER COLUMN response TYPE jsonb USING CAST(response AS jsonb)")
