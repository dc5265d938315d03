"""Re-scoring in batches: where a rewrite of a mode's stored `conservative` has reached.

A change of a mode's conservative_k or drift_per_day used to rewrite every rating's
`conservative` in the PUT's transaction, one statement under the mode's lock (posts waited
for it). The PUT now sets `modes.rescore_after` to '' and a job (the re-tier job, kind
`retier`) rewrites the rows in player id order, a short transaction per batch, moving the
column on to the last id it rewrote; NULL once every row is scored by the mode's current
settings. The daily drift re-rank (app.leaderboards.drift) walks the same way, so a walk
cut short (a crash, a restart) resumes where it stopped.

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0017"
down_revision: str | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("modes", sa.Column("rescore_after", sa.String(128), nullable=True))


def downgrade() -> None:
    op.drop_column("modes", "rescore_after")
