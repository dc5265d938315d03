"""Settings, read once from the environment (pydantic-settings).

The names are a contract with operators, docker-compose and the tests: DATABASE_URL,
REDIS_URL, DATA_DIR, HOST, PORT, ADMIN_API_KEY, LOG_FORMAT, plus the tuning knobs below.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network, IPv6Network, ip_network
from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import unquote, urlsplit

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

_PG_SCHEMES = {"postgres", "postgresql", "postgresql+psycopg"}
_REDIS_SCHEMES = {"redis", "rediss", "unix"}
# REDIS_URL=redis+cluster://h1:p1,h2:p2 (rediss+cluster:// with TLS) names Redis Cluster seeds.
_CLUSTER_SCHEMES = {"redis+cluster": False, "rediss+cluster": True}


@dataclass(frozen=True, slots=True)
class ClusterUrl:
    """A Redis Cluster REDIS_URL: the seed nodes the client discovers the cluster from."""

    seeds: tuple[tuple[str, int], ...]
    tls: bool
    username: str | None
    password: str | None


def cluster_url(url: str) -> ClusterUrl | None:
    """The seeds of a redis+cluster:// or rediss+cluster:// URL; None for any other URL.
    ValueError names what is wrong (a seed without a port, a database other than 0)."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in _CLUSTER_SCHEMES:
        return None
    netloc, _, tail = rest.partition("/")
    if tail.partition("?")[0] not in ("", "0"):
        raise ValueError("a cluster has one database (0): drop the path")
    auth, _, hosts = netloc.rpartition("@")
    username, _, password = auth.partition(":")
    seeds = []
    for seed in hosts.split(","):
        parts = urlsplit(f"redis://{seed}")
        try:
            port = parts.port
        except ValueError as exc:
            raise ValueError(f"has a malformed port in seed {seed!r}: {exc}") from None
        if not parts.hostname or port is None:
            raise ValueError(f"seed {seed!r} must be host:port")
        seeds.append((parts.hostname, port))
    return ClusterUrl(
        tuple(seeds), _CLUSTER_SCHEMES[scheme], unquote(username) or None, unquote(password) or None
    )


class Settings(BaseSettings):
    model_config = SettingsConfigDict(case_sensitive=False, extra="ignore", env_ignore_empty=True)

    database_url: str | None = Field(None, description="PostgreSQL URL; unset: an embedded PostgreSQL")
    redis_url: str | None = Field(
        None,
        description="Redis URL (redis+cluster://h1:p1,h2:p2 for a cluster); unset: an embedded Redis",
    )
    data_dir: Path = Field(Path(".data"), description="Where embedded servers keep their data")
    host: str = Field("127.0.0.1", min_length=1)
    port: int = Field(8000, ge=1, le=65535)
    admin_api_key: SecretStr | None = Field(None, description="Bootstrap admin key; unset: generated once")
    log_format: Literal["text", "json"] = "text"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    workers: int = Field(1, ge=1, le=64, description="uvicorn worker processes for `serve`")
    http_keep_alive_s: int = Field(
        120, ge=1, le=3600, description="How long `serve` keeps an idle client connection open"
    )
    db_pool_size: int = Field(10, ge=1, le=200)
    db_connect_wait_s: float = Field(
        15.0,
        gt=0,
        le=600,
        description="How long start-up waits for PostgreSQL and Redis (embedded ones included) to answer",
    )
    db_statement_timeout_ms: int = Field(5000, ge=100, le=600_000)
    redis_timeout_s: float = Field(5.0, gt=0, le=60)
    max_body_bytes: int = Field(1_048_576, ge=1024, le=64 * 1_048_576)
    rate_limit_per_s: float = Field(
        1000.0, ge=0, le=1_000_000, description="Requests a second per API key and process; 0: no limit"
    )
    rate_limit_burst: int = Field(2000, ge=1, le=10_000_000, description="Requests a key may burst")
    auth_failures_per_s: float = Field(
        1.0, ge=0, le=1_000_000, description="Failed authentications a second per client address; 0: no limit"
    )
    auth_failure_burst: int = Field(
        20, ge=1, le=10_000_000, description="Failed authentications an address may burst"
    )
    trusted_proxies: Annotated[tuple[IPv4Network | IPv6Network, ...], NoDecode] = Field(
        (), description="Addresses or networks of proxies whose X-Forwarded-For names the client"
    )
    ui_session_s: int = Field(
        28_800, ge=60, le=30 * 86_400, description="How long an ops-page sign-in lasts (its session expires)"
    )
    maintenance_every_s: float = Field(
        5.0, gt=0, le=3600, description="How often background work (leaderboard counts, jobs) runs"
    )

    @field_validator("database_url")
    @classmethod
    def _postgres_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in _PG_SCHEMES:
            raise ValueError(f"must be a postgresql:// URL, got scheme {parts.scheme!r}")
        if not parts.path.strip("/"):
            raise ValueError("must name a database, e.g. postgresql://user@host:5432/skills")
        return value

    @field_validator("redis_url")
    @classmethod
    def _redis_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if cluster_url(value) is not None:  # raises ValueError naming a bad seed
            return value
        parts = urlsplit(value)
        if parts.scheme not in _REDIS_SCHEMES:
            raise ValueError(
                "must be a redis://, rediss://, unix://, redis+cluster:// or rediss+cluster:// URL, "
                f"got scheme {parts.scheme!r}"
            )
        try:
            parts.port  # noqa: B018 - raises on a malformed port
        except ValueError as exc:
            raise ValueError(f"has a malformed port: {exc}") from None
        return value

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _proxy_list(cls, value: object) -> object:
        # TRUSTED_PROXIES=10.0.0.5,192.168.0.0/16: a comma list, not JSON.
        if isinstance(value, str):
            return tuple(ip_network(part.strip(), strict=False) for part in value.split(",") if part.strip())
        return value

    @field_validator("admin_api_key")
    @classmethod
    def _strong_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < 16:
            raise ValueError("must be at least 16 characters")
        return value


def describe_error(error: ValidationError) -> str:
    """One line naming every bad setting, for the operator."""
    parts = []
    for item in error.errors():
        name = str(item["loc"][0]).upper() if item["loc"] else "settings"
        parts.append(f"{name}: {item['msg']}")
    return "configuration error: " + "; ".join(parts)


def sqlalchemy_url(url: str) -> str:
    """The psycopg 3 dialect URL for a postgres:// or postgresql:// URL."""
    scheme, _, rest = url.partition("://")
    return f"postgresql+psycopg://{rest}" if scheme in ("postgres", "postgresql") else url
