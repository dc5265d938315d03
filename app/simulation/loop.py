"""What both clocks keep of a run and how both tally a match (pure).

The virtual clock (virtual.py) and the live clock (live.py) play one scenario's loop, on
simulated time or through HTTP; what the loop is made of is the same for both, so it lives
here once: the players' behaviour, their rating columns, the run's record, who is offline,
their roles and avoid lists (`LoopState.of`), a party's arrival (`LoopState.arrive`), the
tally of played matches (`LoopState.tally`): the record's match row and, per player, the Elo
baseline's new rating and the match's score, and a result once its players see it
(`LoopState.seen`). The tally is vectorised over matches of one
size (matches × teams × players); the live clock tallies its one match as a batch of one. A
game a player left is tallied alone with its players' partial play (`LoopState.tally_partial`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.simulation.baselines import elo_deltas
from app.simulation.leaving import Leaving
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
    leaving: Leaving | None  # who leaves a match in play (None: nobody does)

    @classmethod
    def of(cls, scenario: Scenario, population: Population, streams: Streams) -> LoopState:
        """Every player offline, rated as the population starts (Elo at the mode's mu)."""
        mode, spec = scenario.mode, scenario.population
        leaves = scenario.sessions.leave_probability
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
            Recorder(
                len(population),
                ready_check=mode.accept_timeout_s is not None,
                leaving=leaves > 0,
                # The service's backfills serve modes without roles only (app.queues.backfills).
                backfill=leaves > 0 and mode.shape.composition is None,
            ),
            Offline(population.home, len(population.regions)),
            Roles(scenario, population) if population.preference is not None else None,
            AvoidLists(len(population), spec.avoid_probability, spec.avoid_list, streams.avoidance),
            Leaving(leaves, streams.leaving) if leaves > 0 else None,
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
        score = _scores(placed)[:, :, None] * np.ones(size)
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

    def tally_partial(
        self,
        teams: Sequence[IntArray],
        weights: Sequence[FloatArray],
        placed: FloatArray,
        outcome: int,
        mu: Sequence[FloatArray],
        sigma: Sequence[FloatArray],
        formed: float,
        quality: float,
        region: str | None,
    ) -> Tallied:
        """One game a player left, rated with partial play: per team its players, their
        weights (the share of the game each played), ratings before (`mu`, `sigma`), and the
        teams' places (1 first). Records the game (its prediction from the weighted sums: a team
        performs Σ w·p, its gap Σ w·mu and spread Σ w²·(sigma² + β²)) and returns, flat in team
        order, the players' new Elo (the team plays at its weighted mean, each player moving by
        their weight times the team's Δ) and their team's score."""
        beta = self.mode.beta
        count = len(teams)
        elo = [self.columns.elo[team] for team in teams]
        level = np.array([float((e * w).sum() / w.sum()) for e, w in zip(elo, weights, strict=True)])
        delta = elo_deltas(level[None, :, None], placed[None], beta)[0]
        score = _scores(placed[None])[0]
        gap = float((weights[0] * mu[0]).sum() - (weights[1] * mu[1]).sum()) if count == 2 else math.nan
        spread = sum(
            float((w * w * (s * s + beta * beta)).sum()) for w, s in zip(weights, sigma, strict=True)
        )
        index = {name: number for number, name in enumerate(self.regions)}
        self.recorder.matches(
            np.array([formed]),
            np.array([quality]),
            np.array([gap]),
            np.array([spread]),
            np.array([outcome], dtype=np.int64),
            np.array([index.get(region or "", -1)], dtype=np.int64),
            np.array([sum(len(team) for team in teams)], dtype=np.int64),
        )
        return Tallied(
            np.concatenate([e + w * delta[t] for t, (e, w) in enumerate(zip(elo, weights, strict=True))]),
            np.concatenate([np.full(len(team), score[t]) for t, team in enumerate(teams)]),
        )

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


def _scores(placed: FloatArray) -> FloatArray:
    """Per match and team, its score: its duels won, a draw half, over its duels."""
    teams = placed.shape[1]
    duels = np.where(placed[:, :, None] < placed[:, None, :], 1.0, 0.0)
    duels = np.where(placed[:, :, None] == placed[:, None, :], 0.5, duels)
    scores: FloatArray = (duels * (1.0 - np.eye(teams))).sum(axis=2) / (teams - 1)
    return scores
