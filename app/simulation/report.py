"""The report of one scenario: report.md with its tables, and the SVG charts it links (pure).

The targets come first, each failure with what the figures say about it; then time to match,
match quality and draws (seed 003's plot), fairness (seed 000's), convergence against Elo and
random pairing with the information-theoretic limit, and calibration: each a table and a chart.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from app.simulation import measures, targets
from app.simulation.charts import Guide, Series, bar_chart, line_chart
from app.simulation.markdown import Report, Result, describe, games, headline, method, seconds, share, table
from app.simulation.measures import WaitRow
from app.simulation.record import DECLINED, EXPIRED, MATCHED, Run
from app.simulation.targets import CONVERGED, FAIR_GAMES, FAIR_HIGH, FAIR_LOW

TABLE_GAMES = (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 60, 80, 100, 150, 200)


def single(result: Result) -> Report:
    scenario, run = result.scenario, result.run
    charts: dict[str, str] = {}
    lines = [
        f"# Simulation of `{scenario.name}` ({run.clock} clock)",
        "",
        f"Made by `{result.command}`.",
        "",
        *describe(scenario, len(run.skill)),
    ]
    lines += _targets(result)
    lines += ["## Headline", "", *table(["measure", "value"], headline(result))]
    lines += _ready_check(result)
    lines += _leaving(result)
    lines += _waits(result, charts)
    lines += _quality(result, charts)
    lines += _fairness(run, charts)
    lines += _convergence(result, charts)
    lines += _calibration(result, charts)
    lines += method(scenario, run)
    return Report("\n".join(lines), charts)


def _ready_check(result: Result) -> list[str]:
    """The ready check's figures, when the mode has one: how many proposals failed, and what
    a failure cost the players put back in the queue."""
    run = result.run
    if not run.ready_check:
        return []
    tickets = len(run.ticket_outcome)
    declined = int((run.ticket_outcome == DECLINED).sum())
    extra, outcome = run.requeued_extra_wait, run.requeued_outcome
    back = len(extra)
    matched = extra[outcome == MATCHED]
    p50, p90, p99 = np.percentile(matched, measures.PERCENTILES) if len(matched) else (math.nan,) * 3
    answers = (
        "every player answers at once, at the matchmaking call that proposed the match"
        if run.clock == "virtual"
        else "every party answers through the typed client as soon as its long-poll sees the proposal"
    )
    chance = result.scenario.sessions.decline_probability
    lines = [
        "## Ready check",
        "",
        f"The mode's ready check (accept_timeout_s {result.scenario.mode.accept_timeout_s:g} s): each"
        f" player declines a proposed match with probability {chance:g}; {answers}. A failed proposal"
        " cancels the decliners' tickets (their sessions end) and puts the others back in the queue"
        " with their original enqueue time, so their wait keeps counting. Extra wait: from the first"
        " failed proposal to the match, for the tickets put back that were then matched.",
        "",
    ]
    failed = run.proposals_failed / run.proposals if run.proposals else math.nan
    rows = [
        ["proposals", f"{run.proposals:,}"],
        ["failed (a player declined)", f"{run.proposals_failed:,} ({share(failed)})"],
        [
            "tickets cancelled by a decline",
            f"{declined:,} ({share(declined / tickets if tickets else math.nan)} of the tickets)",
        ],
        [
            "tickets put back in the queue",
            f"{back:,}: {share((outcome == MATCHED).mean() if back else math.nan)} then matched,"
            f" {share((outcome == EXPIRED).mean() if back else math.nan)} expired,"
            f" {share((outcome == DECLINED).mean() if back else math.nan)} declined a later proposal",
        ],
        ["their extra wait", f"p50 {seconds(p50)} s, p90 {seconds(p90)} s, p99 {seconds(p99)} s"],
    ]
    return [*lines, *table(["measure", "value"], rows)]


def _leaving(result: Result) -> list[str]:
    """What players leaving matches in play cost, when they do: the games they left, and the
    backfills that refilled their seats (how many, how fast, how good) or the games that ended
    short."""
    run = result.run
    if not run.leaving:
        return []
    chance = result.scenario.sessions.leave_probability
    places = int(run.match_players.sum())
    lines = [
        "## Leaving and backfill",
        "",
        f"Each player of a match leaves it with probability {chance:g}, at a moment uniform over"
        " their time in it, which ends their session. A game a player left is rated at its end with"
        " every player's partial play (the share of the game each played, the rating's `weight`),"
        " and its outcome follows the same partial play.",
        "",
    ]
    left = run.games_left
    rows = [
        [
            "players who left",
            f"{run.leavers:,} ({share(run.leavers / places if places else math.nan)} of the"
            " places in matches)",
        ],
        [
            "games a player left",
            f"{left:,} ({share(left / run.matches if run.matches else math.nan)} of the matches)",
        ],
    ]
    if run.backfill:
        lines += [
            "A game a player left opens a backfill for the seat, as a lobby posts one to"
            " `POST /v1/queues/{mode}/backfills`; each matchmaking call serves the open backfills first,"
            " oldest first, with the service's fill search (the fill with the best quality of the"
            " completed game that clears the threshold of the backfill's age, relaxed as a ticket's"
            " wait relaxes it). The backfill goes when its game ends. Time to fill: from the moment a"
            " seat opened to its fill; fill quality: the completed game's.",
            "",
        ]
        filled = len(run.fill_wait)
        p50, p90, p99 = np.percentile(run.fill_wait, measures.PERCENTILES) if filled else (math.nan,) * 3
        fills = run.fill_quality
        new = run.match_quality
        rows += [
            ["seats opened for a backfill", f"{run.seats_opened:,}"],
            [
                "seats filled",
                f"{filled:,} ({share(filled / run.seats_opened if run.seats_opened else math.nan)}),"
                f" in {len(fills):,} fills",
            ],
            ["time to fill a seat", f"p50 {seconds(p50)} s, p90 {seconds(p90)} s, p99 {seconds(p99)} s"],
            [
                "fill quality (the completed game)",
                f"mean {fills.mean():.3f}, p10 {np.percentile(fills, 10):.3f}"
                f" (new matches: mean {new.mean():.3f}, p10 {np.percentile(new, 10):.3f})"
                if len(fills) and len(new)
                else "–",
            ],
        ]
    else:
        lines += [
            "The mode's games take no backfill (the service's backfills serve modes without roles,"
            " and rosters of all the mode's teams): a seat left stays empty to the game's end.",
            "",
        ]
    rows.append(
        [
            "games that ended short (fewer players than they started with)",
            f"{run.games_short:,} ({share(run.games_short / left if left else math.nan)} of the games left)",
        ]
    )
    return [*lines, *table(["measure", "value"], rows)]


def _targets(result: Result) -> list[str]:
    found = targets.targets(result.run, result.random)
    lines = ["## Targets", ""]
    lines += table(
        ["target", "figure", "met"], [[t.name, t.figure, "yes" if t.passed else "**no**"] for t in found]
    )
    for target in found:
        if not target.passed:
            lines += [f"- **{target.name}: not met.** {target.why}.", ""]
    return lines


def wait_table(first: str, rows: Sequence[WaitRow]) -> list[str]:
    return table(
        [first, "tickets matched", "expired", "p50 s", "p90 s", "p99 s"],
        [[r.label, r.tickets, r.expired, seconds(r.p50), seconds(r.p90), seconds(r.p99)] for r in rows],
    )


def _percentile_bars(title: str, caption: str, rows: Sequence[WaitRow], short: Callable[[str], str]) -> str:
    return bar_chart(
        title,
        caption,
        "seconds waited",
        [short(r.label) for r in rows],
        [(f"p{int(p)}", [getattr(r, f"p{int(p)}") for r in rows]) for p in measures.PERCENTILES],
    )


def window_starts(run: Run, rows: Sequence[WaitRow]) -> list[float]:
    """Each time window's start, in simulated hours."""
    step = measures.window_seconds(run.duration)
    return [number * step / 3600.0 for number in range(len(rows))]


