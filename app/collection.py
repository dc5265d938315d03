"""Pausing Python's cyclic garbage collector while bulk work builds many objects.

A replay builds a stored response per match (a dict of lists of dicts: about ten objects per
participant) and an import a record per row, held until loaded; none of them holds a cycle, so
the collector finds nothing in them, but the allocations trigger its collections, and each
full one walks the whole heap with the interpreter lock held. On ATP singles (193,651 matches)
that stalled the event loop for up to 1.4 s at a time, and the progress with it; paused, the
replay's longest stall was 0.5 s and its write took 8.4 s instead of 12.3, and the import's
load had none over 0.25 s (2-core machine, loaded: provisional figures).
Reference counting still frees every object at once; only cycles wait for the collector,
which runs again when the last pause ends.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_paused = 0  # pauses under way (threads may overlap); the collector runs again at the last end
_was_enabled = True


@contextlib.contextmanager
def paused() -> Iterator[None]:
    global _paused, _was_enabled
    with _lock:
        if _paused == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0 and _was_enabled:
                gc.enable()
