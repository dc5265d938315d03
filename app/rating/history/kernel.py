"""The passes of a flat history, compiled: every message of a two-team game, game by game.

A pass visits segments (schedule.py): a batch's skills get their message out of the linked
skill, then its games are updated in their listed order, each with its cavities (the
posterior minus the game's own message, seed 001 §2.3) and its new messages swapped into
its skills' sums: the package's order, one game at a time. All messages are Gaussians in
natural parameters (precision pi, precision·mean tau); the flat message is (0, 0).

Why compiled: a pass is a chain, each game seeing the previous ones. Vectorised with NumPy
it runs level by level (games sharing no skill), and ATP singles has 11,223 levels of ~17
games a pass, so its cost was NumPy's per-call overhead, some 60 array operations a level
whatever the level's size. Compiled, a pass costs its games only (docs/benchmarks.md,
"TrueSkill Through Time").

The truncation factor's V and W and the evidence are `app.rating.truncation` and
`app.rating.normal`'s own functions, compiled from their source (numba's register_jitable
leaves them plain Python functions for their other callers). The kernel hands back to
Python (`messages.run`) the games it does not solve: games of three or more teams, games
with an improper cavity, and draws whose window is wide and far in the tail (the decimal
integration, `_far_window`, is not compiled: it yields NaN here). Those go through Game.

The compiled code is cached (numba's cache=True) in a directory named after a hash of every
source it is compiled from, `cache_directory()`: numba checks only this file's contents, so an
edit to truncation.py, normal.py or game.py's constants would otherwise leave the kernel running
the old code from its cache. The directory lies under NUMBA_CACHE_DIR if set, else in this
package's __pycache__, else in the user's cache directory; when none is writable the kernel
is compiled afresh in each process.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import numba
import numpy as np
from numba.extending import overload, register_jitable

from app.rating import normal, truncation
from app.rating.history import game
from app.rating.history.game import NEGLIGIBLE_W
from app.rating.history.schedule import Pass
from app.rating.history.structure import Array, Flat, Index, Mask

Function = TypeVar("Function", bound=Callable[..., Any])

# The functions of other modules compiled into the kernel, as they are in Python.
COMPILED_FUNCTIONS = (
    normal.laplace_fractions,
    normal.cdf,
    normal.erfcx,
    normal.log_cdf,
    normal.log_outcome_probability,
    truncation._win_moments,
    truncation._window_moments,
    truncation._narrow_window,
    truncation.win,
    truncation.draw,
)
# Every module whose code or constants the kernel compiles (numba freezes a global's value
# into the code): the cache is keyed by their sources.
COMPILED_MODULES = (normal, truncation, game)

for _function in COMPILED_FUNCTIONS:
    register_jitable(_function)

_CACHE_PREFIX = "kernel-"
# numba's settings, NUMBA_CACHE_DIR among them, read from the environment at its import (its
# attributes are set in a loop, which a type checker cannot see).
_numba_config: Any = numba.config


def sources_hash() -> str:
    """A hash of the sources the kernel is compiled from: this file and COMPILED_MODULES."""
    digest = hashlib.sha256()
    for path in (Path(__file__), *(Path(str(module.__file__)) for module in COMPILED_MODULES)):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _writable(directory: Path) -> bool:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(directory, os.W_OK)


def cache_directory() -> Path | None:
    """Where the compiled kernel is cached: a directory of its own per sources_hash(), so an
    edit to any compiled source compiles afresh. Under NUMBA_CACHE_DIR if set, else in this
    package's __pycache__ (where older hashes' directories are removed), else in the user's
    cache directory; None when none is writable."""
    name = _CACHE_PREFIX + sources_hash()
    if _numba_config.CACHE_DIR:
        base = Path(_numba_config.CACHE_DIR)
        return base / name if _writable(base / name) else None
    local = Path(__file__).parent / "__pycache__"
    if _writable(local / name):
        for stale in local.glob(_CACHE_PREFIX + "*"):
            if stale.name != name:
                shutil.rmtree(stale, ignore_errors=True)
        return local / name
    user = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "skillservice" / name
    return user if _writable(user) else None


_CACHE_DIRECTORY = cache_directory()


@overload(truncation._far_window)
def _far_window_compiled(t: Any, e: Any) -> Callable[[float, float], tuple[float, float]]:
    def far_window(t: Any, e: Any) -> tuple[float, float]:
        return math.nan, math.nan  # the game goes back to Python (see the module's docstring)

    return far_window


def _compiled(function: Function, cache: bool = True) -> Function:
    # error_model="numpy": a division by zero gives inf or nan, as in NumPy, where a flat
    # message (precision 0) is divided by; those results are then replaced by (0, 0).
    if not cache or _CACHE_DIRECTORY is None:
        return cast(Function, numba.njit(error_model="numpy")(function))
    # NUMBA_CACHE_DIR's value in the process: numba picks the directory when caching is
    # enabled, at decoration, and the setting is put back for every other numba user.
    chosen = _numba_config.CACHE_DIR
    _numba_config.CACHE_DIR = str(_CACHE_DIRECTORY)
    try:
        return cast(Function, numba.njit(cache=True, error_model="numpy")(function))
    finally:
        _numba_config.CACHE_DIR = chosen


def _scalar(function: Function) -> Function:
    """A helper of the loop, on numbers only. Arrays are unpacked once, in `_run`: each
    array variable assigned in the loop costs a reference count (atomic operations, most of
    a game's time when the loop's helpers took arrays)."""
    return _compiled(function, cache=False)


@_scalar
def _drift(pi: float, tau: float, drift: float) -> tuple[float, float]:
    """Seed 001 eq. 1: the variance grows by gamma²·elapsed (a point mass stays one)."""
    if math.isinf(pi):
        return pi, tau
    var = 1.0 / pi + drift
    return 1.0 / var, tau / pi / var


@_scalar
def _difference(mean: float, var: float, margin: float, tie: bool) -> tuple[float, float, bool]:
    """The truncation factor's message to the performance difference d ~ N(mean, var), as
    (precision, precision·mean): seed 000 Table 1's posterior N(mean + c·V, var·(1 − W))
    divided by the prior; flat when W is 0. False when only Game resolves it (NaN here)."""
    c = math.sqrt(var)
    if tie:
        v, w, rest = truncation.draw(mean / c, margin / c)
    else:
        v, w, rest = truncation.win((mean - margin) / c)
    if not (math.isfinite(v) and math.isfinite(w) and math.isfinite(rest)):
        return 0.0, 0.0, False
    if w > 0.0:
        denom = var * rest
        return w / denom, (mean * w + c * v) / denom, True
    return 0.0, 0.0, True


@_compiled
def _run(
    segment: int,
    game: int,
    work: tuple[Index, Index, Index, Index],
    backward: bool,
    links: tuple[Index, Index, Index, Array, Array, Array],
    games: tuple[Index, Array, Mask, Array, Mask, Array],
    entries: tuple[Index, Index, Index, Array, Array],
    state: tuple[Array, Array, Array, Array, Array, Array, Array, Array],
    scratch: tuple[Array, Array],
) -> tuple[int, int]:
    """Segments from `segment` on, starting at `game`, until a game only Game solves:
    returns (its segment, the game), or (the end, −1)."""
    skill_lo, skill_hi, game_lo, game_hi = work
    skill_prev, following, skill_player, drift, prior_pi, prior_tau = links
    game_start, sign, tie, margin, general, log_evidence = games
    entry_skill, entry_team, entry_player, weight, beta = entries
    fwd_pi, fwd_tau, bwd_pi, bwd_tau, lik_pi, lik_tau, own_pi, own_tau = state
    mu_of, perf_var_of = scratch  # a game's entries' cavity mean and performance variance
    while segment < len(game_lo):
        if game == game_lo[segment]:
            for s in range(skill_lo[segment], skill_hi[segment]):
                if backward:
                    # From the player's next skill: its games' messages times its backward
                    # message, drifted back by its elapsed time (the package's
                    # backward_prior_out); flat for a player's last skill.
                    nxt = following[s]
                    pi = lik_pi[nxt] + bwd_pi[nxt] if nxt >= 0 else 0.0
                    tau = lik_tau[nxt] + bwd_tau[nxt] if nxt >= 0 else 0.0
                    bwd_pi[s], bwd_tau[s] = _drift(pi, tau, drift[nxt]) if pi > 0.0 else (0.0, 0.0)
                else:
                    # From the player's previous skill: its forward message times its
                    # games', drifted; the prior at first play.
                    prev = skill_prev[s]
                    pi = fwd_pi[prev] + lik_pi[prev] if prev >= 0 else 0.0
                    tau = fwd_tau[prev] + lik_tau[prev] if prev >= 0 else 0.0
                    if pi == 0.0:
                        fwd_pi[s], fwd_tau[s] = prior_pi[skill_player[s]], prior_tau[skill_player[s]]
                    else:
                        fwd_pi[s], fwd_tau[s] = _drift(pi, tau, drift[s])
        while game < game_hi[segment]:
            if general[game]:
                return segment, game
            # Game's closed form for two teams (seed 001 §2; seed 000 Table 1), each player's
            # prior the cavity: the posterior without this game's message.
            lo, hi = game_start[game], game_start[game + 1]
            m0 = m1 = v0 = v1 = 0.0
            proper = True
            for e in range(lo, hi):
                s = entry_skill[e]
                cav_pi = fwd_pi[s] + bwd_pi[s] + lik_pi[s] - own_pi[e]
                cav_tau = fwd_tau[s] + bwd_tau[s] + lik_tau[s] - own_tau[e]
                proper = proper and cav_pi > 0.0 and cav_pi < math.inf
                w, b = weight[e], beta[entry_player[e]]
                mu = cav_tau / cav_pi
                perf_var = w * w * (1.0 / cav_pi + b * b)
                mu_of[e - lo], perf_var_of[e - lo] = mu, perf_var
                if entry_team[e] == 0:
                    m0 += w * mu
                    v0 += perf_var
                else:
                    m1 += w * mu
                    v1 += perf_var
            if not proper:
                return segment, game
            mean, var_d = sign[game] * (m0 - m1), v0 + v1
            d_pi, d_tau, solved = _difference(mean, var_d, margin[game], tie[game])
            if not solved:
                return segment, game
            log_evidence[game] = normal.log_outcome_probability(
                mean, math.sqrt(var_d), margin[game], tie[game]
            )
            # d_pi·var_d = w/(1 − w): a negligible w is the flat message, as in Game.
            informative = d_pi * var_d > NEGLIGIBLE_W
            d_mu, d_var = sign[game] * (d_tau / d_pi), 1.0 / d_pi
            for e in range(lo, hi):
                s, w = entry_skill[e], weight[e]
                new_pi = new_tau = 0.0
                if informative and w != 0.0:
                    # t_first = t_second + d and t_second = t_first − d, each with the other
                    # team's prior; a player gets the team's message less everyone else's
                    # part, over w.
                    b, mu, perf_var = beta[entry_player[e]], mu_of[e - lo], perf_var_of[e - lo]
                    if entry_team[e] == 0:
                        msg_mean, msg_var, team_mean, team_var = m1 + d_mu, v1 + d_var, m0, v0
                    else:
                        msg_mean, msg_var, team_mean, team_var = m0 - d_mu, v0 + d_var, m1, v1
                    rest_mean = team_mean - w * mu
                    rest_var = (team_var - perf_var) + w * w * (b * b)
                    new_var = (msg_var + rest_var) / (w * w)
                    new_pi, new_tau = 1.0 / new_var, (msg_mean - rest_mean) / w / new_var
                lik_pi[s] += new_pi - own_pi[e]
                lik_tau[s] += new_tau - own_tau[e]
                own_pi[e], own_tau[e] = new_pi, new_tau
            game += 1
        segment += 1
        if segment < len(game_lo):
            game = game_lo[segment]
    return segment, -1


Handback = Callable[[int], None]


def run(flat: Flat, work: Pass, backward: bool, following: Index, handback: Handback) -> None:
    """One pass over the segments of `work` (a schedule.Pass): the compiled loop, with the
    games it does not solve handed to `handback`, in their turn."""
    if len(work.game_lo) == 0:
        return
    segments = (work.skill_lo, work.skill_hi, work.game_lo, work.game_hi)
    links = (flat.skill_prev, following, flat.skill_player, flat.drift, flat.prior_pi, flat.prior_tau)
    games = (flat.game_start, flat.sign, flat.tie, flat.margin, flat.general, flat.log_evidence)
    entries = (flat.entry_skill, flat.entry_team, flat.entry_player, flat.weight, flat.beta)
    state = (
        flat.fwd_pi,
        flat.fwd_tau,
        flat.bwd_pi,
        flat.bwd_tau,
        flat.lik_pi,
        flat.lik_tau,
        flat.own_pi,
        flat.own_tau,
    )
    scratch = (np.empty(work.widest), np.empty(work.widest))
    segment, game = 0, int(work.game_lo[0])
    while True:
        segment, game = _run(segment, game, segments, backward, links, games, entries, state, scratch)
        if game < 0:
            return
        handback(game)
        game += 1
