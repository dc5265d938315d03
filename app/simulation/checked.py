"""Typed reads of a scenario file's tables that name the key on failure (`population.size:
must be a whole number, got 'many'`), and the check that no key was left unread."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


class ScenarioError(ValueError):
    """A scenario that cannot run: the message is one line naming the key."""


class Table:
    """One table of the file: typed reads that name the key on failure, and a final check
    that every key was read."""

    def __init__(self, data: Mapping[str, Any], where: str, refused: Mapping[str, str]) -> None:
        """`refused`: keys (full names) that are errors whenever given, with the reason."""
        if not isinstance(data, Mapping):
            raise ScenarioError(f"{where}: must be a table, got {data!r}")
        self.data, self.where, self.refused, self.read = data, where, refused, set[str]()

    def key(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name

    def raw(self, name: str) -> Any:
        full = self.key(name)
        if full in self.refused and name in self.data:
            raise ScenarioError(f"{full}: {self.refused[full]}")
        self.read.add(name)
        return self.data.get(name)

    def table(self, name: str, required: bool = True) -> Table:
        value = self.raw(name)
        if value is None:
            if required:
                raise ScenarioError(f"{self.key(name)}: missing (a table)")
            value = {}
        if not isinstance(value, Mapping):
            raise ScenarioError(f"{self.key(name)}: must be a table, got {value!r}")
        return Table(value, self.key(name), self.refused)

    def number(
        self,
        name: str,
        default: float | None = None,
        low: float | None = None,
        high: float | None = None,
        below: float | None = None,
        above: float | None = None,
    ) -> float:
        value = self.raw(name)
        if value is None:
            if default is None:
                raise ScenarioError(f"{self.key(name)}: missing (a number)")
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ScenarioError(f"{self.key(name)}: must be a finite number, got {value!r}")
        _bounds(self.key(name), float(value), low, high, below, above)
        return float(value)

    def whole(
        self, name: str, default: int | None = None, low: int | None = None, high: int | None = None
    ) -> int:
        value = self.raw(name)
        if value is None:
            if default is None:
                raise ScenarioError(f"{self.key(name)}: missing (a whole number)")
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise ScenarioError(f"{self.key(name)}: must be a whole number, got {value!r}")
        _bounds(self.key(name), value, low, high, None, None)
        return value

    def text(self, name: str, default: str | None = None, choices: tuple[str, ...] = ()) -> str:
        value = self.raw(name)
        if value is None:
            if default is None:
                raise ScenarioError(f"{self.key(name)}: missing (a string)")
            return default
        if not isinstance(value, str) or not value:
            raise ScenarioError(f"{self.key(name)}: must be a non-empty string, got {value!r}")
        if choices and value not in choices:
            raise ScenarioError(f"{self.key(name)}: must be one of {', '.join(choices)}, got {value!r}")
        return value

    def flag(self, name: str, default: bool) -> bool:
        value = self.raw(name)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ScenarioError(f"{self.key(name)}: must be true or false, got {value!r}")
        return value

    def finish(self) -> None:
        unknown = sorted(set(self.data) - self.read)
        if unknown:
            name = self.key(unknown[0])
            reason = self.refused.get(name, "unknown key (docs/simulator.md lists the keys)")
            raise ScenarioError(f"{name}: {reason}")


def _bounds(
    key: str, value: float, low: float | None, high: float | None, below: float | None, above: float | None
) -> None:
    if low is not None and value < low:
        raise ScenarioError(f"{key}: must be at least {low:g}, got {value:g}")
    if high is not None and value > high:
        raise ScenarioError(f"{key}: must be at most {high:g}, got {value:g}")
    if below is not None and value >= below:
        raise ScenarioError(f"{key}: must be below {below:g}, got {value:g}")
    if above is not None and value <= above:
        raise ScenarioError(f"{key}: must be above {above:g}, got {value:g}")
