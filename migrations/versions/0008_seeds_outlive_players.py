"""Drop rating_seeds' foreign key to players: an erased player's seed stays, under its pseudonym.

DELETE /v1/players/{player_id} removes the players row and renames the player's rows to a
pseudonym (app.players.erasure). A replay starts each player at their seed: for a replay after
an erasure to give every other player the values it gave before, the pseudonym must start
where the player did, so the seed is kept under the pseudonym, which has no players row.
Seeds are written only with their player (PUT /v1/players/{player_id}/ratings/{mode}).

The downgrade drops the seeds of erased players (those without a players row) first.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.drop_constraint("fk_rating_seeds_player_id_players", "rating_seeds", type_="foreignkey")


def downgrade() -> None:
    op.execute(
        "DELETE FROM rating_seeds s WHERE NOT EXISTS (SELECT 1 FROM players p WHERE p.id = s.player_id)"
    )
    op.create_foreign_key(
        "fk_rating_seeds_player_id_players",
        "rating_seeds",
        "players",
        ["player_id"],
        ["id"],
        ondelete="CASCADE",
    )
