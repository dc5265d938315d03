"""ATP singles: why Elo predicts better than TrueSkill and TTT here (issue #21 item 6).

    python bench/atp_evaluation.py [--datasets DIR] [--rows A,B,...] [--ttt A,...] [--min-games 20]

Controlled runs of seed 001 §3.9's comparison (app/evaluation/predictive.py): the same games
predicted by every model from the same information (the times before), the last 30% scored,
each row changing one thing against row A, which is `evaluate-history --source atp`:

- A: tournament start dates as times, walkovers dropped, the paper's sigma 1.6 and gamma 0.036
  for TrueSkill and TTT, Elo's α 0.07.
- B: each round its own time within its tournament (start + k/8 day, R128 → F).
- C: walkovers kept.  D: retirements (and defaults, abandonments) dropped.
- E: Davis Cup rubbers dropped.
- F: hyperparameters chosen on the first 70% of this extract, per model, by its own prior
  predictions there: Elo's α by its day-ahead predictions, TrueSkill's sigma and gamma by
  its online evidence (TTT keeps the paper's values, which the evidence fit of `fit-history`
  confirms on this extract).
- G: B and F together.

Each row also splits the predicted games by the players' experience: games where both had
played at least --min-games games before (regulars) and the rest (a newcomer in the match).
TTT costs one sweep of the whole history per predicted calendar day (minutes to an hour on
ATP), so it runs only for the rows named by --ttt. The output is the markdown table of
docs/evaluation.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.evaluation import histories, predictive  # noqa: E402
from app.evaluation.datasets import root  # noqa: E402

PAPER = predictive.Settings(sigma=1.6, gamma=0.036, p_draw=0.0)
EXTRACTS = {
    "A": histories.AtpExtract(),
    "B": histories.AtpExtract(rounds=True),
    "C": histories.AtpExtract(walkovers=True),
    "D": histories.AtpExtract(retirements=False),
    "E": histories.AtpExtract(davis_cup=False),
    "F": histories.AtpExtract(),
    "G": histories.AtpExtract(rounds=True),
}
FITTED = {"F", "G"}


def bits(better: predictive.Score, worse: predictive.Score) -> str:
    return f"{worse.log2_bayes_factor(better):+,.0f}"


def progress(label: str, started: float) -> Callable[[int, int], None]:
    def report(done: int, total: int) -> None:
        if done % 100 == 0 or done == total:
            elapsed = time.perf_counter() - started
            print(f"({label}: TTT {done}/{total} times, {elapsed:.0f} s)", file=sys.stderr, flush=True)

    return report


def row(label: str, datasets: Path, ttt: bool, min_games: int) -> list[str]:
    started = time.perf_counter()
    extract = EXTRACTS[label]
    data = histories.atp(datasets, extract)
    schedule = predictive.days(data)
    test_from = predictive.first_test_day(schedule, len(data.times))
    settings, trueskill_settings = PAPER, PAPER
    note = f"{extract.label}; α {PAPER.elo_alpha:g}, sigma {PAPER.sigma:g}, gamma {PAPER.gamma:g}"
    if label in FITTED:
        alpha, _ = predictive.fit_elo(data, PAPER)
        trial = predictive.fit_trueskill(data, PAPER)
        settings = dataclasses.replace(PAPER, elo_alpha=alpha)
        trueskill_settings = dataclasses.replace(PAPER, sigma=trial.sigma, gamma=trial.gamma)
        note = (
            f"{extract.label}; fitted: Elo α {alpha:.3g}, TrueSkill sigma {trial.sigma:.3g} "
            f"gamma {trial.gamma:.3g}"
        )
    elo = predictive.elo(data, settings, test_from, schedule)
    trueskill = predictive.bayesian(data, trueskill_settings, test_from, schedule, False)
    scores = [elo, trueskill]
    if ttt:
        report = progress(label, started)
        scores.append(predictive.bayesian(data, settings, test_from, schedule, True, report))
    first = len(data.times) - elo.games
    regular = [e >= min_games for e in predictive.experience(data, schedule)[first:]]
    newcomer = [not r for r in regular]
    cells = [label, note, f"{len(schedule):,}", f"{elo.games:,}"]
    for keep in (None, regular, newcomer):
        part = scores if keep is None else [s.where(keep) for s in scores]
        gms = " / ".join(f"{s.geometric_mean:.4f}" for s in part)
        versus = " / ".join(bits(s, part[0]) for s in part[1:])
        cells += [gms if keep is None else f"{gms} ({part[0].games:,})", versus]
    seconds = time.perf_counter() - started
    print(f"({label}: {seconds:.0f} s)", file=sys.stderr, flush=True)
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--datasets", type=Path, default=None, metavar="DIR")
    parser.add_argument("--rows", default="A,B,C,D,E,F,G")
    parser.add_argument("--ttt", default="", help="rows that also run TTT (slow), e.g. A,B")
    parser.add_argument("--min-games", type=int, default=20)
    args = parser.parse_args()
    datasets = root("atp", args.datasets)
    with_ttt = {r for r in args.ttt.split(",") if r}
    print(
        "| row | extract and hyperparameters | times | games predicted | GM Elo / TrueSkill[ / TTT] "
        "| log2 BF vs Elo: TrueSkill[ / TTT] "
        f"| regulars (both ≥ {args.min_games} games before): GM (games) | vs Elo "
        "| with a newcomer: GM (games) | vs Elo |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label in args.rows.split(","):
        print("| " + " | ".join(row(label, datasets, label in with_ttt, args.min_games)) + " |", flush=True)


if __name__ == "__main__":
    main()
