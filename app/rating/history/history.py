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
from dataclasses import dataclass

from app.rating.history.game import (
    Game,
    Player,
    draw_margin,
    log_outcome_probability,
    truncation_message,
)
from app.rating.history.gaussian import INF, Gaussian

Composition = Sequence[Sequence[Sequence[str]]]


@dataclass(slots=True)
class _Agent:
    player: Player
    # The message passed along the player's chain of batches, (pi, tau); 0, 0 is none yet.
    message: tuple[float, float] = (0.0, 0.0)
    last_time: float = -INF

    def receive(self, elapsed: float) -> tuple[float, float]:
        """The forward message into a batch: the last one, drifted; the prior at first play."""
        pi, tau = self.message
        if pi == 0.0:
            return _natural(self.player.prior)
        return _drift(pi, tau, self.player.gamma, elapsed)


@dataclass(slots=True)
class _Skill:
    """One player's skill at one batch. Messages are kept in natural parameters (precision
    pi and precision·mean tau; the flat message is 0, 0), so products are sums."""

    fwd_pi: float
    fwd_tau: float
    elapsed: float
    bwd_pi: float = 0.0
    bwd_tau: float = 0.0
    lik_pi: float = 0.0
    lik_tau: float = 0.0

    def posterior(self) -> Gaussian:
        return Gaussian.natural(
            self.fwd_pi + self.bwd_pi + self.lik_pi, self.fwd_tau + self.bwd_tau + self.lik_tau
        )

    def moments(self) -> tuple[float, float]:
        pi = self.fwd_pi + self.bwd_pi + self.lik_pi
        if not pi > 0.0:
            return 0.0, INF
        return (self.fwd_tau + self.bwd_tau + self.lik_tau) / pi, math.sqrt(1.0 / pi)


def _drift(pi: float, tau: float, gamma: float, elapsed: float) -> tuple[float, float]:
    """Seed 001's dynamics: the variance grows by gamma² per unit of elapsed time."""
    if pi == INF:
        return pi, tau
    var = 1.0 / pi + elapsed * gamma * gamma
    return 1.0 / var, tau / pi / var


def _natural(g: Gaussian) -> tuple[float, float]:
    if g.sigma == INF:
        return 0.0, 0.0
    pi = g.sigma**-2
    return pi, g.mu * pi


@dataclass(slots=True)
class _Event:
    names: list[list[str]]
    result: list[float]
    weights: list[list[float]] | None
    # The game's message to each player's skill, (pi, tau) per player, flat at first.
    likelihoods: list[list[tuple[float, float]]]
    log_evidence: float = 0.0


def _message(mean: float, var: float) -> tuple[float, float]:
    """N(mean, var) in natural parameters; an infinite variance is the flat message."""
    if not var < INF:
        return 0.0, 0.0
    return 1.0 / var, mean / var


