"""Pieces both reports are written from (pure): Markdown tables, the scenario described in a
few lines, the headline numbers of a run, and how the run was made."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from app.simulation import measures
from app.simulation.record import DECLINED, EXPIRED, LEFT_AT_END, MATCHED, Run
from app.simulation.scenario import Scenario
from app.simulation.truth import DRAW


@dataclass(frozen=True, slots=True)
class Report:
    markdown: str
    charts: dict[str, str]  # file name -> SVG


@dataclass(frozen=True, slots=True)
class Result:
    """A scenario's run, its random-pairing baseline (when run), the population's true skills
    at the start, and the command line that made it (the API key hidden)."""

    scenario: Scenario
    run: Run
    random: Run | None
    start_skill: npt.NDArray[np.float64]
    command: str


def seconds(value: float) -> str:
    return "–" if not math.isfinite(value) else f"{value:.1f}"


def share(value: float) -> str:
    return "–" if not math.isfinite(value) else f"{value:.1%}"


def games(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f}"


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """A Markdown table, then a blank line."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return [*lines, ""]


def describe(scenario: Scenario, population: int) -> list[str]:
    """The scenario in a few lines, then the mode's settings as a table."""
    a, s, m, truth = scenario.arrivals, scenario.sessions, scenario.mode, scenario.truth
    spec = scenario.population
    if spec.from_mode is not None:
        who = f"{population:,} players of mode `{spec.from_mode}`, true skills drawn from their ratings"
    elif spec.skills.distribution == "normal":
        who = f"{population:,} players, true skills N({spec.skills.mean:g}, {spec.skills.sd:.4g}²)"
    else:
        who = f"{population:,} players, true skills uniform on [{spec.skills.low:g}, {spec.skills.high:g}]"
    arrivals = f"{a.players_per_second:g} players/s starting a session"
    if a.daily_curve:
        arrivals += f" times a daily curve ({min(a.daily_curve):g}–{max(a.daily_curve):g})"
    if a.initial_share:
        arrivals += f"; {a.initial_share:.0%} of the population online at the start"
    session = (
        f"{'exactly' if s.fixed else 'on average'} {s.matches:g} matches, each {s.match_seconds:g} s "
        f"(sd {s.match_seconds_sd:g}), pauses of {s.pause_seconds:g} s on average"
    )
    if s.leave_probability:
        session += f"; each player leaves a match in play with probability {s.leave_probability:g}"
    total = sum(scenario.parties.values())
    parties = ", ".join(f"{part / total:.0%} of {size}" for size, part in sorted(scenario.parties.items()))
    regions = ", ".join(
        f"{r.name} ({r.share:g} of players, {r.latency_ms:g}±{r.latency_sd_ms:g} ms)"
        for r in scenario.regions
    )
    matchmaker = scenario.matchmaker
    latency = (
        "none"
        if m.max_latency_ms is None
        else f"{m.max_latency_ms:g} ms, relaxing to {m.max_latency_relaxed_ms:g} ms"
    )
    if spec.roles:
        every = sum(r.share for r in spec.roles)
        who += "; roles accepted, in order of preference: " + ", ".join(
            f"{' > '.join(r.accepts)} {r.share / every:.0%}" for r in spec.roles
        )
    if spec.avoid_probability:
        who += (
            f"; after each match a player avoids one of its other players with probability"
            f" {spec.avoid_probability:g} (lists of {spec.avoid_list})"
        )
    shape = m.shape
    size = f"{m.teams} × {m.team_size}"
    if shape.flexible:
        size += f", shrinking to {shape.shapes[-1][0]} × {shape.shapes[-1][1]} over relax_seconds"
    composition = shape.composition
    lines = [
        f"- **Population**: {who}.",
        f"- **Arrivals**: {arrivals}. **Sessions**: {session}. **Parties** (of the tickets): {parties}.",
        f"- **Regions**: {regions or 'none (tickets list no latencies)'}.",
        f"- **Simulated**: {measures.span(scenario.duration_seconds)}, seed {scenario.seed}; "
        f"matchmaking every {matchmaker.interval_seconds:g} s, "
        f"up to {matchmaker.max_matches} matches a call.",
        f"- **The game**: each player performs N(skill, {truth.beta:.4g}²), equal teams draw "
        f"{truth.draw_probability:.0%} of the time, skills drift {truth.skill_drift:g} (sd) per match.",
        "",
        "The mode under test:",
        "",
    ]
    return lines + table(
        ["setting", "value"],
        [
            ["teams × team_size", size],
            [
                "roles (per team)",
                "none"
                if composition is None
                else ", ".join(
                    f"{r}: {c}" for r, c in zip(composition.roles, composition.counts, strict=True)
                ),
            ],
            ["mu, sigma, beta, tau", f"{m.mu:g}, {m.sigma:.4g}, {m.beta:.4g}, {m.tau:.4g}"],
            ["draw_probability", f"{m.draw_probability:g}"],
            ["quality_start → quality_floor", f"{m.quality_start:g} → {m.quality_floor:g}"],
            ["relax_seconds", f"{m.relax_seconds:g}"],
            ["ticket_ttl_seconds", f"{m.ticket_ttl_seconds:g}"],
            ["latency rule (max_latency_ms)", latency],
            ["displayed rating", f"mu − {m.conservative_k:g}·sigma"],
        ],
    )


