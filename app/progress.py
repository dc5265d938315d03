"""How far long work is (import, replay, smooth, season switches, evaluations): one mechanism
for every command and job.

The work moves a `Progress`, a value from 0 to 1, split into parts done one after another.
A part's work reports its share done by a plain callback (`part.update`), from any thread: the
pure core (app/rating) counts its sweeps or chunks through such a callback and imports nothing
of this module. A part that is one step the work cannot count (a single SQL statement) is
given its expected size instead, `expect` in seconds, and the share shown grows with the time
it has run, t / (t + expect): it moves every moment and never reaches the part's end before the
step does.

What shows the value (a command's bar, a job's row in the database) is called by a watcher
every `every` seconds while the work runs, and at the checkpoints the work awaits (`reached`):
at once when the work starts, so the first update comes within `every` of the start, and then
whenever the value has moved. The work waits on the display only at those checkpoints, and
the display moves even while one statement runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import TextIO, TypeVar

T = TypeVar("T")
Show = Callable[[float], Awaitable[None]]
# How often a watcher looks at the value: a bar on a terminal, and a job's row.
EVERY_S = 0.25
# A value is shown to this many decimals: a smaller move is no move. Fine enough that a timed
# part whose statement runs many times longer than expected still moves every second.
DECIMALS = 6


async def _hidden(_: float) -> None:
    return None


@dataclass(slots=True)
class _Timed:
    lo: float
    hi: float
    started: float
    expect: float


class _Root:
    """What the parts of one piece of work share: the value, the label and the display."""

    def __init__(self, show: Show, clock: Callable[[], float], trace: Callable[[float], None] | None) -> None:
        self.show, self.clock, self.trace = show, clock, trace
        self.value = 0.0
        self.label = ""
        self.timed: _Timed | None = None
        self.shown: float | None = None
        self.lock = asyncio.Lock()

    def current(self) -> float:
        timed, value = self.timed, self.value
        if timed is not None:
            elapsed = max(self.clock() - timed.started, 0.0)
            value = max(value, timed.lo + (timed.hi - timed.lo) * elapsed / (elapsed + timed.expect))
        return value

    def move(self, value: float) -> None:
        if value > self.value:
            self.value = min(value, 1.0)
            if self.trace is not None:
                self.trace(self.value)


class Progress:
    """The part [lo, hi] of a piece of work's progress (the whole work: [0, 1])."""

    def __init__(
        self,
        show: Show = _hidden,
        clock: Callable[[], float] = time.perf_counter,
        trace: Callable[[float], None] | None = None,
    ) -> None:
        """`show` displays a value (awaited by the watcher and at checkpoints, one call at a
        time, with values that only grow); `trace` sees every value the work sets, as it sets
        it (tests count the ticks with it)."""
        self._root = _Root(show, clock, trace)
        self.lo, self.hi = 0.0, 1.0

    @property
    def label(self) -> str:
        """The label of the latest labelled part entered (a bar shows it)."""
        return self._root.label

    @property
    def value(self) -> float:
        return self._root.current()

    def update(self, share: float) -> None:
        """This part is `share` done (0..1); a smaller share than before is ignored. Safe from
        any thread."""
        self._root.move(self.lo + (self.hi - self.lo) * min(max(share, 0.0), 1.0))

    def _child(self, lo: float, hi: float) -> Progress:
        child = Progress.__new__(Progress)
        child._root, child.lo, child.hi = self._root, lo, hi
        return child

    @contextlib.contextmanager
    def part(self, end: float, label: str | None = None, expect: float | None = None) -> Iterator[Progress]:
        """The next part of this one: from where the work is to `end` (a share of this part),
        done when the block ends. With `expect` (seconds) the part is one step the work
        cannot count, shown as moving with the time it runs."""
        root = self._root
        # From where the work shows now (a timed part may have moved it past its last update).
        lo = max(root.current(), self.lo)
        root.move(lo)
        hi = max(self.lo + (self.hi - self.lo) * end, lo)
        child = self._child(lo, hi)
        if label is not None:
            root.label = label
        outer = root.timed
        if expect is not None:
            root.timed = _Timed(lo, hi, root.clock(), max(expect, 1e-3))
        try:
            yield child
        except BaseException:
            root.timed = outer
            raise
        root.move(hi)
        # A timed part around this one goes on from here, as a step of its own.
        root.timed = None if outer is None else _Timed(root.value, outer.hi, root.clock(), outer.expect)

    async def reached(self) -> None:
        """Show the value now (a checkpoint between phases)."""
        root = self._root
        async with root.lock:
            value = round(root.current(), DECIMALS)
            if root.shown is None or value > root.shown:
                root.shown = value
                await root.show(value)

    @contextlib.asynccontextmanager
    async def watched(self, every: float = EVERY_S) -> AsyncIterator[Progress]:
        """Show the value at once, then every `every` seconds it has moved, until the block
        ends (then once more). The work must leave the event loop free: CPU-bound steps run
        in a thread (`asyncio.to_thread`)."""

        async def watch() -> None:
            while True:
                await asyncio.sleep(every)
                await self.reached()

        await self.reached()  # before the work starts
        watcher = asyncio.create_task(watch())
        try:
            yield self
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        await self.reached()


