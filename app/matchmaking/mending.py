"""Mending a tiled window that holds two tickets who avoid each other (avoid.py).

Tiling (windows.py) takes runs of skill neighbours; a run holding a clash trades one of the two
for the ticket that best keeps quality among those of a neighbouring window, or left by every
window, that clears it without making a clash on the other side. A chain of clashes takes one
trade each; a window no trade mends is given up (its tickets wait for the next call).
"""

from __future__ import annotations

import math

import numpy as np

from app.matchmaking.forming import Forming, RegionLimit
from app.matchmaking.pool import IntArray
from app.matchmaking.quality import log_thresholds
from app.matchmaking.scoring import best_splits


def mend(
    forming: Forming, rows: IntArray, windows: list[IntArray], region: RegionLimit | None
) -> list[IntArray]:
    """The tiled windows (positions in `rows`), each holding two tickets that avoid each other
    mended by exchanging one of them with a ticket of a window next to it, or one no window
    took, close in skill: the exchange of best total quality that leaves both sides clear of
    clashes and above their thresholds. A window that no exchange mends is given up."""
    pool, shape = forming.pool, forming.shape
    needed = shape.teams * shape.team_size
    owner = np.full(len(rows), -1, dtype=np.int64)
    for number, window in enumerate(windows):
        owner[window] = number
    kept = [True] * len(windows)

    def clashes_in(positions: IntArray) -> int:
        members = rows[positions]
        a, b = np.triu_indices(len(members), 1)
        return int(forming.clashes.between(members[a], members[b]).sum())

    def score(positions: IntArray) -> float:
        members = rows[np.sort(positions)]
        longest = float(pool.waited[members].max())
        if region is not None and region[0][members].max() > region[1].limit(longest):
            return -np.inf
        got = best_splits(
            pool.mu[members][None, :], pool.var[members][None, :], shape.teams, shape.team_size, forming.beta2
        )
        value = float(got.log_quality[0])
        if got.exact and value < float(log_thresholds(forming.relax, np.array([longest]))[0]):
            return -np.inf
        return math.exp(value)

    for number in range(len(windows)):
        # Each exchange takes one clash out (a window may hold a chain of them).
        for _ in range(needed):
            window = windows[number]
            count = clashes_in(window)
            if not count:
                break
            best: tuple[float, int, int] | None = None
            low, high = max(0, int(window.min()) - needed), min(len(rows), int(window.max()) + needed + 1)
            members = rows[window]
            a, b = np.triu_indices(len(members), 1)
            hit = forming.clashes.between(members[a], members[b])
            # Only moving a ticket of a clash takes a clash out.
            for x in sorted(set(window[a[hit]].tolist()) | set(window[b[hit]].tolist())):
                for y in range(low, high):
                    other = int(owner[y])
                    if other == number or (other >= 0 and not kept[other]):
                        continue
                    mine = np.where(window == x, y, window)
                    if clashes_in(mine) >= count:
                        continue
                    theirs = None if other < 0 else np.where(windows[other] == y, x, windows[other])
                    if theirs is not None and clashes_in(theirs):
                        continue
                    total = score(mine) + (0.0 if theirs is None else score(theirs))
                    if np.isfinite(total) and (best is None or total > best[0]):
                        best = (total, x, y)
            if best is None:
                break
            _, x, y = best
            other = int(owner[y])
            windows[number] = np.where(window == x, y, window)
            owner[y], owner[x] = number, other
            if other >= 0:
                windows[other] = np.where(windows[other] == y, x, windows[other])
        if clashes_in(windows[number]):
            kept[number] = False
            owner[windows[number]] = -1
    return [np.sort(window) for window, keep in zip(windows, kept, strict=True) if keep]
