"""app/workers.py drives uvicorn's worker processes, which uvicorn does not publish as an API:
uvicorn is pinned exactly, and these tests fail when the installed version or the parts of
that class the supervisor uses change, so an upgrade is a deliberate edit of both."""

from __future__ import annotations

import inspect
import re
import tomllib
from pathlib import Path

import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors.multiprocess import Process

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def pinned_uvicorn() -> str:
    dependencies = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    pins = [m for d in dependencies if (m := re.fullmatch(r"uvicorn(\[[\w,]+\])?==([\w.]+)", d))]
    assert len(pins) == 1, f"uvicorn must be pinned with == in pyproject.toml: {dependencies}"
    return pins[0].group(2)


def test_the_installed_uvicorn_is_the_pinned_one() -> None:
    assert uvicorn.__version__ == pinned_uvicorn()


def test_the_worker_process_class_has_the_shape_workers_py_uses() -> None:
    assert list(inspect.signature(Process.__init__).parameters) == ["self", "config", "sockets"]
    assert list(inspect.signature(Process.is_alive).parameters) == ["self", "timeout"]
    for method in ("start", "kill", "join", "terminate"):
        assert list(inspect.signature(getattr(Process, method)).parameters) == ["self"], method
    for attribute in ("pid", "exitcode"):
        assert isinstance(inspect.getattr_static(Process, attribute), property), attribute
    # The exit code of a worker whose app failed to start: the supervisor stops on it.
    assert STARTUP_FAILURE == 3