def _games(
    composition: Composition,
    results: Sequence[Sequence[float]] | None,
    times: Sequence[float] | None,
    weights: Sequence[Sequence[Sequence[float]]] | None,
) -> tuple[list[Sequence[float]] | None, list[float] | None, list[Sequence[Sequence[float]]] | None]:
    """Optional per-game lists, empty meaning absent (the package's convention), checked."""
    given_results = list(results) if results is not None and len(results) else None
    given_times = [float(t) for t in times] if times is not None and len(times) else None
    given_weights = list(weights) if weights is not None and len(weights) else None
    for name, values in (("results", given_results), ("times", given_times), ("weights", given_weights)):
        if values is not None and len(values) != len(composition):
            raise ValueError(f"{name} has {len(values)} entries for {len(composition)} games")
    if given_times is not None and not all(math.isfinite(t) for t in given_times):
        raise ValueError("times must be finite")
    return given_results, given_times, given_weights


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
            self.events.append(_Event(names, result, event_weights, [[(0.0, 0.0)] * len(t) for t in names]))
            for team in names:
                for name in team:
                    if name not in self.skills:
                        elapsed = _elapsed(self.agents[name].last_time, self.time)
                        self.skills[name] = _Skill(*self.agents[name].receive(elapsed), elapsed)
        self.iteration(start)

    def posterior(self, name: str) -> Gaussian:
        return self.skills[name].posterior()

    def posteriors(self) -> dict[str, Gaussian]:
        return {name: skill.posterior() for name, skill in self.skills.items()}

    def iteration(self, start: int = 0) -> None:
        """Re-run every game from `start` with its within-batch priors (posterior without
        the game's own message), and swap in the new messages."""
        for event in self.events[start:]:
            names = event.names
            duel = event.weights is None and len(names) == 2 and len(names[0]) == 1 and len(names[1]) == 1
            if not (duel and self._duel(event)):
                self._general(event)

    def _general(self, event: _Event) -> None:
        """Any game, through Game."""
        skills = self.skills
        agents = self.agents
        names = event.names
        teams = []
        for team_names, likelihoods in zip(names, event.likelihoods, strict=True):
            team = []
            for name, (item_pi, item_tau) in zip(team_names, likelihoods, strict=True):
                skill = skills[name]
                prior = Gaussian.natural(
                    skill.fwd_pi + skill.bwd_pi + skill.lik_pi - item_pi,
                    skill.fwd_tau + skill.bwd_tau + skill.lik_tau - item_tau,
                )
                player = agents[name].player
                team.append(Player(prior, player.beta, player.gamma))
            teams.append(team)
        game = Game(teams, event.result, self.p_draw, event.weights)
        for team_names, olds, news in zip(names, event.likelihoods, game.likelihoods, strict=True):
            for position, (name, new) in enumerate(zip(team_names, news, strict=True)):
                self._swap(skills[name], olds, position, _natural(new))
        event.log_evidence = game.log_evidence

    @staticmethod
    def _swap(
        skill: _Skill, olds: list[tuple[float, float]], position: int, new: tuple[float, float]
    ) -> None:
        old_pi, old_tau = olds[position]
        skill.lik_pi += new[0] - old_pi
        skill.lik_tau += new[1] - old_tau
        olds[position] = new

    def _duel(self, event: _Event) -> bool:
        """A one-on-one game, in floats: Game's closed form for two teams, inlined. False
        (and nothing done) when a within-batch prior is improper; Game handles those."""
        (first,), (second,) = event.names
        a, b = self.skills[first], self.skills[second]
        (a_pi, a_tau), (b_pi, b_tau) = event.likelihoods[0][0], event.likelihoods[1][0]
        pi_a = a.fwd_pi + a.bwd_pi + a.lik_pi - a_pi
        pi_b = b.fwd_pi + b.bwd_pi + b.lik_pi - b_pi
        if not (pi_a > 0.0 and pi_b > 0.0):
            return False
        mu_a = (a.fwd_tau + a.bwd_tau + a.lik_tau - a_tau) / pi_a
        mu_b = (b.fwd_tau + b.bwd_tau + b.lik_tau - b_tau) / pi_b
        beta_a = self.agents[first].player.beta
        beta_b = self.agents[second].player.beta
        var_a = 1.0 / pi_a + beta_a * beta_a
        var_b = 1.0 / pi_b + beta_b * beta_b
        score_a, score_b = event.result
        win_first = score_a >= score_b
        tie = score_a == score_b
        mean = mu_a - mu_b if win_first else mu_b - mu_a
        var = var_a + var_b
        margin = draw_margin(self.p_draw, math.sqrt(beta_a * beta_a + beta_b * beta_b))
        event.log_evidence = log_outcome_probability(mean, math.sqrt(var), margin, tie)
        d_pi, d_tau = truncation_message(mean, var, margin, tie)
        if d_pi == 0.0:
            new_a = new_b = (0.0, 0.0)
        else:
            d_mu = d_tau / d_pi
            d_var = 1.0 / d_pi
            # t_winner = t_loser + d and t_loser = t_winner − d; then strip the other noise.
            if not win_first:
                d_mu = -d_mu
            new_a = _message(mu_b + d_mu, var_b + d_var + beta_a * beta_a)
            new_b = _message(mu_a - d_mu, var_a + d_var + beta_b * beta_b)
        self._swap(a, event.likelihoods[0], 0, new_a)
        self._swap(b, event.likelihoods[1], 0, new_b)
        return True

    def convergence(self, epsilon: float = 1e-6, iterations: int = 20) -> int:
        step = INF
        done = 0
        while step > epsilon and done < iterations:
            old = self.moments()
            self.iteration()
            step = _largest_change(old, self.moments())
            done += 1
        return done

    def moments(self) -> dict[str, tuple[float, float]]:
        """Each skill's posterior (mu, sigma), for measuring how far an update moved it."""
        return {name: skill.moments() for name, skill in self.skills.items()}

    def forward_prior_out(self, name: str) -> tuple[float, float]:
        skill = self.skills[name]
        return skill.fwd_pi + skill.lik_pi, skill.fwd_tau + skill.lik_tau

    def backward_prior_out(self, name: str) -> tuple[float, float]:
        skill = self.skills[name]
        pi = skill.lik_pi + skill.bwd_pi
        tau = skill.lik_tau + skill.bwd_tau
        if not pi > 0.0:
            return 0.0, 0.0
        return _drift(pi, tau, self.agents[name].player.gamma, skill.elapsed)


