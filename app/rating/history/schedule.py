"""The order in which a flat history's games are updated: the package's order, level by level.

trueskillthroughtime updates a history batch by batch, and within a batch game by game,
each game seeing the freshest messages (seed 001 §2.3):

- the online pass: batches in time order, each skill's forward message set from the
  player's previous skill just before the batch's games;
- a sweep (`History.iteration`): a backward pass over batches last−1 … 0 (backward messages
  from the player's next skill, then the batch's games), then a forward pass over batches
  1 … last (forward messages, then the batch's games).

A pass is a chain of dependencies only through shared skills, so it can be cut into
**levels**: a game's level is one more than the levels of the games it must see, namely
the previous game on each of its skills within the batch (games of a batch go in their
listed order in both passes), or, for a skill's first game in the batch, the last game of
the linked skill (the player's previous skill going forward, their next going backward).
The games of one level share no skill and see only lower levels, so updating level by
level, all the games of a level at once, gives exactly the package's pass. Each skill's
message out of the linked skill is set just before its level (`Group.refresh`).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np

from app.rating.history.structure import Array, Flat, Index

# Work on at most this many games at once, to bound the temporaries of one update.
CHUNK = 1 << 17


@dataclass(frozen=True, slots=True)
class Group:
    """Games that share no skill: updated together."""

    games: Index  # two-team games, updated by array arithmetic
    entries: Index  # their entries, game by game, team by team
    slots: Index  # each entry's team: 2·(its game's position in `games`) + team; empty for duels
    beta2: Array  # each entry's beta²
    duels: bool  # every two-team game is one player against one, unweighted
    general: list[int]  # games of three or more teams, one by one
    refresh: Index  # skills whose forward message is set before this group (the online pass)


@dataclass(frozen=True, slots=True)
class Passes:
    """A sweep's work: the backward pass, then the forward pass (several batches); or, for a
    single batch, its games in order (`single`), repeated as the package's Batch.convergence."""

    backward: list[Group]
    forward: list[Group]
    single: list[Group]


def levels(flat: Flat, ranges: list[tuple[int, int]], link: Index) -> tuple[Index, Index]:
    """The level of every game in `ranges` (ranges of games, in the order the pass visits
    them), and the level at which each skill is first played in the pass (0: not in it).
    `link[s]` is the skill whose messages flow into s across batches (or −1)."""
    return chain_levels(flat.game_start, flat.entry_skill, link, flat.skills, ranges)


def chain_levels(
    game_start: Index, entry_skill: Index, link: Index, skills: int, ranges: list[tuple[int, int]]
) -> tuple[Index, Index]:
    """`levels` on bare arrays: game g plays the skills entry_skill[game_start[g]:game_start[g+1]].
    An online replay is the case of one skill per player and no links (every link −1): a
    match's level is one past the levels of its players' previous matches."""
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


def pass_groups(flat: Flat, ranges: list[tuple[int, int]], link: Index) -> list[Group]:
    """The groups of one pass over the games in `ranges`, with each skill of the pass
    refreshed (its message out of `link`) at the level of its first game."""
    game_level, first_level = levels(flat, ranges, link)
    games = np.concatenate(
        [np.arange(lo, hi, dtype=np.int64) for lo, hi in ranges] or [np.zeros(0, np.int64)]
    )
    skills = np.flatnonzero(first_level).astype(np.int64)
    return groups(flat, games, game_level[games], skills, first_level[skills])


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
        return Passes([], [], pass_groups(flat, [(0, flat.games)], flat.skill_prev))
    starts = np.searchsorted(flat.game_batch, np.arange(batches + 1)).tolist()
    backward = pass_groups(
        flat, [(starts[b], starts[b + 1]) for b in range(batches - 2, -1, -1)], next_skills(flat)
    )
    forward = pass_groups(flat, [(starts[1], starts[batches])], flat.skill_prev)
    return Passes(backward, forward, [])


def groups(
    flat: Flat, games: Index, keys: Index, skills: Index | None = None, skill_keys: Index | None = None
) -> list[Group]:
    """`games` grouped by `keys` in increasing order (stable), split into chunks of CHUNK;
    `skills` to refresh are grouped by `skill_keys` alongside (the first chunk of a key)."""
    if len(games) == 0:
        return []
    order = np.argsort(keys, kind="stable")
    games = games[order]
    keys = keys[order]
    cuts = np.flatnonzero(np.diff(keys)) + 1
    starts = np.concatenate(([0], cuts))
    ends = np.concatenate((cuts, [len(games)]))
    refresh_of: dict[int, Index] = {}
    if skills is not None and skill_keys is not None and len(skills):
        skill_order = np.argsort(skill_keys, kind="stable")
        sorted_skills = skills[skill_order]
        sorted_keys = skill_keys[skill_order]
        skill_cuts = np.flatnonzero(np.diff(sorted_keys)) + 1
        firsts = np.concatenate(([0], skill_cuts)).tolist()
        parts = np.split(sorted_skills, skill_cuts)
        refresh_of = {int(sorted_keys[lo]): part for lo, part in zip(firsts, parts, strict=True)}
    general = flat.general[games]
    # Entries, team slots, betas and weights of every two-team game at once, cut per group.
    two_all = games[~general]
    entries_all, slots_all, position_all = _entries(flat, two_all)
    beta2_all = flat.beta[flat.entry_player[entries_all]] ** 2
    unit_all = flat.weight[entries_all] == 1.0
    two_before = np.concatenate(([0], np.cumsum(~general)))  # two-team games before each index
    entry_of = np.searchsorted(position_all, np.arange(len(two_all) + 1))  # first entry of each
    out: list[Group] = []
    empty = np.zeros(0, dtype=np.int64)
    for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True):
        key = int(keys[lo])
        for chunk_lo in range(lo, hi, CHUNK):
            chunk_hi = min(hi, chunk_lo + CHUNK)
            g_lo, g_hi = int(two_before[chunk_lo]), int(two_before[chunk_hi])
            e_lo, e_hi = int(entry_of[g_lo]), int(entry_of[g_hi])
            entries = entries_all[e_lo:e_hi]
            duels = e_hi - e_lo == 2 * (g_hi - g_lo) and bool(unit_all[e_lo:e_hi].all())
            # A duel's entry i is team slot i: not stored (a 5M-game history saves 160 MB).
            slots = empty if duels else slots_all[e_lo:e_hi] - 2 * g_lo
            chunk = games[chunk_lo:chunk_hi]
            one_by_one = chunk[general[chunk_lo:chunk_hi]].tolist()
            refresh = refresh_of.get(key, empty) if chunk_lo == lo else empty
            out.append(
                Group(two_all[g_lo:g_hi], entries, slots, beta2_all[e_lo:e_hi], duels, one_by_one, refresh)
            )
    return out


def _entries(flat: Flat, games: Index) -> tuple[Index, Index, Index]:
    """The entries of `games` in order, their team slots (2·game's position + team) and
    their game's position."""
    first = flat.game_start[games]
    counts = flat.game_start[games + 1] - first
    total = int(counts.sum())
    offsets = np.cumsum(counts) - counts
    within = np.arange(total, dtype=np.int64) - np.repeat(offsets, counts)
    entries = np.repeat(first, counts) + within
    position = np.repeat(np.arange(len(games), dtype=np.int64), counts)
    return entries, 2 * position + flat.entry_team[entries], position
