"""The queue of the virtual clock: waiting tickets as columns, from which each matchmaking
call's Pool is built (pure).

A ticket keeps what the service's pool record keeps (its players' Σ mu and Σ sigma² when it was
queued, its size, its latencies, its players' roles and avoid list) and, for the report, its
players' mean true skill, games played, home region and a solo player's first-choice role.
Rows stay in queueing order.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from app.matchmaking.latency import Latencies
from app.matchmaking.pool import Pool, TicketRoles

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class Waiting:
    """The queued tickets as columns (the rows a Pool is built from), in queueing order."""

    def __init__(self, regions: int, players: int = 0) -> None:
        """`players`: the population's size, when tickets carry avoid lists (player indices)."""
        self.count = 0
        self.ids: list[str] = []
        self.members: list[list[int]] = []
        self.roles: list[TicketRoles | None] = []
        self.avoid: list[tuple[int, ...]] = []
        self.avoiding = 0  # rows with an avoid list
        # Per player, the row of the ticket they wait on (set only while a pool is built).
        self.row_of = np.full(players, -1, dtype=np.int64)
        self.session = np.empty(64, dtype=np.int64)
        self.enqueued = np.empty(64)
        self.size = np.empty(64, dtype=np.int64)
        self.mu = np.empty(64)
        self.var = np.empty(64)
        self.skill = np.empty(64)
        self.played = np.empty(64)
        self.home = np.empty(64, dtype=np.int64)
        self.first_role = np.empty(64, dtype=np.int64)
        # When a failed ready check put the ticket back in the queue (first time; NaN: never).
        self.requeued = np.empty(64)
        self.latency = np.empty((64, regions)) if regions else None
        self.players = 0
        self.serial = 0

    def add(
        self,
        session: int,
        at: float,
        size: int,
        sums: tuple[float, float],
        latency: FloatArray | None,
        skill: float,
        played: float,
        home: int,
        members: list[int],
        roles: TicketRoles | None = None,
        avoid: tuple[int, ...] = (),
        first_role: int = -1,
    ) -> None:
        """A ticket: its session, when queued, its players, their Σ mu and Σ sigma², latencies,
        (for the report) their mean true skill, mean games played and home region, its players
        (population indices), their roles, their avoid list, and (for the report) a solo
        player's first-choice role (an index of the composition's roles; -1: none)."""
        if self.count == len(self.session):
            grow = len(self.session)
            self.session = np.concatenate([self.session, np.empty(grow, dtype=np.int64)])
            self.enqueued = np.concatenate([self.enqueued, np.empty(grow)])
            self.size = np.concatenate([self.size, np.empty(grow, dtype=np.int64)])
            self.mu = np.concatenate([self.mu, np.empty(grow)])
            self.var = np.concatenate([self.var, np.empty(grow)])
            self.skill = np.concatenate([self.skill, np.empty(grow)])
            self.played = np.concatenate([self.played, np.empty(grow)])
            self.home = np.concatenate([self.home, np.empty(grow, dtype=np.int64)])
            self.first_role = np.concatenate([self.first_role, np.empty(grow, dtype=np.int64)])
            self.requeued = np.concatenate([self.requeued, np.empty(grow)])
            if self.latency is not None:
                self.latency = np.concatenate([self.latency, np.empty((grow, self.latency.shape[1]))])
        row = self.count
        self.session[row], self.enqueued[row], self.size[row] = session, at, size
        self.mu[row], self.var[row] = sums
        self.skill[row], self.played[row], self.home[row] = skill, played, home
        self.first_role[row] = first_role
        self.requeued[row] = np.nan
        self.members.append(members)
        self.roles.append(roles)
        self.avoid.append(avoid)
        self.avoiding += bool(avoid)
        if self.latency is not None and latency is not None:
            self.latency[row] = latency
        self.ids.append(str(self.serial))
        self.serial += 1
        self.count += 1
        self.players += size

    def remove(self, rows: IntArray) -> None:
        keep = np.ones(self.count, dtype=bool)
        keep[rows] = False
        kept = np.flatnonzero(keep)
        n = len(kept)
        self.session[:n] = self.session[kept]
        self.enqueued[:n] = self.enqueued[kept]
        self.players -= int(self.size[rows].sum())
        self.size[:n] = self.size[kept]
        self.mu[:n] = self.mu[kept]
        self.var[:n] = self.var[kept]
        self.skill[:n] = self.skill[kept]
        self.played[:n] = self.played[kept]
        self.home[:n] = self.home[kept]
        self.first_role[:n] = self.first_role[kept]
        self.requeued[:n] = self.requeued[kept]
        if self.latency is not None:
            self.latency[:n] = self.latency[kept]
        rows_kept = kept.tolist()
        self.ids = [self.ids[i] for i in rows_kept]
        self.members = [self.members[i] for i in rows_kept]
        self.roles = [self.roles[i] for i in rows_kept]
        self.avoiding -= sum(bool(self.avoid[i]) for i in rows.tolist())
        self.avoid = [self.avoid[i] for i in rows_kept]
        self.count = n

    def pool(self, now: float, regions: tuple[str, ...]) -> Pool:
        n = self.count
        latencies = None
        if self.latency is not None:
            latencies = Latencies(regions, self.latency[:n].copy(), np.ones(n, dtype=np.bool_))
        return Pool(
            self.ids,
            self.size[:n].copy(),
            self.mu[:n].copy(),
            self.var[:n].copy(),
            now - self.enqueued[:n],
            np.zeros(n, dtype=np.int64),
            latencies,
            list(self.roles) if any(roles is not None for roles in self.roles) else None,
            self.clashes() if self.avoiding else None,
        )

    def clashes(self) -> IntArray:
        """Pairs (a, b), a < b, of rows whose tickets may not meet: either avoids a player of the
        other (app.matchmaking.avoid.clashing_rows, read by player index)."""
        n = self.count
        players = np.fromiter((p for members in self.members for p in members), dtype=np.int64)
        self.row_of[players] = np.repeat(np.arange(n), self.size[:n])
        pairs = []
        for row, avoided in enumerate(self.avoid):
            if avoided:
                others = self.row_of[np.array(avoided, dtype=np.int64)]
                others = others[(others >= 0) & (others != row)]
                pairs += [(min(row, o), max(row, o)) for o in others.tolist()]
        self.row_of[players] = -1
        return np.array(sorted(set(pairs)), dtype=np.int64).reshape(-1, 2)
