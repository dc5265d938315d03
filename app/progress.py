"""A progress bar on stderr for long commands (import, replay, smooth): redrawn in place
on a terminal, a line every 10% otherwise (logs, CI)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Bar:
    def __init__(self, label: str, total: float, stream: TextIO | None = None) -> None:
        self.label, self.total = label, max(total, 1e-12)
        self.stream = stream or sys.stderr
        self.done = 0.0
        self.started = time.perf_counter()
        self._tty = self.stream.isatty()
        self._shown = -1

    def advance(self, amount: float) -> None:
        self.set(self.done + amount)

    def set(self, value: float) -> None:
        self.done = min(value, self.total)
        share = self.done / self.total
        step = int(share * (100 if self._tty else 10))
        if step != self._shown:
            self._shown = step
            self._draw(share, end="" if self._tty else "\n")

    def _draw(self, share: float, end: str) -> None:
        filled = int(share * 30)
        elapsed = time.perf_counter() - self.started
        line = f"{self.label:<10} [{'#' * filled}{'.' * (30 - filled)}] {share:6.1%} {elapsed:6.1f}s"
        self.stream.write(("\r" if self._tty else "") + line + end)
        self.stream.flush()

    def finish(self) -> None:
        self.done = self.total
        self._draw(1.0, end="\n")
