"""The exact pins in pyproject.toml, for the tests that guard a library's internals."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def pinned(package: str) -> str:
    """The version `package` is pinned to with == (extras allowed); fails when it is not."""
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    pattern = re.escape(package) + r"(\[[\w,]+\])?==([\w.]+)"
    pins = [m for d in dependencies if (m := re.fullmatch(pattern, d))]
    assert len(pins) == 1, f"{package} must be pinned with == in pyproject.toml: {dependencies}"
    return pins[0].group(2)
