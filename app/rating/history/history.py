"""TrueSkill Through Time (seed 001 §2.3): a whole history smoothed by message passing.

Games are grouped into batches by time. Each player's skill has one variable per batch they
play in, linked to their previous batch's by the drift N(0, gamma²·elapsed). Information
flows forward (the prior out of the past), backward (the likelihood out of the future) and
within a batch (the other games).

The history lives in flat arrays (`structure`), and each pass runs game by game in the
package's order (`schedule`), two-team games in a compiled loop (`kernel`), the others
through Game (`messages`):

- The constructor (and `add_events`) runs the package's online pass exactly: every game
  sees only the games before it, as TrueSkill would (seed 001 Code 8's curves).
- `iteration()` is one sweep, the package's iteration: a backward pass over the batches
  (last but one to first), then a forward pass (second to last), each batch's games updated
  in order with the freshest messages; a single batch instead runs its games up to 20 times
  (the package's Batch.convergence). Every game is visited once per pass: twice a sweep,
  except the first and last batch's games, once. Iterates equal the package's (up to its
  approximate erfc), so a call never stops further from the answer than the package's.
- `convergence()` stops on an estimate of the distance to the fixed point, not on a step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from app.rating.history import acceleration, messages
from app.rating.history.acceleration import Anderson
from app.rating.history.game import Player
from app.rating.history.gaussian import INF, Gaussian
from app.rating.history.schedule import Pass, Passes, next_skills, online, passes
from app.rating.history.structure import Array, Flat, Index

Composition = Sequence[Sequence[Sequence[str]]]

# The package's defaults for History.convergence (trueskillthroughtime 1.1.0).
EPSILON = 1e-6
ITERATIONS = 30
# A single batch: the package's Batch.convergence, run by each sweep.
BATCH_EPSILON = 1e-6
BATCH_ITERATIONS = 20
# Anderson acceleration starts once the last RATES step ratios agree within this fraction.
LINEAR = 0.05
# Step ratios looked at to call the contraction linear, and the factor by which the
# distance bound shrinks 1 − rate (convergence()).
RATES = 3
SAFETY = 3.0
# A step of at most ROUNDING units of roundoff (UNIT_ROUNDOFF, float64's u = 2⁻⁵³) of the
# largest |mu| or sigma is rounding, not contraction: a sweep's own arithmetic moves a
# converged posterior that much (Higham 2002, §2.2 and ch. 17); test_oracle.py's histories
# and test_convergence.py's long 1v1 ones stay below it (tests/rating/history).
ROUNDING = 64
UNIT_ROUNDOFF = 2.0**-53


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
        self._passes: Passes | None = None  # laid out at the first sweep after a change
        self._following = np.zeros(0, dtype=np.int64)
        self.size = 0
        # What the last convergence() reached: the estimated distance to the fixed point
        # (inf until two sweeps have measured a contraction) and whether `iterations` stopped it.
        self.distance = INF
        self.capped = False
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
        # The online pass: batch by batch, each new skill's forward message set before the
        # batch's games (old skills, which a new game may join in the last batch, keep theirs).
        messages.run(flat, online(flat, first_game, first_skill), None)
        self._passes = None
        self.distance = INF
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

    def iteration(self) -> tuple[float, float]:
        """One sweep, the package's iteration (see the module's docstring). Returns the
        largest change of any posterior's mu and of any sigma within either pass, as the
        package measures its step."""
        flat = self._flat
        if self._passes is None:
            self._passes = passes(flat)
            self._following = next_skills(flat)
        work = self._passes
        if work.single is not None:
            step = (0.0, 0.0)
            for _ in range(BATCH_ITERATIONS):
                inner = self._pass(work.single, None)
                step = (max(step[0], inner[0]), max(step[1], inner[1]))
                if max(inner) <= BATCH_EPSILON:
                    break
            return step
        assert work.backward is not None and work.forward is not None
        back = self._pass(work.backward, self._following)
        ahead = self._pass(work.forward, None)
        return max(back[0], ahead[0]), max(back[1], ahead[1])

    def _pass(self, work: Pass, following: Index | None) -> tuple[float, float]:
        """One pass (backward from `following`, or forward when None); the largest changes
        of mu and sigma."""
        old_mu, old_sigma = self._moments()
        messages.run(self._flat, work, following)
        mu, sigma = self._moments()
        return _largest(mu, old_mu), _largest(sigma, old_sigma)

    def _moments(self) -> tuple[Array, Array]:
        flat = self._flat
        pi = flat.fwd_pi + flat.bwd_pi + flat.lik_pi
        tau = flat.fwd_tau + flat.bwd_tau + flat.lik_tau
        proper = pi > 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(proper, tau / pi, 0.0), np.where(proper, np.sqrt(1.0 / pi), INF)

    def convergence(
        self,
        epsilon: float = EPSILON,
        iterations: int = ITERATIONS,
        verbose: bool = False,
        progress: Callable[[int, float], None] | None = None,
        accelerate: bool = True,
    ) -> tuple[tuple[float, float], int]:
        """Sweep until the learning curves are within `epsilon` of the fixed point, or for at
        most `iterations` sweeps (one sweep: see `iteration`). Returns the package's shape,
        (the last sweep's step as (mu, sigma), sweeps run); `distance` and `capped` say
        what was reached.

        `epsilon` bounds the distance to the fixed point: the largest |Δmu| or |Δsigma| over
        every learning-curve point between these curves and the converged ones. A sweep G
        that contracts by a rate r is within step·r/(1 − r) of its fixed point after a step
        |G(x) − x| (in that norm), so `distance` is that bound, with r estimated:

        - plain sweeps: the largest of the last RATES step ratios, once they agree within
          LINEAR (`_linear`). Before that the estimate is inf: ratios that fall or rise are
          a transient, with a slower mode behind it that small steps would hide;
        - accelerated sweeps: the larger of the plain rate measured when acceleration
          engaged and the last RATES secant ratios |G(x_k) − G(x_k−1)| / |x_k − x_k−1|
          (inf while one is 1 or more, as after an extrapolation that overshot);

        then inflated to 1 − (1 − r)/SAFETY. It stops when the bound and the step are both at
        most epsilon, keeping the sweep's output G(x) (not an extrapolation), or when the step
        is at the rounding floor (`_rounding`: ROUNDING units of roundoff of the largest mu or
        sigma). There the step measures the sweep's own rounding, not the contraction: no
        later sweep comes closer in float64 (the limiting accuracy of a stationary iteration,
        Higham 2002 ch. 17), and ratios of rounding never agree, so waiting for them ran to
        the cap. The bound then takes the last RATES ratios measured above the floor whether
        they agree or not (none, when the first sweep is at the floor: the input was the fixed
        point to working precision); `capped` says whether it is within epsilon. Checked against
        reference runs to 1e-12 (tests/rating/history/test_convergence.py): over 80 random
        histories (40 of 2–4 teams, 40 long 1v1 ones) stopped at 1e-3, 1e-6 and 1e-9, the
        true distance was at most 0.29 of the bound (1.12 with SAFETY 2, hence 3). It is an
        estimate, not a proof: a mode slower than any seen in the sweeps so
        far, with an amplitude too small to show in them, could escape it.

        Sweeps are Anderson-accelerated (`acceleration`; `accelerate=False` gives the plain
        sweeps, the package's iterates) once the plain steps contract linearly: the next
        sweep starts from the extrapolation of the last ones instead of the last output.
        Until then the sweeps are the package's iterates, and the stopping test is stricter
        than its step test, so a call never stops further from the answer than the package.
        `verbose` prints each sweep (off by default, unlike the package); `progress`, if
        given, is called after each sweep with the number of sweeps done and what must fall
        to `epsilon` for the sweeps to stop: the larger of the step and `distance` (inf while
        the distance is not measured).
        """
        flat = self._flat
        steps: list[float] = []
        ratios: list[float] = []
        step = (INF, INF)
        done = 0
        self.distance = INF
        anderson = Anderson(acceleration.size(flat)) if accelerate else None
        rate: float | None = None  # the plain sweeps' rate, once acceleration engages
        before: tuple[Array, Array] | None = None  # the last sweep's input and output, as mu
        while done < iterations:
            mu_in, sigma_in = self._moments()
            x = acceleration.read(flat) if anderson is not None else None
            plain = self.iteration()
            mu, sigma = self._moments()
            step = (max(plain[0], _largest(mu, mu_in)), max(plain[1], _largest(sigma, sigma_in)))
            floor = _rounding(mu, sigma)
            del sigma_in, sigma
            # A step at the floor is rounding: its ratio would measure rounding, not the
            # contraction, and so would every later sweep's (ratios of rounding never
            # settle, so the bound would stay inf until the cap). The call stops there.
            rounded = max(step) <= floor
            if before is not None and not rounded:
                moved = _largest(mu_in, before[0])
                ratios.append(_largest(mu, before[1]) / moved if moved > 0.0 else 0.0)
            before = (mu_in, mu)
            done += 1
            steps.append(max(step))
            engaged = anderson is not None and anderson.engaged
            self.distance = _distance(steps[-1], ratios, rate, rounded)
            converged = steps[-1] <= epsilon and self.distance <= epsilon
            if verbose:
                print(f"Iteration = {done}, step = {step}, distance = {self.distance}")
            if progress is not None:
                progress(done, max(steps[-1], self.distance))
            if converged or rounded:
                break
            if anderson is not None and x is not None and (engaged or _linear(ratios)):
                if not engaged:
                    anderson.engaged = True
                    rate = max(ratios[-RATES:])
                g = acceleration.read(flat)
                if np.isfinite(g).all() and np.isfinite(x).all():
                    extrapolated = anderson.step(x, g)
                    if extrapolated is not g:
                        acceleration.write(flat, extrapolated)
                else:
                    anderson = None  # point masses (infinite messages): plain sweeps
        self.capped = not (steps and steps[-1] <= epsilon and self.distance <= epsilon)
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


def _largest(new: Array, old: Array) -> float:
    with np.errstate(invalid="ignore"):
        changes = np.abs(new - old)
    changes = changes[~np.isnan(changes)]  # a flat posterior before and after is no change
    return float(changes.max()) if len(changes) else 0.0


def _linear(ratios: list[float]) -> bool:
    """The plain sweeps contract linearly: the last RATES step ratios are below 1 and agree
    within LINEAR. Extrapolating before that (in the first, nonlinear sweeps, or while a
    slower mode is still taking over) can land further from the fixed point than plain
    sweeps, and would fix the plain rate too low for the distance bound."""
    if len(ratios) < RATES:
        return False
    window = ratios[-RATES:]
    return min(window) > 0.0 and max(window) < 1.0 and min(window) >= (1.0 - LINEAR) * max(window)


def _rounding(mu: Array, sigma: Array) -> float:
    """The largest step a sweep's rounding alone makes: ROUNDING units of roundoff of the
    largest |mu| or finite sigma (improper posteriors have sigma inf, point masses mu nan)."""
    with np.errstate(invalid="ignore"):
        largest_mu = float(np.fmax.reduce(np.abs(mu), initial=0.0))
        largest_sigma = float(np.max(sigma, initial=0.0, where=np.isfinite(sigma)))
    return ROUNDING * UNIT_ROUNDOFF * max(largest_mu, largest_sigma)


def _distance(step: float, ratios: list[float], rate: float | None, rounded: bool = False) -> float:
    """A bound on the distance from the last sweep's output to the fixed point,
    step·r/(1 − r) with r inflated to 1 − (1 − r)/SAFETY (see convergence): r is the last
    RATES ratios' largest, once they agree (`_linear`), or once accelerated, the larger of
    that and the plain sweeps' `rate`. A `rounded` step (at the rounding floor) takes the
    last RATES ratios' largest whether they agree or not: they are the last contraction
    that could be measured, and no later sweep measures a better one. None (the call's
    first sweep is at the floor, so its input was the fixed point to working precision)
    counts as 0."""
    if step == 0.0:
        return 0.0
    if rate is None:
        if rounded:
            rate = max(ratios[-RATES:], default=0.0)
        elif not _linear(ratios):
            return INF
        else:
            rate = max(ratios[-RATES:])
    else:
        rate = max(rate, *ratios[-RATES:])
    if rate >= 1.0:
        return INF
    rate = 1.0 - (1.0 - rate) / SAFETY
    return step * rate / (1.0 - rate)