def _waits(result: Result, charts: dict[str, str]) -> list[str]:
    run, scenario = result.run, result.scenario
    lines = [
        "## Time to match",
        "",
        "Seconds from queueing to being matched, for the tickets matched (a party is one ticket). An"
        " expired ticket reached the mode's ticket lifetime unmatched, and its players left.",
        "",
    ]
    over_time = measures.waits_over_time(run)
    lines += ["### Over time", "", *wait_table("simulated time (h:mm)", over_time)]
    charts["wait_over_time.svg"] = line_chart(
        "Time to match over time",
        "simulated hours (window start)",
        "seconds waited",
        [
            Series(f"p{int(p)}", window_starts(run, over_time), [getattr(r, f"p{int(p)}") for r in over_time])
            for p in measures.PERCENTILES
        ],
    )
    lines += ["![time to match over time](wait_over_time.svg)", ""]
    by_skill = measures.waits_by_skill(run, result.start_skill)
    lines += ["### By true-skill decile", "", *wait_table("decile (true skill)", by_skill)]
    charts["wait_by_skill.svg"] = _percentile_bars(
        "Time to match by true-skill decile",
        "decile of true skill (1 lowest)",
        by_skill,
        lambda s: s.split()[0],
    )
    lines += ["![time to match by skill decile](wait_by_skill.svg)", ""]
    experience = measures.waits_by_experience(run)
    lines += [
        "### By games already played",
        "",
        "New players' ratings are uncertain (sigma near the prior), so even a match of equal players"
        " scores a lower quality for them (seed 000 eq. 7): a quality_start above what they can reach"
        " keeps them waiting for the relaxation.",
        "",
        *wait_table("games played before the ticket", experience),
    ]
    charts["wait_by_games.svg"] = _percentile_bars(
        "Time to match by games already played",
        "games played before the ticket",
        experience,
        lambda s: s.split()[0],
    )
    lines += ["![time to match by games played](wait_by_games.svg)", ""]
    by_region = measures.waits_by_region(run, [region.name for region in scenario.regions])
    lines += ["### By home region", "", *wait_table("home region", by_region)]
    charts["wait_by_region.svg"] = _percentile_bars(
        "Time to match by home region", "home region", by_region, lambda s: s
    )
    lines += ["![time to match by region](wait_by_region.svg)", ""]
    lines += _by_ticket(result, charts)
    return [*lines, *_sizes(result)]