def run_watched(
    work: Callable[[Progress], T], show: Callable[[float, str], None], every: float = EVERY_S
) -> T:
    """Run synchronous `work(progress)` in a thread while a watcher shows its progress through
    `show(value, label)`: the same watcher as async work, for the commands that are plain
    functions (the evaluations)."""

    async def run() -> T:
        progress: Progress

        async def shown(value: float) -> None:
            show(value, progress.label)

        progress = Progress(shown)
        async with progress.watched(every):
            return await asyncio.to_thread(work, progress)

    return asyncio.run(run())


# The commands whose work is long, with a progress bar from the moment they start: the modules
# they need (NumPy, numba, SQLAlchemy, …) are imported after it, a second or more.
LONG_COMMANDS = (
    "import", "replay", "smooth", "evaluate-history", "evaluate-tournaments", "fit-history", "fit-drift",
)  # fmt: skip
_started: list[str] = []


def show_start(argv: list[str]) -> None:
    """A long command's first bar line, at once (once per process; not for --help)."""
    if argv and argv[0] in LONG_COMMANDS and not {"-h", "--help"} & set(argv) and not _started:
        _started.append(argv[0])
        Bar(argv[0]).show(0.0, "starting")


def end_line() -> None:
    """End the line a bar left open on a terminal, so that what is printed next (an error)
    starts a line of its own."""
    if Bar.open_line is not None:
        Bar.open_line.write("\n")
        Bar.open_line.flush()
        Bar.open_line = None


class Bar:
    """A progress bar on stderr: redrawn in place on a terminal (at each 0.01%, and every half
    second while the value moves); otherwise (logs, CI) a line when a tenth is crossed, the
    label changes, or most of a second has passed since the last line and the value has moved,
    so a log shows the work moving at least once a second."""

    LINE_EVERY_S = 0.75
    REDRAW_EVERY_S = 0.5
    # The terminal stream whose line a bar left open (redrawn in place, no newline yet).
    open_line: TextIO | None = None

    def __init__(self, label: str, total: float = 1.0, stream: TextIO | None = None) -> None:
        self.label, self.total = label, max(total, 1e-12)
        self.stream = stream or sys.stderr
        self.done = 0.0
        self.started = time.perf_counter()
        self._tty = self.stream.isatty()
        self._shown: tuple[int, str] | None = None
        self._line_at = -self.LINE_EVERY_S
        self._drawn = -1.0
        self.phase = ""

    def advance(self, amount: float) -> None:
        self.set(self.done + amount)

    def set(self, value: float, phase: str | None = None) -> None:
        self.done = min(value, self.total)
        if phase is not None:
            self.phase = phase
        share = self.done / self.total
        now = time.perf_counter()
        if self._tty:
            # Each visible step, and at least every half second while the value moves (a step
            # far slower than expected moves by less than 0.01% a second).
            key = (int(share * 10000), self.phase)
            due = key != self._shown or (now - self._line_at >= self.REDRAW_EVERY_S and share > self._drawn)
        else:
            key = (int(share * 10), self.phase)
            due = key != self._shown or (now - self._line_at >= self.LINE_EVERY_S and share > self._drawn)
        if due:
            self._shown, self._line_at, self._drawn = key, now, share
            self._draw(share, end="" if self._tty else "\n")

    def show(self, value: float, phase: str = "") -> None:
        """A watcher's display (run_watched, Progress): the work's share done and its phase."""
        self.set(value * self.total, phase)

    def _draw(self, share: float, end: str) -> None:
        filled = int(share * 30)
        elapsed = time.perf_counter() - self.started
        phase = f" {self.phase}" if self.phase else ""
        line = f"{self.label:<10} [{'#' * filled}{'.' * (30 - filled)}] {share:7.2%} {elapsed:6.1f}s{phase}"
        # On a terminal, padded over a longer line drawn before (a longer phase name).
        self.stream.write(("\r" if self._tty else "") + (line.ljust(72) if self._tty else line) + end)
        self.stream.flush()
        Bar.open_line = self.stream if end == "" else None

    def finish(self) -> None:
        self.done = self.total
        self._draw(1.0, end="\n")
