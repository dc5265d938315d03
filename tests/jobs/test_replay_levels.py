"""Replay level by level equals replay one match at a time (within 1e-12), on every path:
two-team levels through the NumPy batch path, everything else through `rate_match`."""

from __future__ import annotations

import random

import numpy as np
import pytest

from app.jobs import replay
from app.rating import Rating, RatingInputError, TrueSkill
from app.rating.history.schedule import chain_levels
from app.rating.levels import Matches
from app.rating.match import MatchTeams, rate_match

TOLERANCE = 1e-12


def make_history(rng: random.Random, count: int, players: int, weighted: bool) -> replay.ReplayMatches:
    """Random matches as the replay reads them: 1v1, 2v2, 1v2 and three-team matches, ties,
    partial play and (for a weighted mode) coefficients; entries team by team, players by id."""
    names = sorted(f"p{i:03d}" for i in range(players))
    start, player, team, rank, weight, coefficient = [0], [], [], [], [], []
    for _ in range(count):
        shape = rng.choice([(1, 1), (1, 1), (1, 1), (2, 2), (2, 2), (1, 2), (1, 1, 1), (2, 1, 2)])
        chosen = rng.sample(range(players), sum(shape))
        ranks = [float(rng.randint(0, len(shape) - 1)) for _ in shape]
        partial = rng.random() < 0.15
        at = 0
        for t, size in enumerate(shape):
            for p in sorted(chosen[at : at + size]):
                player.append(p)
                team.append(t)
                rank.append(ranks[t])
                weight.append(rng.choice([0.5, 1.0]) if partial else 1.0)
                coefficient.append(rng.choice([0.5, 2.0, np.nan]) if weighted else np.nan)
            at += size
        start.append(len(player))
    return replay.ReplayMatches(
        pks=np.arange(1, count + 1, dtype=np.int64),
        match_ids=[f"m{i}" for i in range(count)],
        played_us=np.arange(count, dtype=np.int64) * 60_000_000,
        entries=Matches(
            start=np.array(start, dtype=np.int64),
            player=np.array(player, dtype=np.int64),
            team=np.array(team, dtype=np.int64),
            rank=np.array(rank),
            weight=np.array(weight),
            coefficient=np.array(coefficient),
        ),
        names=names,
    )


def one_at_a_time(
    env: TrueSkill, history: replay.ReplayMatches, seeds: dict[str, tuple[float, float]]
) -> tuple[list[tuple[float, float, float, float]], list[float | None], dict[str, tuple[Rating, int]]]:
    """The oracle: every match in order through the scalar `rate_match`."""
    current: dict[str, tuple[Rating, int]] = {}
    entries: list[tuple[float, float, float, float]] = []
    qualities: list[float | None] = []
    for i in range(history.matches):
        lo, hi = int(history.entries.start[i]), int(history.entries.start[i + 1])
        count = int(history.entries.team[lo:hi].max()) + 1
        rows = [[e for e in range(lo, hi) if history.entries.team[e] == t] for t in range(count)]
        ids = [[history.names[history.entries.player[e]] for e in row] for row in rows]
        ratings = [
            [current.get(p, (Rating(*seeds.get(p, (env.mu, env.sigma))), 0))[0] for p in team] for team in ids
        ]
        coefficients = [
            [1.0 if np.isnan(history.entries.coefficient[e]) else history.entries.coefficient[e] for e in row]
            for row in rows
        ]
        teams = MatchTeams(
            ids,
            ratings,
            [float(history.entries.rank[row[0]]) for row in rows],
            [[float(history.entries.weight[e]) for e in row] for row in rows],
            coefficients if env.team_performance == "weighted" else None,
        )
        try:
            rated = rate_match(env, teams)
        except RatingInputError:
            entries.extend([(np.nan,) * 4] * (hi - lo))
            qualities.append(None)
            continue
        qualities.append(rated.quality)
        for r in rated.players:
            entries.append((r.before.mu, r.before.sigma, r.after.mu, r.after.sigma))
            current[r.player_id] = (r.after, current.get(r.player_id, (r.after, 0))[1] + 1)
    return entries, qualities, current


ENVIRONMENTS = {
    "trueskill": (TrueSkill(), False),
    "trueskill-other-constants": (
        TrueSkill(mu=1500, sigma=300, beta=150, tau=3, draw_probability=0.3),
        False,
    ),
    "no-draws": (TrueSkill(draw_probability=0.0), False),
    "tie-layer": (TrueSkill(tie_model="tie-layer"), False),
    "weighted": (TrueSkill(team_performance="weighted"), True),
    "size-penalised-mean": (TrueSkill(team_performance="size-penalised-mean"), False),
}