def _by_ticket(result: Result, charts: dict[str, str]) -> list[str]:
    """Solo players by the role they list first, and parties by size."""
    rows = measures.waits_by_ticket(result.run)
    if not rows:
        return []
    roles = bool(result.run.roles)
    lines = ["### By role and party" if roles else "### By party size", ""]
    if roles:
        lines += [
            "Solo players by the role they list first: a role fewer players accept fills its slots"
            " sooner, so its players wait less and the others wait for them. The last column is the"
            " share of those matched who were seated in that first choice; a party is counted by its"
            " size.",
            "",
        ]
    lines += table(
        ["tickets", "tickets matched", "expired", "p50 s", "p90 s", "p99 s", "seated in first choice"],
        [
            [
                r.waits.label,
                r.waits.tickets,
                r.waits.expired,
                seconds(r.waits.p50),
                seconds(r.waits.p90),
                seconds(r.waits.p99),
                share(r.first_choice),
            ]
            for r in rows
        ],
    )
    charts["wait_by_ticket.svg"] = _percentile_bars(
        "Time to match by role and party" if roles else "Time to match by party size",
        "tickets",
        [r.waits for r in rows],
        lambda s: s.removesuffix(" first"),
    )
    return [*lines, "![time to match by role and party](wait_by_ticket.svg)", ""]


def _sizes(result: Result) -> list[str]:
    """Matches by size, when the mode lets them shrink."""
    shape = result.scenario.mode.shape
    if not shape.flexible:
        return []
    rows = measures.match_sizes(result.run)
    total = max(result.run.matches, 1)
    played = max(int(result.run.match_players.sum()), 1)
    lines = [
        "## Match size",
        "",
        f"The mode's matches hold {shape.players} players at full size and may shrink to"
        f" {shape.minimum} as their longest wait grows (over relax_seconds,"
        f" {result.scenario.mode.relax_seconds:g} s): how many formed at each size, and their mean"
        " quality.",
        "",
    ]
    lines += table(
        ["players", "matches", "share of matches", "share of games played", "mean quality"],
        [
            [
                r.players,
                r.matches,
                share(r.matches / total),
                share(r.matches * r.players / played),
                f"{r.quality:.3g}",
            ]
            for r in rows
        ],
    )
    return lines


