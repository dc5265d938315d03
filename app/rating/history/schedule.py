"""The order in which a flat history's games and chains are updated.

Three schedules, each a list of independent pieces of work:

- **levels** (the initial, online pass): a game's level is one more than the levels of
  its players' previous games, within its batch or, for a player's first game in a batch,
  the last game of their previous batch. The games of a level share no skill, and every
  game comes after the games it depends on, so updating level by level gives exactly the
  package's pass batch by batch, game by game (seed 001 §2.3: each batch sees the past).
- **rounds** (the games' part of a sweep): the same within a batch only. Skill messages
  of other batches are fixed while a sweep updates its games.
- **chains** (forward and backward messages, seed 001 eq. 1's dynamics): position k of
  every player's chain of skills at once, for the players who have a position k.
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
    slots: Index  # each entry's team: 2·(its game's position in `games`) + team
    beta2: Array  # each entry's beta²
    duels: bool  # every two-team game is one player against one, unweighted
    general: list[int]  # games of three or more teams, one by one
    refresh: Index  # skills whose forward message is set before this group (the online pass)


@dataclass(frozen=True, slots=True)
class Chains:
    """Pairs (skills at position k, the same players' skills at k − 1), for k = 1, 2, …"""

    steps: list[tuple[Index, Index]]


def levels_and_rounds(
    flat: Flat,
    first_game: int,
    first_skill: int,
    rounds: array,  # type: ignore[type-arg]
) -> tuple[Index, Index, Index]:
    """Level and round of every new game, and the level at which each new skill is first
    played. `rounds` holds each skill's last round and is extended and updated."""
    games = flat.games - first_game
    # Read through memoryviews: a list of every entry's skill would hold a Python int each.
    entry_skill = flat.entry_skill.data
    prev = flat.skill_prev.data
    rounds.extend(array("q", bytes(8 * (flat.skills - len(rounds)))))
    # Level of the last new game on each skill; 0 for none (old skills without one are done).
    skill_level = array("q", bytes(8 * flat.skills))
    first_level = array("q", bytes(8 * (flat.skills - first_skill)))
    game_level = array("q", bytes(8 * games))
    game_round = array("q", bytes(8 * games))
    bounds = flat.game_start.data
    for number in range(games):
        level = 0
        round_ = 0
        lo, hi = bounds[first_game + number], bounds[first_game + number + 1]
        for s in entry_skill[lo:hi]:
            r = rounds[s]
            if r > round_:
                round_ = r
            own = skill_level[s]
            if own == 0 and s >= first_skill:
                # The skill's first game: after the last game of the player's previous skill.
                p = prev[s]
                own = skill_level[p] if p >= 0 else 0
            if own > level:
                level = own
        level += 1
        round_ += 1
        for s in entry_skill[lo:hi]:
            rounds[s] = round_
            if s >= first_skill and skill_level[s] == 0:
                first_level[s - first_skill] = level
            skill_level[s] = level
        game_level[number] = level
        game_round[number] = round_
    return (
        np.frombuffer(game_level, dtype=np.int64).copy(),
        np.frombuffer(game_round, dtype=np.int64).copy(),
        np.frombuffer(first_level, dtype=np.int64).copy(),
    )


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
            slots = slots_all[e_lo:e_hi] - 2 * g_lo
            duels = e_hi - e_lo == 2 * (g_hi - g_lo) and bool(unit_all[e_lo:e_hi].all())
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


def chains(flat: Flat) -> Chains:
    """Every player's skills in time order (their creation order), laid out position by
    position with the longest chains first, so that the players present at position k are
    the first n_k of those present at k − 1."""
    player = flat.skill_player
    if len(player) == 0:
        return Chains([])
    by_player = np.argsort(player, kind="stable")
    lengths = np.bincount(player, minlength=len(flat.names))
    starts = np.cumsum(lengths) - lengths
    position = np.empty(len(player), dtype=np.int64)
    position[by_player] = np.arange(len(player), dtype=np.int64) - np.repeat(starts, lengths)
    rank = np.empty(len(lengths), dtype=np.int64)
    rank[np.argsort(-lengths, kind="stable")] = np.arange(len(lengths), dtype=np.int64)
    layout = np.lexsort((rank[player], position))
    present = np.bincount(position)
    offsets = np.concatenate(([0], np.cumsum(present)))
    steps = []
    for k in range(1, len(present)):
        n = int(present[k])
        steps.append((layout[offsets[k] : offsets[k] + n], layout[offsets[k - 1] : offsets[k - 1] + n]))
    return Chains(steps)