@pytest.mark.parametrize("name", list(ENVIRONMENTS))
def test_level_by_level_equals_one_at_a_time(name: str) -> None:
    env, weighted = ENVIRONMENTS[name]
    rng = random.Random(name)
    history = make_history(rng, 1500, 60, weighted)
    seeds = {"p000": (env.mu + 3 * env.sigma, env.sigma / 4), "p007": (env.mu - env.sigma, env.sigma / 2)}
    state = replay.start(env, ["p999-never-played", "p000"], seeds)
    rated = replay.rate(env, history, state, seeds)

    entries, qualities, truth = one_at_a_time(env, history, seeds)
    skipped = [q is None for q in qualities]
    assert (~rated.rated).tolist() == skipped
    assert len(rated.skipped) == sum(skipped)
    if name == "no-draws":
        assert any(skipped), "ties without draws are refused, on both paths"
    else:
        assert not any(skipped)
    done = np.repeat(rated.rated, np.diff(history.entries.start))
    expected = np.array(entries)[done]
    for column, got in enumerate((rated.before_mu, rated.before_sigma, rated.after_mu, rated.after_sigma)):
        np.testing.assert_allclose(got[done], expected[:, column], rtol=TOLERANCE, atol=TOLERANCE)
    np.testing.assert_allclose(
        rated.quality[rated.rated], [q for q in qualities if q is not None], rtol=TOLERANCE, atol=TOLERANCE
    )
    final = {
        n: (mu, sigma, m)
        for n, mu, sigma, m in zip(state.names, state.mu, state.sigma, state.matches, strict=True)
    }
    for player, (rating, matches) in truth.items():
        mu, sigma, counted = final[player]
        assert mu == pytest.approx(rating.mu, rel=TOLERANCE, abs=TOLERANCE)
        assert sigma == pytest.approx(rating.sigma, rel=TOLERANCE)
        assert counted == matches
    # Players without a rated match keep their seed or the prior, with no matches.
    assert final["p999-never-played"] == (env.mu, env.sigma, 0)
    # Wins, losses and draws add up to the matches played.
    assert (state.wins + state.losses + state.draws == state.matches).all()


def test_levels_are_one_past_the_players_previous_matches() -> None:
    # Matches: (a, b), (c, d), (a, c), (b, e), (d, e): levels 1, 1, 2, 2, 3 (d at 1, e at 2).
    games = [(0, 1), (2, 3), (0, 2), (1, 4), (3, 4)]
    start = np.arange(0, 2 * len(games) + 1, 2, dtype=np.int64)
    players = np.array([p for game in games for p in game], dtype=np.int64)
    level, first = chain_levels(start, players, np.full(5, -1, dtype=np.int64), 5, [(0, len(games))])
    assert level.tolist() == [1, 1, 2, 2, 3]
    assert first.tolist() == [1, 1, 1, 1, 2]


def test_the_batch_quality_is_the_scalar_quality() -> None:
    env = TrueSkill()
    rng = np.random.default_rng(3)
    from app.rating.batch import two_team_quality_batch

    for shape in ((1, 1), (2, 2), (1, 3)):
        a_mu, b_mu = rng.uniform(-10, 60, (200, shape[0])), rng.uniform(-10, 60, (200, shape[1]))
        a_sigma, b_sigma = rng.uniform(0.3, 9, (200, shape[0])), rng.uniform(0.3, 9, (200, shape[1]))
        got = two_team_quality_batch(a_mu, a_sigma, b_mu, b_sigma, env.beta)
        for i in range(200):
            scalar = env.quality(
                [
                    [Rating(m, s) for m, s in zip(a_mu[i], a_sigma[i], strict=True)],
                    [Rating(m, s) for m, s in zip(b_mu[i], b_sigma[i], strict=True)],
                ]
            )
            assert got[i] == pytest.approx(scalar, rel=TOLERANCE, abs=1e-300)


def test_a_team_listed_in_another_order_rates_the_same_bits_on_the_batch_path() -> None:
    # An erasure renames a player, which can move them within their team's listed order.
    env = TrueSkill()
    rng = np.random.default_rng(5)
    wm, lm = rng.uniform(0, 50, (300, 4)), rng.uniform(0, 50, (300, 3))
    ws, ls = rng.uniform(0.5, 8, (300, 4)), rng.uniform(0.5, 8, (300, 3))
    first = env.rate_two_team_batch(wm, ws, lm, ls)
    w_order, l_order = np.array([2, 0, 3, 1]), np.array([1, 2, 0])
    second = env.rate_two_team_batch(wm[:, w_order], ws[:, w_order], lm[:, l_order], ls[:, l_order])
    for a, b, order in zip(first, second, (w_order, w_order, l_order, l_order), strict=True):
        assert (a[:, order] == b).all()
