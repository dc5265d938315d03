"""Small scenarios for the simulator's tests, built as a scenario file's tables would be."""

from __future__ import annotations

import copy
from typing import Any

from app.simulation.population import Population, Streams, build
from app.simulation.reading import scenario_of
from app.simulation.scenario import Scenario

# 100 players, all online from the start, playing 1v1 matches of a minute for half an hour.
TINY: dict[str, Any] = {
    "seed": 7,
    "duration": "30m",
    "population": {"size": 100},
    "arrivals": {"players_per_second": 0.0, "initial_share": 1.0},
    "sessions": {"matches": 1000, "fixed": True, "pause_seconds": 5, "match_seconds": 60},
    "mode": {"teams": 2, "team_size": 1},
}


def scenario(name: str = "tiny", **tables: dict[str, Any] | Any) -> Scenario:
    """TINY with some tables' keys replaced (a table given as a dict is merged key by key)."""
    data = copy.deepcopy(TINY)
    for key, value in tables.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return scenario_of(data, name)


def population(of: Scenario) -> Population:
    return build(of, Streams.of(of.seed).population)