def _quality(result: Result, charts: dict[str, str]) -> list[str]:
    run, scenario = result.run, result.scenario
    lines = [
        "## Match quality",
        "",
        "Each match's draw quality as the matchmaker scored it (seed 000 eq. 7): the chance of a draw"
        " relative to the fairest possible match, 1 for equal teams whose skills are known.",
        "",
    ]
    histogram = measures.quality_histogram(run, bins=10)
    total = max(run.matches, 1)
    lines += table(
        ["quality", "matches", "share"],
        [[f"{b.low:.1f}–{b.high:.1f}", b.matches, share(b.matches / total)] for b in histogram],
    )
    charts["quality.svg"] = bar_chart(
        "Match quality",
        "quality (bin start)",
        "matches",
        [f"{b.low:.1f}" for b in histogram],
        [("matches", [float(b.matches) for b in histogram])],
    )
    lines += ["![match quality](quality.svg)", ""]
    draws = measures.draws_by_quality(run, scenario)
    if not draws:
        return lines
    lines += [
        "### Predicted and observed draws by quality decile",
        "",
        "Seed 003 §4.1: a match that is truly tight is likely to end in a draw, so draws should rise with"
        " quality, as the mode predicts them. The second chart is seed 003's: the share of all draws"
        " accumulated over the matches sorted by quality, best first; the better quality ranks tight matches,"
        " the further the curve bends above the diagonal.",
        "",
    ]
    lines += table(
        ["quality decile", "matches", "predicted draws", "observed draws"],
        [[f"{d.low:.3f}–{d.high:.3f}", d.matches, share(d.predicted), share(d.observed)] for d in draws],
    )
    middles = [(d.low + d.high) / 2 for d in draws]
    charts["draws_by_quality.svg"] = line_chart(
        "Draw rate by match quality decile",
        "match quality (decile middle)",
        "draw rate",
        [
            Series("predicted by the mode", middles, [d.predicted for d in draws], markers=True),
            Series("observed", middles, [d.observed for d in draws], markers=True),
        ],
    )
    x, y = measures.cumulative_draws(run)
    keep = np.unique(np.linspace(0, len(x) - 1, 400).astype(int))
    charts["draws_accumulated.svg"] = line_chart(
        "Draws accumulated over matches sorted by quality (seed 003)",
        "share of matches, best quality first",
        "share of all draws",
        [
            Series("sorted by quality", x[keep].tolist(), y[keep].tolist()),
            Series("in no order", [0.0, 1.0], [0.0, 1.0], dashed=True),
        ],
        x_range=(0.0, 1.0),
        y_range=(0.0, 1.0),
    )
    return [
        *lines,
        "![draws by quality](draws_by_quality.svg)",
        "",
        "![draws accumulated](draws_accumulated.svg)",
        "",
    ]


def _fairness(run: Run, charts: dict[str, str]) -> list[str]:
    lines = [
        "## Fairness",
        "",
        f"Seed 000 §4.1: the share of players whose score (wins + draws/2, over their games) is within"
        f" {FAIR_LOW:.0%}–{FAIR_HIGH:.0%}, among the players with at least so many games. *Fair coin* is the"
        " share that perfectly even matches would give the same players over the same numbers of games (each"
        " a coin flip, draws at the run's rate): the spread of chance alone, which no matchmaking removes.",
        "",
    ]
    fair = targets.fairness(run)
    lines += table(
        ["games at least", "players", "within 35–65%", "fair coin", "mean |score − 50%|"],
        [[f.games, f.players, share(f.within), share(f.fair_coin), share(f.deviation)] for f in fair],
    )
    charts["fairness.svg"] = line_chart(
        "Players winning 35–65% of their games",
        "games played, at least",
        "share of players",
        [
            Series("this loop", [f.games for f in fair], [f.within for f in fair], markers=True),
            Series("fair coin flips", [f.games for f in fair], [f.fair_coin for f in fair], dashed=True),
        ],
        y_range=(0.0, 1.0),
        guides=[
            Guide(targets.FAIR_SHARE, "target 80%"),
            Guide(FAIR_GAMES, f"{FAIR_GAMES} games", vertical=True),
        ],
    )
    lines += ["![fairness by games played](fairness.svg)", ""]
    by_skill = targets.fairness_by_skill(run)
    if by_skill:
        lines += [f"Players with at least {FAIR_GAMES} games, by true-skill decile:", ""]
        lines += table(
            ["decile (true skill)", "players", "within 35–65%"], [[a, n, share(v)] for a, n, v in by_skill]
        )
    return lines


