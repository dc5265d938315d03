"""rating.levels: the level-by-level rating of matches in their order of application (replay's
and the batch post's). tests/jobs/test_replay_levels.py compares it with one at a time over
random histories in every model; here, what a refused match leaves behind."""

from __future__ import annotations

import numpy as np

from app.rating import Rating, TrueSkill
from app.rating.levels import Matches, rate_levels


def duels(pairs: list[tuple[int, int, float, float]]) -> Matches:
    """1v1 matches (player, player, rank, rank), in order."""
    return Matches(
        start=np.arange(0, 2 * len(pairs) + 1, 2, dtype=np.int64),
        player=np.array([p for a, b, _, _ in pairs for p in (a, b)], dtype=np.int64),
        team=np.array([0, 1] * len(pairs), dtype=np.int64),
        rank=np.array([r for _, _, ra, rb in pairs for r in (ra, rb)]),
        weight=np.ones(2 * len(pairs)),
        coefficient=np.full(2 * len(pairs), np.nan),
    )


def test_a_refused_match_changes_nothing_and_the_next_sees_the_ratings_before_it() -> None:
    env = TrueSkill(draw_probability=0.0)
    mu, sigma = np.full(3, env.mu), np.full(3, env.sigma)
    # 0 beats 1; 1 and 2 tie (refused: no draws); 1 beats 2.
    rated = rate_levels(env, duels([(0, 1, 1, 2), (1, 2, 1, 1), (1, 2, 1, 2)]), mu, sigma)
    assert rated.rated.tolist() == [True, False, True]
    assert list(rated.refused) == [1]
    first = env.rate([[Rating()], [Rating()]], [1, 2])
    third = env.rate([[first[1][0]], [Rating()]], [1, 2])
    assert np.allclose(rated.before_mu[4:6], [first[1][0].mu, env.mu], rtol=1e-12, atol=1e-12)
    assert rated.before_mu[4] == rated.after_mu[1]  # what the first match left, to the bit
    assert np.allclose(rated.after_mu[4:6], [third[0][0].mu, third[1][0].mu], rtol=1e-12, atol=1e-12)
    assert (rated.wins + rated.losses + rated.draws).tolist() == [1, 1, 0, 0, 1, 1]
    assert np.allclose(mu, [first[0][0].mu, third[0][0].mu, third[1][0].mu], rtol=1e-12, atol=1e-12)


def test_a_refused_match_leaves_its_players_time_away_as_it_was() -> None:
    from app.rating.drift import DAY_US, NEVER
    from app.rating.levels import Drift

    env = TrueSkill(draw_probability=0.0)
    for count in (2, 6):  # one at a time, and level by level
        pairs = [(0, 1, 1, 2), (0, 1, 1, 1)] + [(2 + k, 3 + k, 1, 2) for k in range(0, 2 * (count - 2), 2)]
        mu, sigma = np.full(2 * count, env.mu), np.full(2 * count, env.sigma)
        played = np.array([0, 10 * DAY_US] + [0] * (count - 2), dtype=np.int64)
        drift = Drift(0.5, played, np.full(2 * count, NEVER, dtype=np.int64))
        rated = rate_levels(env, duels(pairs), mu, sigma, drift=drift)
        assert list(rated.refused) == [1]
        # The tie at day 10 was refused: players 0 and 1 last played at day 0, as it left them.
        assert drift.last_us[:2].tolist() == [0, 0]
        assert sigma[:2].tolist() == rated.after_sigma[:2].tolist()
