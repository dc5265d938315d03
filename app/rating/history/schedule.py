"""The order in which a flat history's games are updated: the package's order, game by game.

trueskillthroughtime updates a history batch by batch, and within a batch game by game,
each game seeing the freshest messages (seed 001 §2.3):

- the online pass: batches in time order, each skill's forward message set from the
  player's previous skill just before the batch's games;
- a sweep (`History.iteration`): a backward pass over batches last−1 … 0 (backward messages
  from the player's next skill, then the batch's games), then a forward pass over batches
  1 … last (forward messages, then the batch's games).

A pass is a list of **segments**, one per batch in the order visited: the batch's skills
whose message out of the linked skill is set first, then its games in their listed order.
Skills and games are numbered in time order, so a batch's skills and games are ranges and a
segment is four numbers; the compiled kernel (`kernel`) walks them exactly in this order.

`chain_levels` cuts such a chain into levels of games that share no player, for the online
replay (app/jobs/replay.py), which updates a level at once with array arithmetic.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

from app.rating.history.structure import Flat, Index


@dataclass(frozen=True, slots=True)
class Pass:
    """Segment i: the skills skill_lo[i]:skill_hi[i] get their message out of the linked
    skill, then the games game_lo[i]:game_hi[i] are updated in order."""

    skill_lo: Index
    skill_hi: Index
    game_lo: Index
    game_hi: Index
    widest: int  # the most entries in one game


@dataclass(frozen=True, slots=True)
class Passes:
    """A sweep's work: the backward pass, then the forward pass (several batches); or, for a
    single batch, its games in order (`single`), repeated as the package's Batch.convergence."""

    backward: Pass | None
    forward: Pass | None
    single: Pass | None


def _starts(batch_of: Index, batches: int) -> Index:
    """Where each batch's range starts in an array numbered in time order (and the end)."""
    return np.searchsorted(batch_of, np.arange(batches + 1)).astype(np.int64)


def segments(flat: Flat, order: list[int], first_game: int = 0, first_skill: int = 0) -> Pass:
    """The batches `order`, in that order, each its games from `first_game` on and its
    skills from `first_skill` on (the online pass over added games leaves older ones be)."""
    batches = len(flat.times)
    games, skills = _starts(flat.game_batch, batches), _starts(flat.skill_batch, batches)
    visit = np.asarray(order, dtype=np.int64)
    widest = int(np.diff(flat.game_start[first_game:]).max()) if first_game < flat.games else 0
    return Pass(
        np.maximum(skills[visit], first_skill),
        skills[visit + 1],
        np.maximum(games[visit], first_game),
        games[visit + 1],
        widest,
    )


def online(flat: Flat, first_game: int, first_skill: int) -> Pass:
    """The online pass over the games from `first_game` on (their batches in time order)."""
    first_batch = int(flat.game_batch[first_game]) if first_game < flat.games else len(flat.times)
    return segments(flat, list(range(first_batch, len(flat.times))), first_game, first_skill)


def next_skills(flat: Flat) -> Index:
    """Each skill's player's next skill, or −1."""
    following = np.full(flat.skills, -1, dtype=np.int64)
    prev = flat.skill_prev
    has = np.flatnonzero(prev >= 0)
    following[prev[has]] = has
    return following


def passes(flat: Flat) -> Passes:
    batches = len(flat.times)
    if batches <= 1:
        return Passes(None, None, segments(flat, list(range(batches))))
    backward = segments(flat, list(range(batches - 2, -1, -1)))
    forward = segments(flat, list(range(1, batches)))
    return Passes(backward, forward, None)


def chain_levels(
    game_start: Index, entry_skill: Index, link: Index, skills: int, ranges: list[tuple[int, int]]
) -> tuple[Index, Index]:
    """The level of every game in `ranges` (ranges of games, in the order they are played),
    and the level at which each skill is first played (0: not in them). Game g plays the
    skills entry_skill[game_start[g]:game_start[g+1]], and `link[s]` is a skill whose games
    s must see first (or −1): a game's level is one past the levels of the games it must
    see, so the games of one level share no skill. An online replay is the case of one
    skill per player and no links (every link −1)."""
    # Read through memoryviews: a list of every entry's skill would hold a Python int each.
    entry_skills = np.ascontiguousarray(entry_skill, dtype=np.int64).data
    linked = np.ascontiguousarray(link, dtype=np.int64).data
    bounds = np.ascontiguousarray(game_start, dtype=np.int64).data
    skill_level = array("q", bytes(8 * skills))
    first_level = array("q", bytes(8 * skills))
    game_level = array("q", bytes(8 * (len(game_start) - 1)))
    for start, stop in ranges:
        for g in range(start, stop):
            level = 0
            lo, hi = bounds[g], bounds[g + 1]
            for s in entry_skills[lo:hi]:
                own = skill_level[s]
                if own == 0:
                    other = linked[s]
                    if other >= 0:
                        own = skill_level[other]
                if own > level:
                    level = own
            level += 1
            for s in entry_skills[lo:hi]:
                if skill_level[s] == 0:
                    first_level[s] = level
                skill_level[s] = level
            game_level[g] = level
    return (
        np.frombuffer(game_level, dtype=np.int64).copy(),
        np.frombuffer(first_level, dtype=np.int64).copy(),
    )
