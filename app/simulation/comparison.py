"""The report of two configurations on one population and seed, side by side (pure): what
differs, the headline numbers and targets of each, and the charts overlaid. The A/B test of
mode settings, with the rating's convergence in it."""

from __future__ import annotations

from app.simulation import measures, targets
from app.simulation.charts import Guide, Series, bar_chart, line_chart
from app.simulation.markdown import Report, Result, games, headline, method, seconds, table
from app.simulation.report import TABLE_GAMES, calibration_chart, convergence_chart, window_starts
from app.simulation.scenario import Scenario


def compare(first: Result, second: Result) -> Report:
    a, b = first.scenario, second.scenario
    names = [a.name, b.name]
    labels = [f" ({a.name})", f" ({b.name})"]
    charts: dict[str, str] = {}
    lines = [
        f"# Comparison: `{a.name}` against `{b.name}` ({first.run.clock} clock)",
        "",
        f"Made by `{first.command}`. Both ran on the same population and seed ({a.seed}); the settings"
        " that differ:",
        "",
        *table(["setting", *names], differences(a, b)),
    ]
    # A row only one run has (arrivals turned away, a ready check) reads "–" for the other.
    ones, twos = dict(headline(first)), dict(headline(second))
    rows = [[name, ones.get(name, "–"), twos.get(name, "–")] for name in {**ones, **twos}]
    for ta, tb in zip(targets.targets(first.run, None), targets.targets(second.run, None), strict=True):
        rows.append([ta.name, _verdict(ta), _verdict(tb)])
    rows.append(
        [
            f"games to a rank correlation of {targets.CONVERGED:g}",
            games(targets.games_to(first.run.checkpoints, "displayed")),
            games(targets.games_to(second.run.checkpoints, "displayed")),
        ]
    )
    lines += ["## Side by side", "", *table(["measure", *names], rows)]

    waits = [measures.waits_over_time(first.run), measures.waits_over_time(second.run)]
    series = []
    for label, result, rows_of in zip(labels, (first, second), waits, strict=True):
        starts = window_starts(result.run, rows_of)
        series.append(Series(f"p50{label}", starts, [r.p50 for r in rows_of], markers=True))
        series.append(Series(f"p90{label}", starts, [r.p90 for r in rows_of], dashed=True, markers=True))
    charts["wait_over_time.svg"] = line_chart(
        "Time to match over time", "simulated hours (window start)", "seconds waited", series
    )
    lines += ["## Time to match", "", "![time to match](wait_over_time.svg)", ""]
    header = ["window"] + [f"{p} {name}" for p in ("p50", "p90", "p99") for name in names]
    lines += table(
        header,
        [
            [ra.label, *(seconds(getattr(r, p)) for p in ("p50", "p90", "p99") for r in (ra, rb))]
            for ra, rb in zip(*waits, strict=True)
        ],
    )

    histograms = [measures.quality_histogram(r.run, 10) for r in (first, second)]
    charts["quality.svg"] = bar_chart(
        "Match quality",
        "quality (bin start)",
        "share of matches",
        [f"{q.low:.1f}" for q in histograms[0]],
        [
            (name, [q.matches / max(r.run.matches, 1) for q in h])
            for name, r, h in zip(names, (first, second), histograms, strict=True)
        ],
    )
    lines += ["## Match quality", "", "![match quality](quality.svg)", ""]

    fair = [targets.fairness(first.run), targets.fairness(second.run)]
    charts["fairness.svg"] = line_chart(
        "Players winning 35–65% of their games",
        "games played, at least",
        "share of players",
        [
            Series(
                f"within 35–65%{label}", [f.games for f in rows_of], [f.within for f in rows_of], markers=True
            )
            for label, rows_of in zip(labels, fair, strict=True)
        ],
        y_range=(0.0, 1.0),
        guides=[Guide(targets.FAIR_SHARE, "target 80%")],
    )
    lines += ["## Fairness", "", "![fairness](fairness.svg)", ""]

    limit = targets.information_limit(a, len(first.run.skill))
    charts["convergence.svg"] = convergence_chart(
        [(labels[0], first.run), (labels[1], second.run)], limit, elo=False
    )
    lines += ["## Convergence", "", "![convergence](convergence.svg)", ""]
    by_games = [{p.games: p for p in r.run.checkpoints} for r in (first, second)]
    shown = sorted(g for g in set(by_games[0]) | set(by_games[1]) if g in TABLE_GAMES)
    lines += table(
        ["games", *names],
        [[g, *(f"{c[g].displayed:.3f}" if g in c else "–" for c in by_games)] for g in shown],
    )

    calibration = [measures.calibration(first.run, a), measures.calibration(second.run, b)]
    if all(calibration):
        charts["calibration.svg"] = calibration_chart(
            [
                (label, r.run, rows_of)
                for label, r, rows_of in zip(labels, (first, second), calibration, strict=True)
            ]
        )
        lines += ["## Calibration", "", "![calibration](calibration.svg)", ""]
    lines += method(a, first.run)
    return Report("\n".join(lines), charts)


def _verdict(target: targets.Target) -> str:
    return f"{target.figure} ({'met' if target.passed else 'not met'})"


def differences(a: Scenario, b: Scenario) -> list[list[str]]:
    """The settings the two scenarios do not share: [mode] keys as written, other tables whole."""
    rows = []
    for key in sorted(set(a.mode.body) | set(b.mode.body)):
        one, two = a.mode.body.get(key, "(default)"), b.mode.body.get(key, "(default)")
        if one != two:
            rows.append([f"mode.{key}", str(one), str(two)])
    for name in ("duration_seconds", "arrivals", "sessions", "parties", "regions", "truth", "matchmaker"):
        if getattr(a, name) != getattr(b, name):
            rows.append([name, str(getattr(a, name)), str(getattr(b, name))])
    return rows or [["(nothing)", "", ""]]
