"""Trading players between matches of different regions, once a tier's matches are formed.

Sharing tickets among regions (regions.py) decides where a ticket near two regions plays before
any match exists, by counts alone. Once matches are formed, two matches of different regions
that are close in skill may trade two such tickets, each into the other's region, when that
raises their total quality: every trade of one ticket each between them is scored at once
(each side's best split, as windows.py scores windows). Only sparse tiers are worth it (a
region holding a few matches, whose skill neighbours are far apart); a dense tier's tiling is
already near its best, so a tier of more than EXCHANGE_LIMIT matches is left as formed.
"""

from __future__ import annotations

import math

import numpy as np

from app.matchmaking.forming import Forming
from app.matchmaking.pool import BoolArray, FloatArray, IntArray, Match
from app.matchmaking.quality import log_thresholds
from app.matchmaking.scoring import pattern_scores, split_patterns

EXCHANGE_LIMIT = 64
ROUNDS = 4
# How many matches further in skill order a match trades with.
REACH = 6


def exchange(
    forming: Forming, matches: list[Match], region_of: list[int], feasible: BoolArray
) -> list[Match]:
    """The tier's matches after trades between regions. `region_of`: each match's region;
    `feasible`: per pool row and region, whether the tier lets the ticket play there."""
    shape = forming.shape
    patterns = split_patterns(shape.teams, shape.team_size)
    needed = shape.teams * shape.team_size
    if (
        patterns is None
        or shape.composition is not None
        or len(set(region_of)) < 2
        or len(matches) > EXCHANGE_LIMIT
        or any(len(m.rows) != needed for m in matches)
        or bool((forming.pool.size[[r for m in matches for r in m.rows]] != 1).any())
    ):
        return matches
    pool = forming.pool
    members = np.array([m.rows for m in matches], dtype=np.int64)
    regions = np.array(region_of, dtype=np.int64)
    order = np.argsort(pool.mu[members].mean(axis=1), kind="stable")
    members, regions = members[order], regions[order]
    slot_x, slot_y = (
        grid.ravel() for grid in np.meshgrid(np.arange(needed), np.arange(needed), indexing="ij")
    )
    trades = np.arange(len(slot_x))
    for _ in range(ROUNDS):
        traded = False
        for reach in range(1, REACH + 1):
            if len(members) <= reach:
                break
            current = _scores(forming, members, patterns)
            x, y = members[:-reach], members[reach:]
            moved_x = np.repeat(x[:, None, :], len(trades), axis=1)
            moved_y = np.repeat(y[:, None, :], len(trades), axis=1)
            moved_x[:, trades, slot_x] = y[:, slot_y]
            moved_y[:, trades, slot_y] = x[:, slot_x]
            # Each traded ticket must be let play in the region it moves to.
            allowed = (
                feasible[y[:, slot_y], regions[:-reach, None]] & feasible[x[:, slot_x], regions[reach:, None]]
            )
            allowed &= (regions[:-reach] != regions[reach:])[:, None]
            flat_x, flat_y = moved_x.reshape(-1, needed), moved_y.reshape(-1, needed)
            score_x = _scores(forming, flat_x, patterns).reshape(allowed.shape)
            score_y = _scores(forming, flat_y, patterns).reshape(allowed.shape)
            ok = allowed & np.isfinite(score_x) & np.isfinite(score_y)
            if forming.clashes:
                a, b = np.triu_indices(needed, 1)
                for flat in (flat_x, flat_y):
                    clash = forming.clashes.between(flat[:, a].ravel(), flat[:, b].ravel())
                    ok &= ~clash.reshape(len(flat), -1).any(axis=1).reshape(allowed.shape)
            total = np.where(ok, np.exp(score_x) + np.exp(score_y), -np.inf)
            best = total.argmax(axis=1)
            before = np.exp(current[:-reach]) + np.exp(current[reach:])
            after = total[np.arange(len(x)), best]
            touched = bytearray(len(members))
            for k in np.argsort(before - after, kind="stable").tolist():
                if after[k] <= before[k] * (1 + 1e-12) or touched[k] or touched[k + reach]:
                    continue
                touched[k] = touched[k + reach] = 1
                members[k], members[k + reach] = moved_x[k, best[k]], moved_y[k, best[k]]
                traded = True
        if not traded:
            break
    return [_split(forming, row, patterns) for row in members]


def _scores(forming: Forming, members: IntArray, patterns: IntArray) -> FloatArray:
    """Each candidate's best split's log quality; −inf below the threshold of its longest wait."""
    pool, shape = forming.pool, forming.shape
    scores = pattern_scores(
        pool.mu[members], pool.var[members], patterns, shape.teams, shape.team_size, forming.beta2
    )
    best: FloatArray = scores.max(axis=1)
    longest = pool.waited[members].max(axis=1)
    result: FloatArray = np.where(best >= log_thresholds(forming.relax, longest), best, -np.inf)
    return result


def _split(forming: Forming, members: IntArray, patterns: IntArray) -> Match:
    pool, shape = forming.pool, forming.shape
    scores = pattern_scores(
        pool.mu[members][None, :],
        pool.var[members][None, :],
        patterns,
        shape.teams,
        shape.team_size,
        forming.beta2,
    )[0]
    labels = patterns[int(scores.argmax())]
    teams = tuple(tuple(members[labels == team].tolist()) for team in range(shape.teams))
    return Match(teams, math.exp(float(scores.max())), float(pool.waited[members].max()))
