"""Job heartbeats: a job whose process died is taken up again by another.

A running job's process touches `heartbeat_at` every few seconds. A job still `running`
with a heartbeat older than a minute lost its process (kill -9, a crash, a lost machine);
the next claim runs it again from the start (replay and smooth build in new rows and swap,
so a rerun is safe). `attempts` bounds that: after the third start it fails instead.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("jobs", sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("jobs", sa.Column("attempts", sa.Integer(), server_default=sa.text("0"), nullable=False))


def downgrade() -> None:
    op.drop_column("jobs", "attempts")
    op.drop_column("jobs", "heartbeat_at")
