"""What a ticket carries beyond its players' ratings: their roles and whom they avoid (pure).

Both clocks build tickets from these, so a virtual and a live run of one scenario queue the
same roles and avoid lists. Roles are each player's preferences (population.py draws one of
the scenario's `population.roles` per player, for the whole run); a party's mates are kept
only while their roles can still fill one team of the composition, as the service refuses a
party that cannot (app.queues.service). Avoid lists grow after matches: each player, with
`population.avoid_probability`, adds one of the match's other players (teammate or
opponent alike), keeping the `avoid_list` most recent.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from app.matchmaking.pool import TicketRoles
from app.matchmaking.roles import Composition
from app.simulation.population import Population
from app.simulation.scenario import Scenario

IntArray = npt.NDArray[np.int64]


class Roles:
    """The players' role preferences under the mode's composition."""

    def __init__(self, scenario: Scenario, population: Population) -> None:
        composition = scenario.mode.shape.composition
        if composition is None or population.preference is None:
            # An `if`, not an assert: asserts vanish under `python -O`.
            raise ValueError(
                "roles need a mode with a role composition and a population with role preferences"
            )
        self.composition: Composition = composition
        self.kinds = tuple(preference.accepts for preference in scenario.population.roles)
        self.masks = [composition.mask(accepts) for accepts in self.kinds]
        # Per player, the index of the role they list first (the report's "first choice").
        self.first = np.array(
            [composition.roles.index(accepts[0]) for accepts in self.kinds], dtype=np.int64
        )[population.preference]
        self.preference = population.preference.tolist()
        # One tuple per party's kinds, shared: the pool's matchers read roles by identity first.
        self._tickets: dict[tuple[int, ...], TicketRoles] = {}

    def fits(self, players: list[int]) -> bool:
        """Whether these players' roles can all be seated in one team."""
        return self.composition.fits([self.masks[self.preference[p]] for p in players])

    def ticket(self, players: list[int]) -> TicketRoles:
        """The roles each player of the ticket lists, in their order of preference."""
        kinds = tuple(self.preference[p] for p in players)
        found = self._tickets.get(kinds)
        if found is None:
            found = self._tickets[kinds] = tuple(self.kinds[kind] for kind in kinds)
        return found

    def index(self, role: str) -> int:
        return self.composition.roles.index(role)


class AvoidLists:
    """Each player's avoid list, most recent last."""

    def __init__(self, players: int, probability: float, keep: int, rng: np.random.Generator) -> None:
        if keep < 0:
            raise ValueError(f"an avoid list keeps 0 or more players, got {keep}")
        self.lists: list[list[int]] = [[] for _ in range(players)]
        self.probability, self.keep, self.rng = probability, keep, rng

    def __bool__(self) -> bool:
        return self.probability > 0

    def after_match(self, players: IntArray) -> None:
        """Each of the match's players adds one of the others, with the scenario's probability."""
        if self.probability <= 0 or len(players) < 2:
            return
        count = len(players)
        chosen = np.flatnonzero(self.rng.random(count) < self.probability)
        # Another of the match's players, uniformly: a draw among the count − 1 others.
        others = self.rng.integers(0, count - 1, len(chosen))
        others += others >= chosen
        for position, other in zip(chosen.tolist(), others.tolist(), strict=True):
            listed = self.lists[int(players[position])]
            avoided = int(players[other])
            if avoided in listed:
                listed.remove(avoided)
            listed.append(avoided)
            # Not `del listed[:-keep]`: with keep 0 that slice is empty and nothing is dropped.
            del listed[: len(listed) - self.keep]

    def of(self, players: list[int]) -> tuple[int, ...]:
        """The ticket's avoid list: its players' lists, less its own players (the service
        refuses a ticket avoiding its own)."""
        if len(players) == 1:
            return tuple(self.lists[players[0]])
        own = set(players)
        return tuple(dict.fromkeys(a for p in players for a in self.lists[p] if a not in own))
