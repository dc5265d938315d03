"""The SQL of `conservative`, mu − k·sigma: every statement that writes the column renders it here.

Its Python twin is app.rating.conservative; tests/db/test_conservative.py checks that the
two agree to the bit, so a rating written by SQL equals the one an answer computes.

With skill drift (app.rating.drift, seed 001 eq. 4) the stored column is the conservative
estimate of the rating drifted from the player's last match to the mode's `drift_as_of`
(migration 0015): the instant the leaderboards are drifted to, moved forward daily
(app.leaderboards.drift). A mode without drift stores mu − k·sigma as before, to the bit.
"""

from __future__ import annotations


def drifted_sigma_sql(sigma: str, last: str, at: str, gamma: str = "m.drift_per_day") -> str:
    """sqrt(sigma² + gamma²·days from `last` to `at`), or sigma itself when there is no drift or
    no time away (app.rating.drift.drifted_sigma)."""
    days = f"(CAST(extract(epoch FROM ({at} - {last})) AS float8) / 86400.0)"
    return (
        f"(CASE WHEN {gamma} > 0 AND {last} < {at} "
        f"THEN sqrt({sigma} * {sigma} + {gamma} * {gamma} * {days}) ELSE {sigma} END)"
    )


def conservative_sql(mu: str, sigma: str, k: str = "m.conservative_k", last: str | None = None) -> str:
    """The expression over SQL operands (columns, casts or placeholders); k is by default the
    column of the `modes` row the statement joins as `m`. With `last` (the row's last
    played instant), sigma is drifted from it to that row's drift_as_of."""
    if last is not None:
        sigma = drifted_sigma_sql(sigma, last, "m.drift_as_of")
    return f"({mu} - {k} * {sigma})"


def base_tier_sql(conservative: str) -> str:
    """The tier a rating lies in without history, from the `modes` row `m`: the SQL function
    ranked_tier of migration 0015 (app.rating.tiers.Tiers.base); NULL for a mode without tiers."""
    return f"ranked_tier(m.tiers, m.display_scale, m.display_offset, {conservative})"


def current_tier_sql(r: str = "r") -> str:
    """The tier of ratings row `r` by the current settings of the `modes` row `m`: as stored when
    it was placed by them (ratings.tier_version, migration 0016), else where the re-tier job
    will place it (app.leaderboards.retier): afresh from the rating, if ranked."""
    return (
        f"(CASE WHEN {r}.tier_version = m.tier_version THEN {r}.tier "
        f"WHEN {r}.matches >= m.min_matches_for_leaderboard "
        f"THEN {base_tier_sql(conservative_sql(f'{r}.mu', f'{r}.sigma'))} END)"
    )
