"""TrueSkill Through Time (seed 001 §2.3): a whole history smoothed by message passing.

Games are grouped into batches by time. Each player's skill has one variable per batch they
play in, linked to their previous batch's by the drift N(0, gamma²·elapsed). Information
flows forward (the prior out of the past), backward (the likelihood out of the future) and
within a batch (the other games). `convergence()` alternates backward and forward sweeps
over the batches, re-running every game with its within-batch prior, until no posterior
moves more than epsilon: the same schedule as the `trueskillthroughtime` package, so that
results agree with it iteration by iteration.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from app.rating.history.game import Game, Player
from app.rating.history.gaussian import INF, Gaussian, Ninf

Composition = Sequence[Sequence[Sequence[str]]]


@dataclass(slots=True)
class _Agent:
    player: Player
    message: Gaussian = field(default_factory=lambda: Ninf)
    last_time: float = -INF

    def receive(self, elapsed: float) -> Gaussian:
        """The forward message into a batch: the last one, drifted; the prior at first play."""
        if self.message.sigma == INF:
            return self.player.prior
        return self.message.forget(self.player.gamma, elapsed)


@dataclass(slots=True)
class _Skill:
    forward: Gaussian
    elapsed: float
    backward: Gaussian = field(default_factory=lambda: Ninf)
    likelihood: Gaussian = field(default_factory=lambda: Ninf)

    def posterior(self) -> Gaussian:
        return self.likelihood * self.backward * self.forward


@dataclass(slots=True)
class _Event:
    names: list[list[str]]
    result: list[float]
    weights: list[list[float]] | None
    likelihoods: list[list[Gaussian]]
    log_evidence: float = 0.0


def _elapsed(last_time: float, now: float) -> float:
    if last_time == -INF:
        return 0.0
    if last_time == INF:
        return 1.0
    return now - last_time


class Batch:
    """The games that share one time, with each player's skill variable at that time."""

    def __init__(self, time: float, agents: dict[str, _Agent], p_draw: float) -> None:
        self.time = time
        self.agents = agents
        self.p_draw = p_draw
        self.skills: dict[str, _Skill] = {}
        self.events: list[_Event] = []

    def __len__(self) -> int:
        return len(self.events)

    def add(
        self,
        composition: Composition,
        results: Sequence[Sequence[float]] | None,
        weights: Sequence[Sequence[Sequence[float]]],
    ) -> None:
        start = len(self.events)
        for index, teams in enumerate(composition):
            names = [list(team) for team in teams]
            result = (
                list(results[index]) if results else [float(len(names) - 1 - t) for t in range(len(names))]
            )
            event_weights = [list(w) for w in weights[index]] if weights else None
            self.events.append(_Event(names, result, event_weights, [[Ninf] * len(t) for t in names]))
            for team in names:
                for name in team:
                    if name not in self.skills:
                        elapsed = _elapsed(self.agents[name].last_time, self.time)
                        self.skills[name] = _Skill(self.agents[name].receive(elapsed), elapsed)
        self.iteration(start)

    def posterior(self, name: str) -> Gaussian:
        return self.skills[name].posterior()

    def posteriors(self) -> dict[str, Gaussian]:
        return {name: skill.posterior() for name, skill in self.skills.items()}

    def iteration(self, start: int = 0) -> None:
        """Re-run every game from `start` with its within-batch priors (posterior without
        the game's own message), and swap in the new messages."""
        for event in self.events[start:]:
            teams = []
            for names, likelihoods in zip(event.names, event.likelihoods, strict=True):
                team = []
                for name, likelihood in zip(names, likelihoods, strict=True):
                    player = self.agents[name].player
                    team.append(Player(self.skills[name].posterior() / likelihood, player.beta, player.gamma))
                teams.append(team)
            game = Game(teams, event.result, self.p_draw, event.weights)
            for names, olds, news in zip(event.names, event.likelihoods, game.likelihoods, strict=True):
                for position, (name, new) in enumerate(zip(names, news, strict=True)):
                    skill = self.skills[name]
                    skill.likelihood = skill.likelihood / olds[position] * new
                    olds[position] = new
            event.log_evidence = game.log_evidence

    def convergence(self, epsilon: float = 1e-6, iterations: int = 20) -> int:
        step = INF
        done = 0
        while step > epsilon and done < iterations:
            old = self.posteriors()
            self.iteration()
            step = _largest_change(old, self.posteriors())
            done += 1
        return done

    def forward_prior_out(self, name: str) -> Gaussian:
        skill = self.skills[name]
        return skill.forward * skill.likelihood

    def backward_prior_out(self, name: str) -> Gaussian:
        skill = self.skills[name]
        return (skill.likelihood * skill.backward).forget(self.agents[name].player.gamma, skill.elapsed)


def _largest_change(old: Mapping[str, Gaussian], new: Mapping[str, Gaussian]) -> float:
    step = 0.0
    for name, before in old.items():
        d_mu, d_sigma = before.delta(new[name])
        step = max(step, d_mu, d_sigma)
    return step


