"""docker-compose.yml sets only env names the app reads, and is wired as designed."""

from __future__ import annotations

from pathlib import Path

import yaml

from app.config import Settings

ROOT = Path(__file__).resolve().parents[1]


def test_api_env_names_are_settings() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    env = compose["services"]["api"]["environment"]
    names = set(env) if isinstance(env, dict) else {item.split("=", 1)[0] for item in env}
    known = {name.upper() for name in Settings.model_fields}
    assert names, "the api service sets no environment"
    assert names <= known, f"unknown env names: {sorted(names - known)}"
    assert {"DATABASE_URL", "REDIS_URL"} <= names


def test_services_have_healthchecks_and_ordering() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    assert set(services) >= {"api", "postgres", "redis"}
    for name in ("api", "postgres", "redis"):
        assert "healthcheck" in services[name], name
    depends = services["api"]["depends_on"]
    assert depends["postgres"]["condition"] == "service_healthy"
    assert depends["redis"]["condition"] == "service_healthy"
    assert services["postgres"]["image"].startswith("postgres:16")
    assert services["redis"]["image"].startswith("redis:7")
    volume = services["postgres"]["volumes"][0].split(":")[0]
    assert volume in compose["volumes"]


def test_dockerfile_is_slim_non_root_with_healthcheck() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert "python:3.11-slim" in text or "python:3.12-slim" in text
    assert "\nUSER " in text and "USER root" not in text.split("\nUSER ")[-1]
    assert "HEALTHCHECK" in text and "/readyz" in text
    assert ".[dev" not in text and "[dev]" not in text
