"""API keys limited to modes: `api_keys.modes`, mode names and prefixes ending in `*`.

NULL (every existing key) is a key for every mode, as before.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("api_keys", sa.Column("modes", postgresql.ARRAY(sa.String(length=129)), nullable=True))


def downgrade() -> None:
    # Dropping the limit would widen every limited key to all modes: revoke those keys first.
    op.execute("UPDATE api_keys SET revoked_at = now() WHERE modes IS NOT NULL AND revoked_at IS NULL")
    op.drop_column("api_keys", "modes")
