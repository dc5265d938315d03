"""Small scenarios for the simulator's tests, built as a scenario file's tables would be."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from app.simulation.population import Population, Streams, build
from app.simulation.reading import scenario_of
from app.simulation.record import Run
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


def make_run(**columns: Any) -> Run:
    """A run with nothing in it but the given columns."""
    empty_f, empty_i = np.empty(0), np.empty(0, dtype=np.int64)
    values: dict[str, Any] = {
        "clock": "virtual",
        "pairing": "quality",
        "teams": 2,
        "duration": 3600.0,
        "wall_seconds": 1.0,
        "ticket_enqueued": empty_f,
        "ticket_waited": empty_f,
        "ticket_outcome": empty_i,
        "ticket_players": empty_i,
        "ticket_skill": empty_f,
        "ticket_played": empty_f,
        "ticket_region": empty_i,
        "ticket_role": empty_i,
        "ticket_seated": empty_i,
        "match_formed": empty_f,
        "match_quality": empty_f,
        "match_gap": empty_f,
        "match_spread": empty_f,
        "match_outcome": empty_i,
        "match_region": empty_i,
        "match_players": empty_i,
        "skill": empty_f,
        "games": empty_i,
        "score": empty_f,
        "mu": empty_f,
        "sigma": empty_f,
        "elo": empty_f,
        "checkpoints": (),
    }
    values.update(columns)
    if "match_players" not in columns:
        # Two players a match (TINY's 1v1) for every match the columns hold.
        values["match_players"] = np.full(len(values["match_gap"]), 2, dtype=np.int64)
    return Run(**values)