def _largest_change(old: Mapping[str, tuple[float, float]], new: Mapping[str, tuple[float, float]]) -> float:
    """The package's step: the largest |Δmu| or |Δsigma| (a flat one counts as no change)."""
    step = 0.0
    for name, (mu, sigma) in old.items():
        new_mu, new_sigma = new[name]
        d_mu = abs(mu - new_mu)
        d_sigma = abs(sigma - new_sigma)
        if d_mu > step:
            step = d_mu
        if d_sigma > step:
            step = d_sigma
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
        results, times, weights = _games(composition, results, times, weights)
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
        self._register(composition, priors)
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
            if self.timed and self.batches and self.batches[-1].time == now:
                batch = self.batches[-1]  # games added at the last batch's time join it
            else:
                batch = Batch(now, self.agents, self.p_draw)
                self.batches.append(batch)
            batch.add(
                [composition[g] for g in chosen],
                [results[g] for g in chosen] if results is not None else None,
                [weights[g] for g in chosen] if weights is not None else [],
            )
            self._leave(batch)
            i = j
        self.size += count

    def add_events(
        self,
        composition: Composition,
        results: Sequence[Sequence[float]] | None = None,
        times: Sequence[float] | None = None,
        priors: Mapping[str, Player] | None = None,
        weights: Sequence[Sequence[Sequence[float]]] | None = None,
    ) -> None:
        """Append games to this history without rebuilding it.

        New games get TrueSkill's online estimate from everything before them (as the
        constructor gives every game); `convergence()` or `iteration()` then refines the whole
        history, warm-started from where it was. Games at the time of the last batch join it;
        games may not precede it.
        """
        results, times, weights = _games(composition, results, times, weights)
        if self.timed != (times is not None):
            raise ValueError("give times for every batch of a timed history, and none for an untimed one")
        last = self.batches[-1] if self.batches else None
        if times is not None and last is not None and min(times) < last.time:
            raise ValueError(f"add_events appends: times must not precede the last batch ({last.time:g})")
        # The online state each player leaves its last batch with (sweeps overwrite it).
        for batch in self.batches:
            self._leave(batch)
        self._extend(composition, results, times, weights, priors or {})

    def _leave(self, batch: Batch) -> None:
        """Each of the batch's players carries its forward message on to its next batch."""
        for name in batch.skills:
            agent = self.agents[name]
            agent.message = batch.forward_prior_out(name)
            agent.last_time = batch.time if self.timed else INF

    def _register(self, composition: Composition, priors: Mapping[str, Player]) -> None:
        for teams in composition:
            for team in teams:
                for name in team:
                    if name not in self.agents:
                        player = priors.get(name) or Player(
                            Gaussian(self.mu, self.sigma), self.beta, self.gamma
                        )
                        self.agents[name] = _Agent(player)

    def iteration(self) -> float:
        """One backward and one forward sweep over the batches; the largest posterior change."""
        step = 0.0
        self._clean()
        for j in range(len(self.batches) - 2, -1, -1):
            later = self.batches[j + 1]
            for name in later.skills:
                self.agents[name].message = later.backward_prior_out(name)
            batch = self.batches[j]
            old = batch.moments()
            for name, skill in batch.skills.items():
                skill.bwd_pi, skill.bwd_tau = self.agents[name].message
            batch.iteration()
            step = max(step, _largest_change(old, batch.moments()))
        self._clean()
        for j in range(1, len(self.batches)):
            earlier = self.batches[j - 1]
            for name in earlier.skills:
                self.agents[name].message = earlier.forward_prior_out(name)
            batch = self.batches[j]
            old = batch.moments()
            for name, skill in batch.skills.items():
                skill.fwd_pi, skill.fwd_tau = self.agents[name].receive(skill.elapsed)
            batch.iteration()
            step = max(step, _largest_change(old, batch.moments()))
        if len(self.batches) == 1:
            old = self.batches[0].moments()
            self.batches[0].convergence()
            step = max(step, _largest_change(old, self.batches[0].moments()))
        return step

    def _clean(self) -> None:
        for agent in self.agents.values():
            agent.message = (0.0, 0.0)

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
