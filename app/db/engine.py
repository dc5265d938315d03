"""Engine and session factory, built once in the app's lifespan."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine

from app.config import Settings, sqlalchemy_url


def build_engine(settings: Settings, url: str) -> AsyncEngine:
    return create_async_engine(
        sqlalchemy_url(url),
        pool_size=settings.db_pool_size,
        max_overflow=settings.db_pool_size,
        pool_timeout=settings.db_statement_timeout_ms / 1000.0,
        pool_pre_ping=False,
        connect_args={
            "connect_timeout": 5,
            # A hung query never holds a request past this (it then fails as 503).
            "options": f"-c statement_timeout={settings.db_statement_timeout_ms}",
        },
    )


def build_sessionmaker(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return async_sessionmaker(engine, expire_on_commit=False, autoflush=False)
