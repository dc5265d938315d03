"""Per-player team-performance coefficients (team_performance "weighted", seed 002 §2).

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Null where the match gave none; a replay needs them to rate the match again.
    op.add_column("match_players", sa.Column("coefficient", sa.Double(), nullable=True))


def downgrade() -> None:
    op.drop_column("match_players", "coefficient")
