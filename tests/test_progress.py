"""The one progress mechanism (app/progress.py): parts, timed parts, the watcher, the bar."""

from __future__ import annotations

import io
import itertools
import math
import threading

import pytest

from app.progress import Bar, Progress, run_watched


class Clock:
    """A clock the test moves (no wall time)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_parts_map_their_shares_into_the_whole_and_only_grow() -> None:
    traced: list[float] = []
    progress = Progress(trace=traced.append)
    with progress.part(0.5) as first:
        first.update(0.5)
        assert progress.value == pytest.approx(0.25)
        first.update(0.2)  # a smaller share is ignored
        assert progress.value == pytest.approx(0.25)
        with first.part(1.0) as inner:
            inner.update(0.5)
            assert progress.value == pytest.approx(0.375)
    assert progress.value == pytest.approx(0.5)
    with progress.part(1.0) as second:
        second.update(0.5)
    assert traced == sorted(traced) and traced[-1] == 1.0
    assert traced == pytest.approx([0.25, 0.375, 0.5, 0.75, 1.0])


def test_a_timed_part_moves_with_its_time_and_stays_below_its_end() -> None:
    clock = Clock()
    progress = Progress(clock=clock)
    with progress.part(0.5, expect=2.0):
        seen = []
        for _ in range(20):
            clock.now += 1.0
            seen.append(progress.value)
        assert all(a < b for a, b in itertools.pairwise(seen))
        assert seen[1] == pytest.approx(0.5 * 2 / 4)  # t / (t + expect) of the part
        assert seen[-1] < 0.5
    assert progress.value == 0.5


def test_a_timed_part_around_counted_ones_goes_on_from_where_they_ended() -> None:
    clock = Clock()
    progress = Progress(clock=clock)
    with progress.part(1.0, expect=1.0) as outer:
        clock.now = 10.0  # the outer estimate alone would be at 10/11 by now
        with outer.part(0.2) as step:
            assert progress.value == pytest.approx(10 / 11)  # never backwards
            step.update(1.0)
        after = progress.value
        clock.now += 1.0
        assert after < progress.value < 1.0


def test_a_failed_part_does_not_claim_its_end() -> None:
    progress = Progress()

    def fail() -> None:
        with progress.part(0.8) as part:
            part.update(0.5)
            raise RuntimeError

    with pytest.raises(RuntimeError):
        fail()
    assert progress.value == pytest.approx(0.4)


async def test_the_watcher_shows_at_once_then_each_checkpoint_that_moved() -> None:
    shown: list[float] = []

    async def show(value: float) -> None:
        shown.append(value)

    progress = Progress(show)
    async with progress.watched(every=3600.0):
        assert shown == [0.0]  # at the start, before any work
        with progress.part(0.5) as part:
            part.update(0.5)
        await progress.reached()
        await progress.reached()  # not moved: not shown again
        with progress.part(1.0):
            pass
    assert shown == [0.0, 0.5, 1.0]


def test_run_watched_runs_the_work_in_a_thread_and_labels_the_display() -> None:
    shown: list[tuple[float, str]] = []
    threads: list[int] = []

    def work(progress: Progress) -> str:
        threads.append(threading.get_ident())
        with progress.part(1.0, "counting") as counting:
            for n in range(1, 5):
                counting.update(n / 4)
        return "done"

    assert run_watched(work, lambda value, label: shown.append((value, label))) == "done"
    assert threads != [threading.get_ident()]
    assert shown[0] == (0.0, "") and shown[-1] == (1.0, "counting")


def test_a_bar_in_a_log_prints_a_line_per_tenth_and_for_each_phase() -> None:
    stream = io.StringIO()
    bar = Bar("import", stream=stream)
    bar.LINE_EVERY_S = math.inf  # the rule of tenths and phases alone (no time in the test)
    bar.show(0.0, "reading")
    bar.show(0.01, "reading")  # the same tenth, the same phase
    bar.show(0.15, "reading")
    bar.show(0.16, "loading")
    bar.finish()
    lines = stream.getvalue().splitlines()
    assert [line.split()[-1] for line in lines] == ["reading", "reading", "loading", "loading"]
    assert [line.split("]")[1].split()[0] for line in lines] == ["0.00%", "15.00%", "16.00%", "100.00%"]
