"""What ratings predict about a match before it is played.

Match quality is seed 000 eq. 7 in its general matrix form (Moser 2010, as the trueskill
package of seed 004 computes it):

    q = sqrt(det(β²AᵀA) / det(β²AᵀA + AᵀΣA)) · exp(−½ μᵀA (β²AᵀA + AᵀΣA)⁻¹ Aᵀμ)

where column k of A compares team k with team k+1. Every matrix there is BᵀDB for a
diagonal D over teams and the path-difference matrix B, so it collapses to per-team
sums: det(BᵀDB) = Σ_j Π_{k≠j} D_k, and the quadratic form is the weighted scatter of
the team means, Σ_j (m_j − m̄)²/D_j with m̄ the 1/D-weighted mean. That makes quality
O(players) with no matrix at all, and exact.
"""

from __future__ import annotations

import math

from app.rating import normal
from app.rating.rating import Rating


def team_moments(
    ratings: list[list[Rating]],
    weights: list[list[float]],
    beta2: float,
) -> tuple[list[float], list[float], list[float]]:
    """Per team: Σ w·mu, Σ w²·(sigma² + beta²) and Σ w²·beta², each rounded once (math.fsum)
    so that the listed order of a team's players does not change a bit of the answer."""
    means, spreads, noise = [], [], []
    for team, team_weights in zip(ratings, weights, strict=True):
        pairs = list(zip(team, team_weights, strict=True))
        means.append(math.fsum(w * mu for (mu, _), w in pairs))
        spreads.append(math.fsum(w * w * (sigma * sigma + beta2) for (_, sigma), w in pairs))
        noise.append(math.fsum(w * w * beta2 for _, w in pairs))
    return means, spreads, noise


def _path_determinant(diagonal: list[float]) -> float:
    """det(BᵀDB) = Σ_j Π_{k≠j} D_k, computed as Π D · Σ 1/D scaled to avoid overflow."""
    scale = max(diagonal)
    product = 1.0
    inverse_sum = 0.0
    for d in diagonal:
        product *= d / scale
        inverse_sum += scale / d
    return product * inverse_sum


def match_quality(ratings: list[list[Rating]], weights: list[list[float]], beta: float) -> float:
    """The draw probability relative to the most even match possible, in (0, 1]."""
    means, spreads, noise = team_moments(ratings, weights, beta * beta)
    # det ratio of two path matrices, both scaled by their own max inside _path_determinant:
    # rescale so that the ratio is taken of like-scaled quantities.
    count = len(means)
    ratio = _path_determinant(noise) / _path_determinant(spreads)
    ratio *= (max(noise) / max(spreads)) ** (count - 1)
    inverse_sum = 0.0
    weighted = 0.0
    for m, d in zip(means, spreads, strict=True):
        inverse_sum += 1.0 / d
        weighted += m / d
    centre = weighted / inverse_sum
    scatter = 0.0
    for m, d in zip(means, spreads, strict=True):
        scatter += (m - centre) ** 2 / d
    return math.sqrt(ratio) * math.exp(-0.5 * scatter)


def win_probabilities(ratings: list[list[Rating]], weights: list[list[float]], beta: float) -> list[float]:
    """P(team k's performance is the highest), for every k; they sum to 1.

    Two teams: Φ(Δ/c) exactly. More teams: P_k = ∫ N(x; m_k, D_k) Π_{j≠k} Φ((x − m_j)/√D_j) dx,
    integrated by the trapezoidal rule on a grid finer than the narrowest performance
    distribution (spectrally accurate for these smooth, fast-decaying integrands).
    """
    means, spreads, _ = team_moments(ratings, weights, beta * beta)
    if len(means) == 2:
        c = math.sqrt(spreads[0] + spreads[1])
        delta = (means[0] - means[1]) / c
        p0 = normal.cdf(delta)
        p1 = normal.cdf(-delta)
        return [p0 / (p0 + p1), p1 / (p0 + p1)]
    sds = [math.sqrt(d) for d in spreads]
    low = min(m - 9.0 * s for m, s in zip(means, sds, strict=True))
    high = max(m + 9.0 * s for m, s in zip(means, sds, strict=True))
    step = min(sds) / 8.0
    points = min(int((high - low) / step) + 1, 20001)
    step = (high - low) / (points - 1)
    count = len(means)
    totals = [0.0] * count
    for index in range(points):
        x = low + index * step
        logs = [normal.log_cdf((x - m) / s) for m, s in zip(means, sds, strict=True)]
        everyone = sum(logs)
        for k in range(count):
            z = (x - means[k]) / sds[k]
            density = normal.INV_SQRT_2PI * math.exp(-0.5 * z * z) / sds[k]
            if density:
                totals[k] += density * math.exp(everyone - logs[k])
    total = sum(totals)
    if total <= 0.0 or not math.isfinite(total):
        # Underflow everywhere: the best-placed team is certain to lead.
        best = max(range(count), key=means.__getitem__)
        return [1.0 if k == best else 0.0 for k in range(count)]
    return [t / total for t in totals]


def draw_chance(ratings: list[list[Rating]], weights: list[list[float]], beta: float, margin: float) -> float:
    """P(|t_0 − t_1| <= margin) for two teams."""
    means, spreads, _ = team_moments(ratings, weights, beta * beta)
    c = math.sqrt(spreads[0] + spreads[1])
    delta = abs(means[0] - means[1])
    hi = (margin - delta) / c
    lo = (-margin - delta) / c
    if hi > 0.0:
        return 0.5 * (math.erf(hi / normal.SQRT2) - math.erf(lo / normal.SQRT2))
    return 0.5 * (math.erfc(-hi / normal.SQRT2) - math.erfc(-lo / normal.SQRT2))
