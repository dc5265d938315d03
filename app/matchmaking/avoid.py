"""Avoid lists: pairs of tickets that may not share a match, as teammates or as opponents.

A ticket may list players its players must not meet. Two tickets clash when either lists a
player of the other, whoever listed whom. Clashes are few (an avoided player is rarely queued
at once), so they are kept as a sorted array of pair keys and looked up by binary search.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


def clashing_rows(players: Sequence[Sequence[str]], avoid: Sequence[Sequence[str]]) -> IntArray:
    """Pairs (a, b), a < b, of rows whose tickets clash; one row a ticket."""
    if not any(avoid):
        return np.empty((0, 2), dtype=np.int64)
    row_of = {player: row for row, names in enumerate(players) for player in names}
    pairs: set[tuple[int, int]] = set()
    for row, names in enumerate(avoid):
        for name in names:
            other = row_of.get(name)
            if other is not None and other != row:
                pairs.add((min(row, other), max(row, other)))
    return np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)


class Clashes:
    """A pool's clashing pairs, for checks over many candidate matches at once."""

    def __init__(self, pairs: IntArray, rows: int) -> None:
        self.pairs = pairs
        self.rows = max(rows, 1)
        self._keys = np.sort(pairs[:, 0] * self.rows + pairs[:, 1])
        # Rows in some clash: most candidate windows hold none, and are cleared by one lookup.
        self._involved = np.zeros(self.rows, dtype=np.bool_)
        self._involved[pairs.ravel()] = True

    def __bool__(self) -> bool:
        return len(self.pairs) > 0

    def between(self, a: IntArray, b: IntArray) -> BoolArray:
        """Element-wise: whether rows a and b clash."""
        if not len(self._keys):
            return np.zeros(len(a), dtype=np.bool_)
        keys = np.minimum(a, b) * self.rows + np.maximum(a, b)
        found = np.minimum(np.searchsorted(self._keys, keys), len(self._keys) - 1)
        result: BoolArray = self._keys[found] == keys
        return result

    def within(self, rows: Sequence[int]) -> bool:
        """Whether any two of these rows clash."""
        if not len(self._keys) or len(rows) < 2:
            return False
        members = np.asarray(rows, dtype=np.int64)
        if not self._involved[members].any():
            return False
        a, b = _pairs(len(members))
        return bool(self.between(members[a], members[b]).any())

    def windows(self, rows: IntArray, width: int) -> BoolArray:
        """Per window of `width` consecutive entries of `rows` (by start): whether two of its
        rows clash."""
        starts = max(len(rows) - width + 1, 0)
        hit = np.zeros(starts + 1, dtype=np.int64)
        if not len(self._keys) or starts == 0:
            return np.zeros(starts, dtype=np.bool_)
        position = np.full(self.rows, -1, dtype=np.int64)
        position[rows] = np.arange(len(rows))
        a, b = position[self.pairs[:, 0]], position[self.pairs[:, 1]]
        both = (a >= 0) & (b >= 0)
        first, last = np.minimum(a, b)[both], np.maximum(a, b)[both]
        near = last - first < width
        lo = np.maximum(last[near] - width + 1, 0)
        hi = np.minimum(first[near], starts - 1)
        keep = lo <= hi
        np.add.at(hit, lo[keep], 1)
        np.add.at(hit, hi[keep] + 1, -1)
        result: BoolArray = np.cumsum(hit[:-1]) > 0
        return result


@functools.cache
def _pairs(count: int) -> tuple[IntArray, IntArray]:
    """The pairs (i < j) of `count` positions, computed once per count (read only)."""
    first, second = np.triu_indices(count, 1)
    return first.astype(np.int64), second.astype(np.int64)
