"""A bad configuration stops the process with one clear line, not a traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from pydantic import ValidationError

from app.config import ClusterUrl, Settings, cluster_url, describe_error, sqlalchemy_url


def run_serve(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "PORT")}
    return subprocess.run(
        [sys.executable, "-m", "app", "serve"],
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({"PORT": "eighty"}, "PORT"),
        ({"PORT": "70000"}, "PORT"),
        ({"LOG_FORMAT": "xml"}, "LOG_FORMAT"),
        ({"DATABASE_URL": "mysql://db/x"}, "DATABASE_URL"),
        ({"REDIS_URL": "http://cache"}, "REDIS_URL"),
        ({"ADMIN_API_KEY": "short"}, "ADMIN_API_KEY"),
    ],
)
def test_bad_setting_is_one_line(env: dict[str, str], names: str) -> None:
    result = run_serve(env)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("configuration error: ") and names in lines[0]
    assert "Traceback" not in result.stderr


def test_unreachable_database_after_bounded_wait(redis_url: str) -> None:
    result = run_serve(
        {
            "DATABASE_URL": "postgresql://postgres@127.0.0.1:1/nowhere",
            "REDIS_URL": redis_url,
            "DB_CONNECT_WAIT_S": "1",
        }
    )
    # Not a configuration error (the server may just be down): status 1, after the line that
    # names the database.
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[0] == "database: postgresql://postgres@127.0.0.1:1/nowhere; redis: " + redis_url
    assert len(lines) == 2, result.stderr
    assert lines[1].startswith("error: cannot reach the database after 1s")


def test_defaults() -> None:
    settings = Settings(_env_file=None)  # type: ignore[call-arg]
    assert (settings.host, settings.port, settings.log_format) == ("127.0.0.1", 8000, "text")
    assert str(settings.data_dir) == ".data"


def test_describe_error_lists_every_bad_name() -> None:
    with pytest.raises(ValidationError) as caught:
        Settings(port=0, log_format="yaml")  # type: ignore[arg-type]
    line = describe_error(caught.value)
    assert "PORT" in line and "LOG_FORMAT" in line and "\n" not in line


def test_psycopg_dialect_is_chosen() -> None:
    assert sqlalchemy_url("postgres://u@h/db") == "postgresql+psycopg://u@h/db"
    assert sqlalchemy_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"


def test_a_cluster_url_names_its_seeds() -> None:
    assert cluster_url("redis+cluster://10.0.0.1:7000,10.0.0.2:7001") == ClusterUrl(
        (("10.0.0.1", 7000), ("10.0.0.2", 7001)), False, None, None
    )
    assert cluster_url("rediss+cluster://app:s%40cret@[::1]:7000/0") == ClusterUrl(
        (("::1", 7000),), True, "app", "s@cret"
    )
    assert cluster_url("redis://host:6379/0") is None
    assert Settings(redis_url="redis+cluster://h:7000").redis_url == "redis+cluster://h:7000"


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("redis+cluster://h1:7000,h2", "must be host:port"),
        ("redis+cluster://h1:7000/2", "one database"),
        ("redis+cluster://h1:x", "malformed port"),
        ("redis+clusters://h1:7000", "got scheme"),
    ],
)
def test_a_bad_cluster_url_is_named(url: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Settings(redis_url=url)