def convergence_chart(runs: Sequence[tuple[str, Run]], limit: float, elo: bool = True) -> str:
    series = []
    for label, run in runs:
        played = [float(p.games) for p in run.checkpoints]
        series.append(Series(f"TrueSkill{label}", played, [p.displayed for p in run.checkpoints]))
        if elo:
            series.append(Series(f"Elo K=24{label}", played, [p.elo for p in run.checkpoints], dashed=True))
    top = max((float(p.games) for _, run in runs for p in run.checkpoints), default=1.0)
    return line_chart(
        "Rank correlation of the displayed rating with true skill",
        "games played (each player as rated right after that game)",
        "Spearman rank correlation",
        series,
        x_range=(0.0, max(top, limit * 1.05)),
        y_range=(0.0, 1.0),
        guides=[
            Guide(CONVERGED, f"{CONVERGED:g}"),
            Guide(limit, f"information limit {limit:.1f}", vertical=True),
        ],
    )


def _convergence(result: Result, charts: dict[str, str]) -> list[str]:
    scenario, run, random = result.scenario, result.run, result.random
    population = len(run.skill)
    limit = targets.information_limit(scenario, population)
    lines = [
        "## Convergence",
        "",
        "Spearman's rank correlation of the displayed rating"
        f" (mu − {scenario.mode.conservative_k:g}·sigma, as the leaderboard orders) with true skill,"
        " by games played: each player as rated right after their n-th game, over all the players who"
        " played at least n games. Elo (K = 24, seed 000) is rated on the same matches; random pairing"
        " runs the loop again on the same population with tickets matched in random order (seed 003"
        " §4.2: matchmaking by quality is sequential experimental design, so it should learn faster)."
        f" The information-theoretic limit (seed 000 §4.1) is {limit:.1f} games per player: the fewest"
        f" in which any system could order all {population:,} players.",
        "",
    ]
    theirs = {p.games: p for p in random.checkpoints} if random else {}
    last = run.checkpoints[-1].games if run.checkpoints else 0
    rows = []
    for point in run.checkpoints:
        if point.games in TABLE_GAMES or point.games == last:
            other = theirs.get(point.games)
            rows.append(
                [
                    point.games,
                    f"{point.players:,}",
                    f"{point.displayed:.3f}",
                    f"{point.mu:.3f}",
                    f"{point.elo:.3f}",
                    f"{other.displayed:.3f}" if other else "–",
                    f"{other.elo:.3f}" if other else "–",
                ]
            )
    header = ["games", "players", "TrueSkill", "TrueSkill mu", "Elo", "random pairing: TrueSkill", "…: Elo"]
    lines += table(header, rows)
    reach = [
        ("TrueSkill, quality-matched", targets.games_to(run.checkpoints, "displayed")),
        ("Elo on the same matches", targets.games_to(run.checkpoints, "elo")),
    ]
    if random:
        reach += [
            ("TrueSkill, random pairing", targets.games_to(random.checkpoints, "displayed")),
            ("Elo, random pairing", targets.games_to(random.checkpoints, "elo")),
        ]
    lines += [
        f"Games to reach {CONVERGED:g}: " + "; ".join(f"{name} {games(g)}" for name, g in reach) + ".",
        "",
    ]
    runs = [("", run)] + ([(" (random pairing)", random)] if random else [])
    charts["convergence.svg"] = convergence_chart(runs, limit)
    return [*lines, "![convergence](convergence.svg)", ""]


def _calibration(result: Result, charts: dict[str, str]) -> list[str]:
    rows = measures.calibration(result.run, result.scenario)
    if not rows:
        return []
    lines = [
        "## Calibration",
        "",
        "The favoured team's win probability as the mode predicted it before the match (Φ(Δ/c), as the"
        " service's win probability gives it), against its observed score (a draw counts ½).",
        "",
    ]
    lines += table(
        ["predicted", "matches", "mean predicted", "observed"],
        [[f"{c.low:.2f}–{c.high:.2f}", c.matches, share(c.predicted), share(c.observed)] for c in rows],
    )
    charts["calibration.svg"] = calibration_chart([("", result.run, rows)])
    return [*lines, "![calibration](calibration.svg)", ""]


def calibration_chart(runs: Sequence[tuple[str, Run, Sequence[measures.CalibrationRow]]]) -> str:
    series = [
        Series(f"observed{label}", [c.predicted for c in rows], [c.observed for c in rows], markers=True)
        for label, _, rows in runs
    ]
    return line_chart(
        "Calibration: predicted against observed",
        "predicted win probability of the favourite",
        "observed score",
        [*series, Series("perfect", [0.5, 1.0], [0.5, 1.0], dashed=True)],
        x_range=(0.5, 1.0),
        y_range=(0.0, 1.0),
    )
