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
- H: only matches between players who each play at least 20 matches of the extract.
- I: F, with TTT given TrueSkill's fitted sigma and gamma as well.  J: the same for G.

TTT sweeps once per predicted calendar day (the paper's procedure), or once per
--sweep-every days (the days between get only the online update: a cheaper, weaker TTT).

Each row also splits the predicted games by the players' experience: games where both had
played at least --min-games games before (regulars) and the rest (a newcomer in the match).
TTT costs one sweep of the whole history per predicted calendar day (minutes to an hour on
ATP), so it runs only for the rows named by --ttt. The output is the markdown table of
docs/evaluation.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.evaluation import histories, predictive  # noqa: E402
from app.evaluation.datasets import root  # noqa: E402

PAPER = predictive.Parameters(sigma=1.6, gamma=0.036, p_draw=0.0)
EXTRACTS = {
    "A": histories.AtpExtract(),
    "B": histories.AtpExtract(rounds=True),
    "C": histories.AtpExtract(walkovers=True),
    "D": histories.AtpExtract(retirements=False),
    "E": histories.AtpExtract(davis_cup=False),
    "F": histories.AtpExtract(),
    "G": histories.AtpExtract(rounds=True),
    "H": histories.AtpExtract(regulars=20),
    "I": histories.AtpExtract(),
    "J": histories.AtpExtract(rounds=True),
}
FITTED = {"F", "G", "I", "J"}
TTT_AS_TRUESKILL = {"I", "J"}  # TTT with the hyperparameters fitted for TrueSkill


def bits(better: predictive.Score, worse: predictive.Score) -> str:
    return f"{worse.log2_bayes_factor(better):+,.0f}"


def progress(label: str, started: float) -> Callable[[int, int], None]:
    def report(done: int, total: int) -> None:
        if done % 100 == 0 or done == total:
            elapsed = time.perf_counter() - started
            print(f"({label}: TTT {done}/{total} times, {elapsed:.0f} s)", file=sys.stderr, flush=True)

    return report


def newcomers_against_regulars(
    scores: list[predictive.Score], played: list[tuple[int, int]], min_games: int
) -> str:
    """Over the games of one newcomer against one regular: how often the newcomer won, and the
    mean probability each model gave it (the winner is listed first, so a game's predicted
    probability is the winner's)."""
    # The newcomer's side of each such game: 0 if it is the winner.
    side = [(0 if a < min_games else 1) if (a < min_games) != (b < min_games) else -1 for a, b in played]
    chosen = [g for g, s in enumerate(side) if s >= 0]
    won = sum(1 for g in chosen if side[g] == 0) / len(chosen)
    cells = [f"{len(chosen):,}", f"{won:.3f}"]
    for score in scores:
        winner = [math.exp(score.log_probabilities[g]) for g in chosen]
        newcomer = [q if side[g] == 0 else 1.0 - q for q, g in zip(winner, chosen, strict=True)]
        cells.append(f"{sum(newcomer) / len(chosen):.3f}")
    return " | ".join(cells)


def row(
    label: str, datasets: Path, ttt: bool, min_games: int, calibration: list[str], sweep_every: int
) -> list[str]:
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
        if label in TTT_AS_TRUESKILL:
            settings = dataclasses.replace(trueskill_settings, elo_alpha=alpha)
        note = (
            f"{extract.label}; fitted: Elo α {alpha:.3g}, TrueSkill sigma {trial.sigma:.3g} "
            f"gamma {trial.gamma:.3g}"
        )
    elo = predictive.elo(data, settings, test_from, schedule)
    trueskill = predictive.bayesian(data, trueskill_settings, test_from, schedule, False)
    scores = [elo, trueskill]
    if ttt:
        report = progress(label, started)
        ttt_score = predictive.bayesian(data, settings, test_from, schedule, True, report, sweep_every)
        scores.append(ttt_score)
    first = len(data.times) - elo.games
    played = predictive.experience(data, schedule)[first:]
    regular = [min(e) >= min_games for e in played]
    newcomer = [not r for r in regular]
    calibration.append(f"| {label} | " + newcomers_against_regulars(scores, played, min_games) + " |")
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
    parser.add_argument("--rows", default="A,B,C,D,E,F,G,H,I,J")
    parser.add_argument("--ttt", default="", help="rows that also run TTT (slow), e.g. A,B")
    parser.add_argument("--min-games", type=int, default=20)
    parser.add_argument("--sweep-every", type=int, default=1, help="TTT: calendar days between sweeps")
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
    calibration: list[str] = []
    for label in args.rows.split(","):
        cells = row(label, datasets, label in with_ttt, args.min_games, calibration, args.sweep_every)
        print("| " + " | ".join(cells) + " |", flush=True)
    print(
        f"\n| row | games of a newcomer (< {args.min_games} games before) against a regular "
        "| newcomer won | mean P(newcomer wins): Elo | TrueSkill[ | TTT] |"
    )
    print("|---|---|---|---|---|---|")
    print("\n".join(calibration))


if __name__ == "__main__":
    main()
