"""Drop match_players' foreign key to matches.

A match row and its participants are now written by one statement (POST /v1/matches, the
batch; import writes both in one transaction), and matches are never deleted (a mode, whose
deletion cascaded to its matches, is never deleted either), so the check never fails. It
cost about a third of a batch's participant inserts: per participant row an after-trigger,
an index probe and a row lock on a match row the same transaction had just written
(docs/benchmarks.md, "Group commit and the batch endpoint"). As 0005 did for players.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_constraint("fk_match_players_match_pk_matches", "match_players", type_="foreignkey")


def downgrade() -> None:
    op.create_foreign_key(
        "fk_match_players_match_pk_matches",
        "match_players",
        "matches",
        ["match_pk"],
        ["id"],
        ondelete="CASCADE",
    )
