"""The players of a scenario and how they come and go: true skills, homes, latencies, the
rating each starts from, and the random draws of arrivals and sessions (pure).

Both clocks draw from these, so a virtual and a live run of one scenario and seed share the
population itself (the same true skills and latencies).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.simulation.scenario import Scenario

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class Population:
    """Per player: true skill, home region (an index of `regions`; 0 when there are none),
    latency to each region's servers in ms (+inf where the player's tickets do not list it;
    None without regions), the rating the loop starts them at, and under a mode with roles
    the role preferences they accept (an index of the scenario's population.roles)."""

    skill: FloatArray
    home: IntArray
    latency: FloatArray | None
    mu: FloatArray
    sigma: FloatArray
    regions: tuple[str, ...]
    preference: IntArray | None = None

    def __len__(self) -> int:
        return len(self.skill)


@dataclass(frozen=True, slots=True)
class Streams:
    """Independent random streams of one seed: the population, the players' comings and
    goings, the match outcomes, the random-pairing baseline's shuffles, who avoids whom, the
    players' answers to the ready check, and who leaves a match in play and when.
    Two configurations compared on one seed share the population exactly. (A SeedSequence's
    n-th child does not depend on how many are spawned: a stream added last leaves the others'
    draws, and so every earlier scenario's runs, as they were.)"""

    population: np.random.Generator
    behaviour: np.random.Generator
    outcomes: np.random.Generator
    pairing: np.random.Generator
    avoidance: np.random.Generator
    answers: np.random.Generator
    leaving: np.random.Generator

    @classmethod
    def of(cls, seed: int) -> Streams:
        children = np.random.SeedSequence(seed).spawn(7)
        population, behaviour, outcomes, pairing, avoidance, answers, leaving = (
            np.random.default_rng(child) for child in children
        )
        return cls(population, behaviour, outcomes, pairing, avoidance, answers, leaving)


def build(
    scenario: Scenario, rng: np.random.Generator, rated: Sequence[tuple[float, float]] = ()
) -> Population:
    """The scenario's players. With population.from_mode, `rated` holds that mode's (mu, sigma)
    pairs: up to `size` of them are taken at random, each player's true skill drawn from
    N(mu, sigma²) and their rating starting there."""
    spec, mode = scenario.population, scenario.mode
    if spec.from_mode is not None:
        if not rated:
            raise ValueError(
                f"population.from_mode: mode {spec.from_mode!r} has no rated players to start from"
            )
        chosen = rng.permutation(len(rated))[: spec.size]
        pairs = np.array([rated[i] for i in chosen.tolist()], dtype=np.float64)
        mu, sigma = pairs[:, 0].copy(), pairs[:, 1].copy()
        skill = rng.normal(mu, sigma)
    else:
        count = spec.size
        if spec.skills.distribution == "uniform":
            skill = rng.uniform(spec.skills.low, spec.skills.high, count)
        else:
            skill = rng.normal(spec.skills.mean, spec.skills.sd, count)
        mu, sigma = np.full(count, mode.mu), np.full(count, mode.sigma)
    count = len(skill)
    regions = tuple(region.name for region in scenario.regions)
    if not regions:
        return Population(
            skill, np.zeros(count, dtype=np.int64), None, mu, sigma, (), _preferences(scenario, rng, count)
        )
    shares = np.array([region.share for region in scenario.regions])
    home = rng.choice(len(regions), size=count, p=shares / shares.sum()).astype(np.int64)
    latency = np.full((count, len(regions)), np.inf)
    own = np.empty(count)
    for number, region in enumerate(scenario.regions):
        mine = home == number
        own[mine] = np.maximum(rng.normal(region.latency_ms, region.latency_sd_ms, int(mine.sum())), 1.0)
        latency[mine, number] = own[mine]
        for other, extra in region.others.items():
            latency[mine, regions.index(other)] = own[mine] + extra
    return Population(skill, home, latency, mu, sigma, regions, _preferences(scenario, rng, count))


def _preferences(scenario: Scenario, rng: np.random.Generator, count: int) -> IntArray | None:
    """Each player's role preferences, by the scenario's shares (drawn last, so a scenario
    without roles draws as it always did)."""
    listed = scenario.population.roles
    if not listed:
        return None
    shares = np.array([preference.share for preference in listed])
    chosen: IntArray = rng.choice(len(listed), size=count, p=shares / shares.sum()).astype(np.int64)
    return chosen


class Behaviour:
    """The random draws of players' comings and goings, from the behaviour stream."""

    def __init__(self, scenario: Scenario, rng: np.random.Generator) -> None:
        self.scenario, self.rng = scenario, rng
        sizes = sorted(scenario.parties)
        shares = np.array([scenario.parties[size] for size in sizes], dtype=np.float64)
        self.sizes, self.shares = sizes, shares / shares.sum()
        # Tickets (parties) per second at a rate of one player per second.
        self.per_player = 1.0 / scenario.mean_party

    def next_arrival(self, after: float) -> float:
        """The next session's start after `after`: a Poisson process thinned by the daily curve
        (Lewis and Shedler's method); +inf when nobody ever arrives."""
        arrivals = self.scenario.arrivals
        peak = arrivals.peak * self.per_player
        if peak <= 0:
            return math.inf
        moment = after
        while True:
            moment += float(self.rng.exponential(1.0 / peak))
            if moment > self.scenario.duration_seconds:
                return math.inf
            if self.rng.random() * peak <= arrivals.rate(moment) * self.per_player:
                return moment

    def party_size(self) -> int:
        return int(self.sizes[int(self.rng.choice(len(self.sizes), p=self.shares))])

    def session_matches(self) -> int:
        sessions = self.scenario.sessions
        if sessions.fixed:
            return max(1, round(sessions.matches))
        # Geometric on 1, 2, …: mean `matches`.
        return int(self.rng.geometric(1.0 / sessions.matches))

    def pause(self) -> float:
        mean = self.scenario.sessions.pause_seconds
        return float(self.rng.exponential(mean)) if mean > 0 else 0.0

    def match_length(self) -> float:
        sessions = self.scenario.sessions
        length = sessions.match_seconds
        if sessions.match_seconds_sd > 0:
            length = float(self.rng.normal(length, sessions.match_seconds_sd))
        return max(length, sessions.match_seconds / 10.0)


class Offline:
    """The players not in a session, by home region, for drawing who arrives: O(1) to take a
    random one and to put one back."""

    def __init__(self, home: IntArray, regions: int) -> None:
        self.members: list[list[int]] = [[] for _ in range(max(regions, 1))]
        self.at = np.empty(len(home), dtype=np.int64)
        for player, region in enumerate(home.tolist()):
            self.at[player] = len(self.members[region])
            self.members[region].append(player)
        self.home = home.tolist()

    def __len__(self) -> int:
        return sum(len(members) for members in self.members)

    def take(
        self, rng: np.random.Generator, count: int, fits: Callable[[list[int]], bool] | None = None
    ) -> list[int]:
        """A random offline player and up to count − 1 more from the same region (fewer when
        the region has fewer offline); [] when nobody is offline. With `fits`, a mate drawn who
        would make the party unfit (roles that cannot fill one team together) stays offline,
        and the party is the smaller."""
        total = len(self)
        if total == 0:
            return []
        pick = int(rng.integers(total))
        region = 0
        while pick >= len(self.members[region]):
            pick -= len(self.members[region])
            region += 1
        lead = self.members[region][pick]
        self._remove(lead)
        party = [lead]
        members = self.members[region]
        refused: list[int] = []
        for _ in range(count - 1):
            if not members:
                break
            mate = members[int(rng.integers(len(members)))]
            self._remove(mate)
            if fits is None or fits([*party, mate]):
                party.append(mate)
            else:
                refused.append(mate)
        self.put_back(refused)
        return party

    def put_back(self, players: Sequence[int]) -> None:
        for player in players:
            members = self.members[self.home[player]]
            self.at[player] = len(members)
            members.append(player)

    def _remove(self, player: int) -> None:
        members = self.members[self.home[player]]
        index = int(self.at[player])
        last = members.pop()
        if last != player:
            members[index] = last
            self.at[last] = index
