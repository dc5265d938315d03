"""TrueSkill Through Time (seed 001 §2.3): a whole history smoothed by message passing.

Games are grouped into batches by time. Each player's skill has one variable per batch they
play in, linked to their previous batch's by the drift N(0, gamma²·elapsed). Information
flows forward (the prior out of the past), backward (the likelihood out of the future) and
within a batch (the other games).

The history lives in flat arrays (`structure`), and messages are computed for many skills
or games at once (`messages`), in the orders of `schedule`:

- The constructor (and `add_events`) runs the package's online pass exactly: every game
  sees only the games before it, as TrueSkill would (seed 001 Code 8's curves).
- `iteration()` is one sweep: every chain's backward messages, then its forward
  messages, then every game again with its new cavity (the games of a batch in order).
  The package instead updates batch after batch, so the two agree iteration by iteration
  only approximately, and at convergence they reach the same fixed point.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping, Sequence

import numpy as np

from app.rating.history import messages
from app.rating.history.game import Player
from app.rating.history.gaussian import INF, Gaussian
from app.rating.history.schedule import Chains, Group, chains, groups, levels_and_rounds
from app.rating.history.structure import Array, Flat

Composition = Sequence[Sequence[Sequence[str]]]


def _games(
    composition: Composition,
    results: Sequence[Sequence[float]] | None,
    times: Sequence[float] | None,
    weights: Sequence[Sequence[Sequence[float]]] | None,
) -> tuple[Sequence[Sequence[float]] | None, list[float] | None, Sequence[Sequence[Sequence[float]]] | None]:
    """Optional per-game lists, empty meaning absent (the package's convention), checked."""
    given_results = results if results is not None and len(results) else None
    given_times = [float(t) for t in times] if times is not None and len(times) else None
    given_weights = weights if weights is not None and len(weights) else None
    for name, values in (("results", given_results), ("times", given_times), ("weights", given_weights)):
        if values is not None and len(values) != len(composition):
            raise ValueError(f"{name} has {len(values)} entries for {len(composition)} games")
    if given_times is not None and not all(math.isfinite(t) for t in given_times):
        raise ValueError("times must be finite")
    return given_results, given_times, given_weights


class Batch:
    """A read-only view of one batch: its time and its players' posteriors."""

    def __init__(self, history: History, time: float, skills: dict[str, int]) -> None:
        self._history = history
        self.time = time
        self.skills = skills

    def posterior(self, name: str) -> Gaussian:
        return self._history._posterior(self.skills[name])

    def posteriors(self) -> dict[str, Gaussian]:
        return {name: self.posterior(name) for name in self.skills}


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
        results, given_times, weights = _games(composition, results, times, weights)
        self.mu, self.sigma, self.beta, self.gamma, self.p_draw = mu, sigma, beta, gamma, p_draw
        self.timed = given_times is not None
        self._flat = Flat(p_draw, self.timed, Player(Gaussian(mu, sigma), beta, gamma))
        self._skill_rounds: array[int] = array("q")
        self._game_rounds = np.zeros(0, dtype=np.int64)
        self._rounds: list[Group] = []
        self._chains = Chains([])
        self._scheduled = False
        self.size = 0
        self._extend(composition, results, given_times, weights, priors or {})

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        flat = self._flat
        return f"History(Events={self.size}, Batches={len(flat.times)}, Agents={len(flat.names)})"

    def _extend(
        self,
        composition: Composition,
        results: Sequence[Sequence[float]] | None,
        times: list[float] | None,
        weights: Sequence[Sequence[Sequence[float]]] | None,
        priors: Mapping[str, Player],
    ) -> None:
        flat = self._flat
        count = len(composition)
        flat.register(composition, priors)
        if times is None:
            times = [float(self.size + i + 1) for i in range(count)]
            order: Sequence[int] = range(count)
        else:
            order = np.argsort(np.asarray(times), kind="stable").tolist()
            if order != list(range(count)):
                composition = [composition[g] for g in order]
                results = [results[g] for g in order] if results is not None else None
                weights = [weights[g] for g in order] if weights is not None else None
                times = [times[g] for g in order]
        first_game, first_skill = flat.append(composition, results, weights, times, order)
        levels, rounds, first_levels = levels_and_rounds(flat, first_game, first_skill, self._skill_rounds)
        new_games = np.arange(first_game, flat.games, dtype=np.int64)
        new_skills = np.arange(first_skill, flat.skills, dtype=np.int64)
        # The online pass: level by level, each skill's forward message set at its first game.
        for group in groups(flat, new_games, levels, new_skills, first_levels):
            messages.refresh(flat, group.refresh)
            messages.update(flat, group)
        self._game_rounds = np.concatenate((self._game_rounds, rounds))
        self._scheduled = False  # rounds and chains are laid out again at the next sweep
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
        results, given_times, weights = _games(composition, results, times, weights)
        if self.timed != (given_times is not None):
            raise ValueError("give times for every batch of a timed history, and none for an untimed one")
        times_so_far = self._flat.times
        if given_times is not None and len(times_so_far) and min(given_times) < times_so_far[-1]:
            raise ValueError(
                f"add_events appends: times must not precede the last batch ({times_so_far[-1]:g})"
            )
        self._extend(composition, results, given_times, weights, priors or {})

    def iteration(self) -> float:
        """One sweep (backward and forward messages along every chain, then every game);
        the largest change of any posterior's mu or sigma."""
        flat = self._flat
        if not self._scheduled:
            self._rounds = groups(flat, np.arange(flat.games, dtype=np.int64), self._game_rounds)
            self._chains = chains(flat)
            self._scheduled = True
        old_mu, old_sigma = self._moments()
        messages.backward(flat, self._chains)
        messages.forward(flat, self._chains)
        for group in self._rounds:
            messages.update(flat, group, damped=True)
        mu, sigma = self._moments()
        with np.errstate(invalid="ignore"):
            changes = np.concatenate((np.abs(mu - old_mu), np.abs(sigma - old_sigma)))
        changes = changes[~np.isnan(changes)]  # a flat posterior before and after is no change
        return float(changes.max()) if len(changes) else 0.0

    def _moments(self) -> tuple[Array, Array]:
        flat = self._flat
        pi = flat.fwd_pi + flat.bwd_pi + flat.lik_pi
        tau = flat.fwd_tau + flat.bwd_tau + flat.lik_tau
        proper = pi > 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(proper, tau / pi, 0.0), np.where(proper, np.sqrt(1.0 / pi), INF)

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

    def _posterior(self, skill: int) -> Gaussian:
        flat = self._flat
        return Gaussian.natural(
            float(flat.fwd_pi[skill] + flat.bwd_pi[skill] + flat.lik_pi[skill]),
            float(flat.fwd_tau[skill] + flat.bwd_tau[skill] + flat.lik_tau[skill]),
        )

    def learning_curves(self) -> dict[str, list[tuple[float, Gaussian]]]:
        """Each player's posterior at every batch they played in, in time order."""
        flat = self._flat
        pi = (flat.fwd_pi + flat.bwd_pi + flat.lik_pi).tolist()
        tau = (flat.fwd_tau + flat.bwd_tau + flat.lik_tau).tolist()
        times = flat.times[flat.skill_batch].tolist()
        names = flat.names
        curves: dict[str, list[tuple[float, Gaussian]]] = {}
        for player, time, p, t in zip(flat.skill_player.tolist(), times, pi, tau, strict=True):
            curves.setdefault(names[player], []).append((time, Gaussian.natural(p, t)))
        return curves

    def log_evidence(self) -> float:
        """The sum of every game's log evidence, each with its last cavity as prior."""
        return math.fsum(self._flat.log_evidence.tolist())

    def prior(self, name: str, time: float | None = None) -> Gaussian:
        """What the history knows of `name`'s skill at `time` (a prediction): the posterior at
        their last batch, drifted by gamma² per unit of time since; the prior if unseen.
        Untimed histories drift one unit. `time` defaults to the last batch's."""
        flat = self._flat
        p = flat.index.get(name)
        if p is None:
            return Gaussian(self.mu, self.sigma)
        player = flat.players[p]
        last = flat.last_skill(p)
        if last < 0:
            return player.prior
        posterior = self._posterior(last)
        then = float(flat.times[flat.skill_batch[last]])
        now = then if time is None else time
        elapsed = (now - then) if self.timed else 1.0
        if elapsed < 0.0:
            raise ValueError(f"time {now:g} precedes {name!r}'s last batch ({then:g})")
        return posterior.forget(player.gamma, elapsed)

    @property
    def batches(self) -> list[Batch]:
        flat = self._flat
        skills: list[dict[str, int]] = [{} for _ in range(len(flat.times))]
        for s, (player, batch) in enumerate(
            zip(flat.skill_player.tolist(), flat.skill_batch.tolist(), strict=True)
        ):
            skills[batch][flat.names[player]] = s
        return [Batch(self, float(time), skills[b]) for b, time in enumerate(flat.times.tolist())]
