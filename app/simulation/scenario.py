"""A scenario: who plays, when, for how long, and under which mode settings (pure, typed).

reading.py builds one from a TOML file and checks every value; docs/simulator.md documents
each key with a commented example. Times are seconds, latencies milliseconds, skills and
ratings the mode's units.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from app.matchmaking.latency import LatencyRule
from app.matchmaking.quality import Relaxation
from app.matchmaking.shape import MatchShape
from app.rating import TrueSkill
from app.rating.performance import PAPER_C0, PAPER_C1, PAPER_ROSTER_CAP


@dataclass(frozen=True, slots=True)
class Skills:
    """True skills: `normal` (mean, sd) or `uniform` over [low, high]."""

    distribution: str = "normal"
    mean: float = 25.0
    sd: float = 25.0 / 3.0
    low: float = 0.0
    high: float = 50.0


@dataclass(frozen=True, slots=True)
class RolePreference:
    """A share of the players who accept these roles of the mode, in their order of preference."""

    accepts: tuple[str, ...]
    share: float


@dataclass(frozen=True, slots=True)
class PopulationSpec:
    """`size` players with `skills`, or (from_mode) the rated players of a mode of a running
    service, up to `size` of them: each keeps the mode's (mu, sigma) as the rating the loop
    starts from, and a true skill drawn from that belief, N(mu, sigma²).

    Under a mode with roles, each player accepts the roles of one of `roles`, drawn by its
    share and kept for the whole run. After each match, each player adds one of the match's
    other players to their avoid list with `avoid_probability`; a list keeps the `avoid_list`
    most recent (the oldest dropped), and a ticket avoids its players' lists."""

    size: int
    skills: Skills = field(default_factory=Skills)
    from_mode: str | None = None
    roles: tuple[RolePreference, ...] = ()
    avoid_probability: float = 0.0
    avoid_list: int = 10


@dataclass(frozen=True, slots=True)
class Arrivals:
    """Players starting a session: a Poisson process of `players_per_second` (parties count
    by their players), times `daily_curve[hour of day]` when a curve is given (24 factors;
    simulated time 0 is `start_hour` o'clock). `initial_share` of the population starts a
    session at time 0."""

    players_per_second: float
    daily_curve: tuple[float, ...] | None = None
    start_hour: float = 0.0
    initial_share: float = 0.0

    def rate(self, seconds: float) -> float:
        """Players arriving per second at simulated time `seconds`."""
        if self.daily_curve is None:
            return self.players_per_second
        hour = math.floor(self.start_hour + seconds / 3600.0) % 24
        return self.players_per_second * self.daily_curve[hour]

    @property
    def peak(self) -> float:
        return self.players_per_second * (max(self.daily_curve) if self.daily_curve else 1.0)


@dataclass(frozen=True, slots=True)
class Sessions:
    """A session is `matches` matches (their mean: geometric, at least one; or exactly that
    many when `fixed`), a pause between two (exponential, mean `pause_seconds`), each match
    lasting `match_seconds` on average (normal with `match_seconds_sd`, at least a tenth of the
    mean). Under the mode's ready check (`accept_timeout_s`), each player of a proposed match
    declines it with `decline_probability`, which ends their session. Each player of a match
    in play leaves it with `leave_probability`, at a moment uniform over its length, which
    ends their session; the game opens a backfill for the seat where the mode allows one."""

    matches: float = 5.0
    fixed: bool = False
    pause_seconds: float = 30.0
    match_seconds: float = 600.0
    match_seconds_sd: float = 0.0
    decline_probability: float = 0.0
    leave_probability: float = 0.0


@dataclass(frozen=True, slots=True)
class Region:
    """A share of the population living near `name`'s servers: latency to them ~ N(mean, sd)
    (at least 1 ms); to another region's, that plus `others[region]`. A region missing from
    `others` is not listed on the players' tickets: they never play there."""

    name: str
    share: float
    latency_ms: float
    latency_sd_ms: float = 0.0
    others: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ModeSettings:
    """The mode under test, as `PUT /v1/modes/{mode}` takes it (`body`, sent as is in live
    runs), with every value resolved: the service's defaults for those not given."""

    name: str
    body: Mapping[str, object]
    mu: float
    sigma: float
    beta: float
    tau: float
    draw_probability: float
    conservative_k: float
    teams: int
    team_size: int
    quality_start: float
    quality_floor: float
    relax_seconds: float
    ticket_ttl_seconds: float
    max_latency_ms: float | None
    max_latency_relaxed_ms: float | None
    # The match shape the service builds for the mode (app.modes.service.shape_of): teams ×
    # team_size at full size, the minimums it may shrink to, and the composition of its roles.
    shape: MatchShape
    tie_model: str = "chain"
    team_performance: str = "sum"
    size_penalty_c0: float = PAPER_C0
    size_penalty_c1: float = PAPER_C1
    roster_cap: int = PAPER_ROSTER_CAP
    # The ready check: every player of a proposal must accept it within this many seconds
    # (None: no check, proposals are accepted as they form).
    accept_timeout_s: float | None = None

    @property
    def players_per_match(self) -> int:
        """At full size."""
        return self.teams * self.team_size

    def environment(self) -> TrueSkill:
        """The rating environment the service builds for this mode (app.modes.service)."""
        return TrueSkill(
            self.mu,
            self.sigma,
            self.beta,
            self.tau,
            self.draw_probability,
            tie_model=self.tie_model,
            team_performance=self.team_performance,
            c0=self.size_penalty_c0,
            c1=self.size_penalty_c1,
            roster_cap=self.roster_cap,
        )

    def relaxation(self) -> Relaxation:
        return Relaxation(self.quality_start, self.quality_floor, self.relax_seconds)

    def latency_rule(self) -> LatencyRule | None:
        """The latency rule, relaxing over relax_seconds as the service's does."""
        if self.max_latency_ms is None:
            return None
        relaxed = self.max_latency_ms if self.max_latency_relaxed_ms is None else self.max_latency_relaxed_ms
        return LatencyRule(self.max_latency_ms, relaxed, self.relax_seconds)


@dataclass(frozen=True, slots=True)
class Truth:
    """The game the mode models: its performance noise `beta`, its real draw rate between equal
    teams, and how far each player's true skill wanders per match played (sd; 0: never)."""

    beta: float
    draw_probability: float
    skill_drift: float = 0.0


@dataclass(frozen=True, slots=True)
class Matchmaker:
    """The lobby's loop: matchmake every `interval_seconds`, up to `max_matches` per call."""

    interval_seconds: float = 1.0
    max_matches: int = 10_000


@dataclass(frozen=True, slots=True)
class Baselines:
    """Which baselines run beside the loop: Elo on its matches, and the loop again with random
    pairing on the same population."""

    elo: bool = True
    random_pairing: bool = True


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    seed: int
    duration_seconds: float
    population: PopulationSpec
    arrivals: Arrivals
    sessions: Sessions
    parties: Mapping[int, float]  # party size -> share of arriving tickets
    regions: tuple[Region, ...]
    mode: ModeSettings
    truth: Truth
    matchmaker: Matchmaker = field(default_factory=Matchmaker)
    baselines: Baselines = field(default_factory=Baselines)

    @property
    def mean_party(self) -> float:
        total = sum(self.parties.values())
        return sum(size * share for size, share in self.parties.items()) / total