class History:
    """`History(composition, results=None, times=None, priors=None, mu=0, sigma=6, beta=1,
    gamma=0.03, p_draw=0, weights=None)`, the `trueskillthroughtime` call shape.

    composition[g] lists game g's teams, each a list of player names; results[g] the teams'
    scores (higher is better; default: listed order is finishing order); times[g] its time
    (default: one batch per game, one time unit apart); priors maps names to Players.
    """

    def __init__(
        self,
        composition: Composition,
        results: Sequence[Sequence[float]] | None = None,
        times: Sequence[float] | None = None,
        priors: Mapping[str, Player] | None = None,
        mu: float = 0.0,
        sigma: float = 6.0,
        beta: float = 1.0,
        gamma: float = 0.03,
        p_draw: float = 0.0,
        weights: Sequence[Sequence[Sequence[float]]] | None = None,
    ) -> None:
        results = list(results) if results is not None and len(results) else None
        times = list(times) if times is not None and len(times) else None
        weights = list(weights) if weights is not None and len(weights) else None
        for name, values in (("results", results), ("times", times), ("weights", weights)):
            if values is not None and len(values) != len(composition):
                raise ValueError(f"{name} has {len(values)} entries for {len(composition)} games")
        if times is not None and any(not math.isfinite(float(t)) for t in times):
            raise ValueError("times must be finite")
        self.mu, self.sigma, self.beta, self.gamma, self.p_draw = mu, sigma, beta, gamma, p_draw
        priors = priors or {}
        self.agents: dict[str, _Agent] = {}
        self.batches: list[Batch] = []
        self.timed = times is not None
        self.size = 0
        self._extend(composition, results, times, weights, priors)

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"History(Events={self.size}, Batches={len(self.batches)}, Agents={len(self.agents)})"

    def _extend(
        self,
        composition: Composition,
        results: Sequence[Sequence[float]] | None,
        times: Sequence[float] | None,
        weights: Sequence[Sequence[Sequence[float]]] | None,
        priors: Mapping[str, Player],
    ) -> None:
        for teams in composition:
            for team in teams:
                for name in team:
                    if name not in self.agents:
                        player = priors.get(name) or Player(
                            Gaussian(self.mu, self.sigma), self.beta, self.gamma
                        )
                        self.agents[name] = _Agent(player)
        count = len(composition)
        order = sorted(range(count), key=lambda g: times[g]) if times is not None else list(range(count))
        i = 0
        while i < count:
            j = i + 1
            if times is not None:
                now = float(times[order[i]])
                while j < count and times[order[j]] == now:
                    j += 1
            else:
                now = float(self.size + i + 1)
            chosen = order[i:j]
            batch = Batch(now, self.agents, self.p_draw)
            batch.add(
                [composition[g] for g in chosen],
                [results[g] for g in chosen] if results is not None else None,
                [weights[g] for g in chosen] if weights is not None else [],
            )
            self.batches.append(batch)
            for name in batch.skills:
                agent = self.agents[name]
                agent.last_time = now if self.timed else INF
                agent.message = batch.forward_prior_out(name)
            i = j
        self.size += count

    def iteration(self) -> float:
        """One backward and one forward sweep over the batches; the largest posterior change."""
        step = 0.0
        self._clean()
        for j in range(len(self.batches) - 2, -1, -1):
            later = self.batches[j + 1]
            for name in later.skills:
                self.agents[name].message = later.backward_prior_out(name)
            batch = self.batches[j]
            old = batch.posteriors()
            for name, skill in batch.skills.items():
                skill.backward = self.agents[name].message
            batch.iteration()
            step = max(step, _largest_change(old, batch.posteriors()))
        self._clean()
        for j in range(1, len(self.batches)):
            earlier = self.batches[j - 1]
            for name in earlier.skills:
                self.agents[name].message = earlier.forward_prior_out(name)
            batch = self.batches[j]
            old = batch.posteriors()
            for name, skill in batch.skills.items():
                skill.forward = self.agents[name].receive(skill.elapsed)
            batch.iteration()
            step = max(step, _largest_change(old, batch.posteriors()))
        if len(self.batches) == 1:
            old = self.batches[0].posteriors()
            self.batches[0].convergence()
            step = max(step, _largest_change(old, self.batches[0].posteriors()))
        return step

    def _clean(self) -> None:
        for agent in self.agents.values():
            agent.message = Ninf

    def convergence(
        self, epsilon: float = 1e-6, iterations: int = 30, verbose: bool = False
    ) -> tuple[float, int]:
        step = INF
        done = 0
        while step > epsilon and done < iterations:
            step = self.iteration()
            done += 1
            if verbose:
                print(f"Iteration = {done}, step = {step}")
        return step, done

    def learning_curves(self) -> dict[str, list[tuple[float, Gaussian]]]:
        curves: dict[str, list[tuple[float, Gaussian]]] = {}
        for batch in self.batches:
            for name in batch.skills:
                curves.setdefault(name, []).append((batch.time, batch.posterior(name)))
        return curves

    def log_evidence(self) -> float:
        return math.fsum(event.log_evidence for batch in self.batches for event in batch.events)
