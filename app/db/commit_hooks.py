"""Run an action once the session's transaction commits; drop it if it rolls back."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session

_KEY = "after_commit"


def after_commit(session: AsyncSession, action: Callable[[], None]) -> None:
    """`action` runs after the current transaction commits, never if it rolls back."""
    session.sync_session.info.setdefault(_KEY, []).append(action)


@event.listens_for(Session, "after_commit")
def _run(session: Session) -> None:
    actions: list[Callable[[], Any]] = session.info.pop(_KEY, [])
    for action in actions:
        action()


@event.listens_for(Session, "after_soft_rollback")
def _drop(session: Session, previous_transaction: Any) -> None:
    session.info.pop(_KEY, None)
