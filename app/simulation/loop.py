"""What both clocks keep of a run and how both tally a match (pure).

The virtual clock (virtual.py) and the live clock (live.py) play one scenario's loop, on
simulated time or through HTTP; what the loop is made of is the same for both, so it lives
here once: the players' behaviour, their rating columns, the run's record, who is offline,
their roles and avoid lists (`LoopState.of`), a party's arrival (`LoopState.arrive`), the
tally of played matches (`LoopState.tally`): the record's match row and, per player, the Elo
baseline's new rating and the match's score, and a result once its players see it
(`LoopState.seen`). The tally is vectorised over matches of one
size (matches × teams × players); the live clock tallies its one match as a batch of one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.simulation.baselines import elo_deltas
from app.simulation.population import Behaviour, Offline, Population, Streams
from app.simulation.record import PlayerColumns, Recorder
from app.simulation.roster import AvoidLists, Roles
from app.simulation.scenario import ModeSettings, Scenario

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Tallied:
    """Per match, team and player (matches × teams × players): the Elo rating after the match,
    and the match's score (its duels won, a draw half, over the duels: 1, ½ or 0 in a duel)."""

    elo: FloatArray
    score: FloatArray


@dataclass(slots=True)
class LoopState:
    """A run's state, whichever clock plays it."""

    mode: ModeSettings
    regions: tuple[str, ...]
    skill_drift: float  # the true skills' drift, per match played (truth.skill_drift)
    behaviour: Behaviour
    outcomes: np.random.Generator  # the matches' outcomes and the true skills' drift
    answers: np.random.Generator  # the players' answers to the ready check
    columns: PlayerColumns
    recorder: Recorder
    offline: Offline
    roles: Roles | None
    avoid: AvoidLists

    @classmethod
    def of(cls, scenario: Scenario, population: Population, streams: Streams) -> LoopState:
        """Every player offline, rated as the population starts (Elo at the mode's mu)."""
        mode, spec = scenario.mode, scenario.population
        return cls(
            mode,
            tuple(population.regions),
            scenario.truth.skill_drift,
            Behaviour(scenario, streams.behaviour),
            streams.outcomes,
            streams.answers,
            PlayerColumns(
                population.skill.copy(),
                population.mu.copy(),
                population.sigma.copy(),
                np.full(len(population), mode.mu),
                mode.conservative_k,
            ),
            Recorder(len(population), ready_check=mode.accept_timeout_s is not None),
            Offline(population.home, len(population.regions)),
            Roles(scenario, population) if population.preference is not None else None,
            AvoidLists(len(population), spec.avoid_probability, spec.avoid_list, streams.avoidance),
        )

    def arrive(self) -> list[int]:
        """A party of the behaviour's size comes online: its players, taken from the offline
        ones (fewer when too few are offline; none, and counted as turned away, when none is)."""
        size = self.behaviour.party_size()
        roles = self.roles
        players = self.offline.take(self.behaviour.rng, size, roles.fits if roles is not None else None)
        if not players:
            self.recorder.turned_away += size
        return players

    def tally(
        self,
        players: IntArray,
        placed: FloatArray,
        outcome: IntArray,
        mu: FloatArray,
        sigma: FloatArray,
        formed: FloatArray,
        quality: FloatArray,
        regions: Sequence[str | None],
    ) -> Tallied:
        """Matches of one size played: `players` (matches × teams × players), their teams'
        places (matches × teams, 1 first, ties equal), outcomes (truth.py's codes, -1 beyond
        two teams), the players' ratings before (as `players`), and per match when it formed,
        its quality and region. Records the matches and returns the players' new Elo and
        their scores; the columns are the clock's to update, when the result is seen."""
        count, teams, size = players.shape
        beta = self.mode.beta
        elo = self.columns.elo[players]
        elo_after = elo + elo_deltas(elo, placed, beta)[:, :, None]
        duels = np.where(placed[:, :, None] < placed[:, None, :], 1.0, 0.0)
        duels = np.where(placed[:, :, None] == placed[:, None, :], 0.5, duels)
        score = ((duels * (1.0 - np.eye(teams))).sum(axis=2) / (teams - 1))[:, :, None] * np.ones(size)
        # What a prediction needs: the gap of the teams' Σ mu (two teams) and Σ (sigma² + β²).
        gap = mu[:, 0].sum(axis=1) - mu[:, 1].sum(axis=1) if teams == 2 else np.full(count, np.nan)
        index = {name: number for number, name in enumerate(self.regions)}
        self.recorder.matches(
            formed,
            quality,
            gap,
            (sigma**2 + beta * beta).sum(axis=(1, 2)),
            outcome,
            np.array([index.get(region or "", -1) for region in regions], dtype=np.int64),
            np.full(count, teams * size, dtype=np.int64),
        )
        return Tallied(elo_after, score)

    def seen(
        self, players: IntArray, mu: FloatArray, sigma: FloatArray, elo: FloatArray, score: FloatArray
    ) -> None:
        """A match's result seen by its players (flat, with their new ratings, Elo and score):
        their columns updated, their true skills drifted, their avoid lists grown."""
        columns = self.columns
        columns.mu[players] = mu
        columns.sigma[players] = sigma
        columns.elo[players] = elo
        if self.skill_drift > 0:
            columns.skill[players] += self.outcomes.normal(0.0, self.skill_drift, len(players))
        columns.finished(players, score)
        self.avoid.after_match(players)
