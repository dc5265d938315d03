"""A party's session on the virtual clock: the matches it has left to play before it goes
offline, and where it plays from."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(slots=True)
class Session:
    players: IntArray
    remaining: int
    latency: FloatArray | None  # per region, the worst of its players'
    home: int
