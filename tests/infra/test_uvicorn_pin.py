"""app/workers.py drives uvicorn's worker processes, which uvicorn does not publish as an API:
uvicorn is pinned exactly, and these tests fail when the installed version or the parts of
that class the supervisor uses change, so an upgrade is a deliberate edit of both."""

from __future__ import annotations

import inspect

import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors.multiprocess import Process

from tests.pins import pinned


def test_the_installed_uvicorn_is_the_pinned_one() -> None:
    assert uvicorn.__version__ == pinned("uvicorn")


def test_the_worker_process_class_has_the_shape_workers_py_uses() -> None:
    assert list(inspect.signature(Process.__init__).parameters) == ["self", "config", "sockets"]
    assert list(inspect.signature(Process.is_alive).parameters) == ["self", "timeout"]
    for method in ("start", "kill", "join", "terminate"):
        assert list(inspect.signature(getattr(Process, method)).parameters) == ["self"], method
    for attribute in ("pid", "exitcode"):
        assert isinstance(inspect.getattr_static(Process, attribute), property), attribute
    # The exit code of a worker whose app failed to start: the supervisor stops on it.
    assert STARTUP_FAILURE == 3
