"""The issue's targets, fairness and convergence."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.simulation import targets
from app.simulation.record import Checkpoint
from app.simulation.truth import FIRST_WINS, SECOND_WINS
from tests.simulation.helpers import make_run, scenario


def test_fairness_counts_scores_within_35_to_65_percent_and_what_chance_allows() -> None:
    run = make_run(
        games=np.array([10, 10, 20, 1]),
        score=np.array([5.0, 7.0, 7.0, 1.0]),
        match_outcome=np.array([FIRST_WINS, SECOND_WINS]),
    )
    rows = {row.games: row for row in targets.fairness(run)}
    assert (rows[1].players, rows[1].within) == (4, 0.5)  # 50% and 35% in; 70% and 100% out
    assert (rows[10].players, rows[10].within) == (3, pytest.approx(2 / 3))
    assert rows[20].players == 1
    # Without draws, chance keeps 4 to 6 wins of 10 within: 672/1024 of fair players.
    assert targets._fair_within(10, 0.0) == pytest.approx(672 / 1024)
    both = (math.comb(20, 7) + math.comb(20, 8) + math.comb(20, 9) + math.comb(20, 10)) * 2 - math.comb(
        20, 10
    )
    assert targets._fair_within(20, 0.0) == pytest.approx(both / 2**20)
    # Four teams, places equally likely: 35–65% of the others beaten over 2 games means a sum of
    # places (0–3 each) of 3 (1+2, 2+1, 0+3, 3+0) out of 16 outcomes.
    assert targets._fair_within(2, 0.0, teams=4) == pytest.approx(4 / 16)


def test_the_information_limit_follows_seed_000() -> None:
    one = scenario()
    players = 1000
    bits = math.lgamma(players + 1) / math.log(2)
    assert targets.information_limit(one, players) == pytest.approx(bits * 2 / players / math.log2(3))
    free_for_all = scenario(mode={"teams": 8, "team_size": 1, "draw_probability": 0.0})
    # Seed 000: log(n!)/log(8!) matches of 8, each player in 8/n of them.
    assert targets.information_limit(free_for_all, players) == pytest.approx(
        bits / math.log2(math.factorial(8)) * 8 / players
    )


def test_games_to_a_correlation_interpolates_between_checkpoints() -> None:
    points = [
        Checkpoint(1, 100, 0.5, 0.5, 0.4),
        Checkpoint(2, 100, 0.7, 0.7, 0.6),
        Checkpoint(3, 100, 0.9, 0.9, 0.7),
    ]
    assert targets.games_to(points, "displayed") == pytest.approx(2.5)
    assert targets.games_to(points, "elo") is None
    assert targets.games_to(points, "mu", 0.25) == pytest.approx(0.5)


def test_targets_say_which_failed_and_why() -> None:
    skill = np.linspace(0, 50, 100)
    good = [Checkpoint(g, 100, 0.5 + 0.1 * g, 0.5 + 0.1 * g, 0.4 + 0.1 * g) for g in (1, 2, 3)]
    run = make_run(
        skill=skill,
        games=np.full(100, 10),
        score=np.where((skill < 8) | (skill > 42), 9.0, 5.0),
        checkpoints=tuple(good),
        match_outcome=np.array([FIRST_WINS]),
    )
    slower = make_run(checkpoints=(Checkpoint(1, 100, 0.5, 0.5, 0.5), Checkpoint(2, 100, 0.6, 0.6, 0.6)))
    fair, elo, speed = targets.targets(run, slower)
    assert not fair.passed
    assert fair.figure == "68.0% of 100 players (fair coin flips: 65.6%)"
    assert "lowest and highest true-skill deciles have 0% and 0% of their players within" in fair.why
    assert "deciles 2–9 together 85%" in fair.why
    assert elo.passed
    assert speed.passed
    assert speed.figure == "3.0 games played (random pairing: never)"
    tied = make_run(checkpoints=(Checkpoint(1, 100, 0.5, 0.5, 0.5),))
    _, elo = targets.targets(tied, None)
    assert not elo.passed
    assert "within the sampling error of a rank correlation over these players (about 0.078)" in elo.why
    assert "after the same few results both systems move" in elo.why


def test_a_late_crossing_of_the_random_baseline_says_how_many_players_it_rests_on() -> None:
    # Both loops cross 0.8 at 40 games, which only 60 players reached; random pairing first.
    ours = tuple(
        Checkpoint(g, players, rho, rho, rho - 0.01)
        for g, players, rho in ((10, 2000, 0.60), (20, 1000, 0.70), (30, 400, 0.74), (40, 60, 0.81))
    )
    random = tuple(
        Checkpoint(g, players, rho, rho, rho - 0.02)
        for g, players, rho in ((10, 2000, 0.58), (20, 1000, 0.71), (30, 400, 0.76), (40, 60, 0.84))
    )
    late_elo = (*ours[:3], Checkpoint(40, 60, 0.81, 0.81, 0.815))
    _, elo, speed = targets.targets(make_run(checkpoints=late_elo), make_run(checkpoints=random))
    assert not elo.passed
    assert elo.why.endswith("only 60 players had played 40 games")
    assert not speed.passed
    assert "the loop crosses 0.8 by 40 games, which 60 players reached" in speed.why
    assert (
        "(random pairing there: 0.840 against 0.810, a gap within the sampling error of about 0.047)"
        in speed.why
    )
    assert speed.why.endswith("before it the quality-matched loop is ahead at 1 of 3 checkpoints")
