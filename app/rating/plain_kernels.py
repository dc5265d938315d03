"""Straight-line rate() for one shape of plain match: team sums, the chain's sweeps and the
update of every player in one function.

`inference.update_plain_ratings` rates three or more teams of unit weights (TrueSkill's sum)
in three steps: it sums each team's prior into lists, hands them to the chain kernel of their
length, and pushes the messages it gets back to the players. For a short match the lists,
the call and the loops around the kernel cost as much as its sweeps. A game mode has one
shape, so `plain_kernel(sizes)` writes all three steps out for one shape (team sizes in
chain order; which neighbours tie is an argument), with every rating in a local variable and
the chain kernel's own sweeps (chain_kernels.sweep_lines) in between. The expressions are
update_plain_ratings's, in the same order, so the results are the same bit for bit
(tests/rating/test_plain_kernels.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import lru_cache

from app.rating.chain_kernels import KERNEL_GLOBALS, compile_kernel, function_source, sweep_lines
from app.rating.errors import TIE_WITHOUT_DRAWS, RatingInputError
from app.rating.rating import Rating, trusted_rating

# Larger matches go through update_plain_ratings's loops: a shape's code, and the time to
# compile it, grow with its teams and players (16 teams of 2: about 1,300 lines, 19 ms).
MAX_TEAMS = 16
MAX_PLAYERS = 32

# How many shapes stay compiled. A mode has one; a service whose clients send many shapes
# compiles again on a miss (a few milliseconds) and never grows without bound.
CACHED_SHAPES = 256

# (teams in chain order, whether each pair of neighbours ties, tau², beta², beta, draw_z,
# tolerance, max sweeps) -> the teams' new ratings, in chain order.
PlainKernel = Callable[
    [Sequence[Sequence[Rating]], tuple[bool, ...], float, float, float, float, float, int],
    list[tuple[Rating, ...]],
]


def _source(sizes: tuple[int, ...]) -> str:
    # The names here must not be sweep_lines's (pi{i}, tau{i}, av{i}, v, w, ...): tau² is
    # `tau_sq`, not `tau2`, which is the third variable's precision·mean there.
    links = len(sizes) - 1
    body = [
        f"{', '.join(f'team{k}' for k in range(links + 1))}, = teams",
        f"{', '.join(f'tie{k}' for k in range(links))}, = ties",
    ]
    for k, size in enumerate(sizes):
        players = ", ".join(f"(mu{k}_{i}, sd{k}_{i})" for i in range(size))
        body.append(f"{players}, = team{k}")
    for k, size in enumerate(sizes):
        # update_plain_ratings's sums: m += mu and v += sigma² + tau² + beta², from 0.0.
        body.append(f"pm{k} = 0.0" + "".join(f" + mu{k}_{i}" for i in range(size)))
        body.append(
            f"pv{k} = 0.0" + "".join(f" + (sd{k}_{i} * sd{k}_{i} + tau_sq + beta_sq)" for i in range(size))
        )
    for k in range(links):
        # draw_z * sqrt(n_k + n_{k+1}) * beta, the square root taken once, when compiled.
        body.append(f"eps{k} = draw_z * {math.sqrt(sizes[k] + sizes[k + 1])!r} * beta")
        body += [f"if tie{k} and eps{k} <= 0.0:", "    raise no_draw(no_draw_text)"]
    body += sweep_lines(links)
    for k, size in enumerate(sizes):
        # update_plain_ratings's push to the players, with every coefficient 1.
        body += [
            f"u_pi = to_pi{k}",
            f"inverse = 1.0 / (1.0 + u_pi * pv{k})",
            f"innovation = (to_tau{k} - u_pi * pm{k}) * inverse",
            "precision_gain = u_pi * inverse",
        ]
        for i in range(size):
            body += [
                f"s2 = sd{k}_{i} * sd{k}_{i} + tau_sq",
                "new_var = s2 - s2 * s2 * precision_gain",
                "if new_var <= 0.0:",
                f"    new_var = s2 * ((pv{k} - s2) / pv{k} + (s2 / pv{k}) * inverse)",
                f"r{k}_{i} = trusted((mu{k}_{i} + s2 * innovation, sqrt(new_var)))",
            ]
    teams = ", ".join("(" + "".join(f"r{k}_{i}, " for i in range(size)) + ")" for k, size in enumerate(sizes))
    body.append(f"return [{teams}]")
    signature = "teams, ties, tau_sq, beta_sq, beta, draw_z, tolerance, max_sweeps"
    return function_source(signature, body, _BOUND)


_BOUND = {
    **KERNEL_GLOBALS,
    "trusted": trusted_rating,
    "no_draw": RatingInputError,
    "no_draw_text": TIE_WITHOUT_DRAWS,
}


def fits(sizes: tuple[int, ...]) -> bool:
    """Whether a match of these team sizes has a plain kernel."""
    return 3 <= len(sizes) <= MAX_TEAMS and sum(sizes) <= MAX_PLAYERS


@lru_cache(maxsize=CACHED_SHAPES)
def plain_kernel(sizes: tuple[int, ...]) -> PlainKernel:
    """The straight-line rate() of teams of `sizes` players, in chain order; see fits()."""
    if not fits(sizes) or min(sizes) < 1:
        raise ValueError(f"no plain kernel for teams of {list(sizes)} players")
    built: PlainKernel = compile_kernel(_source(sizes), _BOUND, f"<plain kernel, teams of {list(sizes)}>")
    return built