def _random_also(scenario: Scenario) -> str:
    """What else random pairing ignores, or does as the mode does, for this scenario."""
    ignored = [
        name
        for name, used in (
            ("roles", scenario.mode.shape.composition is not None),
            ("avoid lists", scenario.population.avoid_probability > 0),
        )
        if used
    ]
    text = f" (and {' and '.join(ignored)})" if ignored else ""
    if scenario.mode.shape.flexible:
        text += "; its matches shrink with the longest wait by the mode's rule"
    return text


def headline(result: Result) -> list[tuple[str, str]]:
    """The few numbers a studio reads first."""
    run, scenario = result.run, result.scenario
    matched = run.ticket_outcome == MATCHED
    waits = run.ticket_waited[matched]
    p50, p90, p99 = np.percentile(waits, measures.PERCENTILES) if len(waits) else (math.nan,) * 3
    two = run.match_outcome >= 0
    _, predicted = measures.predictions(run, scenario)
    tickets = len(run.ticket_outcome)
    rows = [
        ("matches played", f"{run.matches:,}"),
        (
            "games per player",
            f"{run.games.mean():.1f} on average (median {np.median(run.games):g}, most {run.games.max()})",
        ),
        (
            "tickets",
            f"{tickets:,}: {share(matched.mean())} matched, "
            f"{share((run.ticket_outcome == EXPIRED).mean())} expired, "
            f"{share((run.ticket_outcome == LEFT_AT_END).mean())} still queued at the end"
            + (f", {share((run.ticket_outcome == DECLINED).mean())} declined" if run.ready_check else "")
            if tickets
            else "none",
        ),
        ("time to match", f"p50 {seconds(p50)} s, p90 {seconds(p90)} s, p99 {seconds(p99)} s"),
    ]
    if run.matches:
        quality = run.match_quality
        rows.append(("match quality", f"mean {quality.mean():.3f}, p10 {np.percentile(quality, 10):.3f}"))
    if two.any():
        observed = (run.match_outcome[two] == DRAW).mean()
        rows.append(
            ("draws", f"{share(observed)} observed, {share(predicted[two].mean())} predicted by the mode")
        )
    if run.ready_check:
        failed = run.proposals_failed / run.proposals if run.proposals else math.nan
        rows.append(
            ("ready check", f"{run.proposals:,} proposals, {share(failed)} failed (a player declined)")
        )
    if run.leaving:
        rows.append(("leaving", _leaving(run)))
    if run.turned_away:
        rows.append(("arrivals turned away", f"{run.turned_away:,} players (everyone was already online)"))
    wall = f"{run.wall_seconds:.1f} s for the loop ({run.clock} clock"
    if run.clock == "virtual" and run.wall_seconds > 0:
        wall += f", {run.duration / run.wall_seconds:,.0f} simulated seconds a second"
    rows.append(("wall time", wall + ")"))
    if run.errors or run.clock == "live":
        listed = ": " + "; ".join(run.errors[:5]) if run.errors else ""
        rows.append(("errors", f"{len(run.errors)}{listed}"))
    if run.clock == "live":
        rows.append(("lost results", f"{run.lost_results}"))
    return rows


def _leaving(run: Run) -> str:
    """The leaving headline: games left, their seats backfilled and how fast, games ended short."""
    left = run.games_left
    games_share = share(left / run.matches if run.matches else math.nan)
    text = f"{run.leavers:,} players left {left:,} games ({games_share} of the matches)"
    if run.backfill:
        filled = len(run.fill_wait)
        p50 = float(np.median(run.fill_wait)) if filled else math.nan
        text += (
            f"; {share(filled / run.seats_opened if run.seats_opened else math.nan)} of their seats"
            f" backfilled, p50 {seconds(p50)} s to fill"
        )
    return text + f"; {share(run.games_short / left if left else math.nan)} ended short"


def method(scenario: Scenario, run: Run) -> list[str]:
    """How the run was made, for a reader who wants to trust or reproduce it."""
    lines = ["## How this was simulated", ""]
    if run.clock == "virtual":
        lines += [
            "The virtual clock runs the service's own code in process on simulated time. Every"
            f" {scenario.matchmaker.interval_seconds:g} s the waiting tickets become the queue's pool (NumPy"
            " columns, each ticket's ratings as read when it was queued), and"
            " `app.matchmaking.proposals.form_matches` forms matches with the mode's shape,"
            " relaxation (by each match's longest wait) and latency rule, as"
            " `POST /v1/queues/{mode}/matchmake` does. Results are rated by the service's batch path"
            " (`app.rating.levels`) and become visible when the match ends. Waits are exact to the"
            " matchmaking interval.",
            "",
        ]
    else:
        lines += [
            "The live clock ran the scenario in real time through the service's HTTP API with the typed"
            " client: each party queued a ticket and long-polled it, one lobby loop called matchmake, and"
            " each match's result was posted when it ended. Every player's match count was read back from the"
            " leaderboard at the end to find lost results. The random-pairing baseline ran on the virtual"
            " clock.",
            "",
        ]
    lines += [
        "Outcomes follow the rating model: each player performs N(skill, β²), a team the sum of its"
        " players, and two teams within the draw margin draw (seed 000 §2, §4.1). Elo is seed 000's"
        " Gaussian Elo (eq. 1) with K = 24 on Elo's scale (β = 200 points), in the mode's units"
        " K = 24·β/200, starting at the mode's mu; a team plays at its players' mean rating. Random"
        " pairing matches the waiting tickets in random order, ignoring skill, quality and latency"
        + _random_also(scenario)
        + ".",
        "",
    ]
    return lines
