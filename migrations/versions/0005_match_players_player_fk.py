"""Drop match_players' foreign key to players.

Every participant row is written in the transaction that creates its player (POST
/v1/matches, import), and players are never deleted, so the check never fails; it
cost 40% of a bulk load (a row lock on the player for every participant row).
The foreign key to the match stays.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_constraint("fk_match_players_player_id_players", "match_players", type_="foreignkey")


def downgrade() -> None:
    op.create_foreign_key(
        "fk_match_players_player_id_players",
        "match_players",
        "players",
        ["player_id"],
        ["id"],
        ondelete="CASCADE",
    )
