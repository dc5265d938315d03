"""HTTP shapes of API keys."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, ConfigDict, Field

from app.auth.keys import Scope
from app.ids import ModePattern

MODES = (
    "The modes the key is limited to: names, and prefixes ending in `*` (`fps-*` is every mode "
    "whose name starts with `fps-`). Omitted or null: every mode."
)


class KeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=128)
    scopes: list[Scope] = Field(min_length=1, max_length=4)
    modes: list[ModePattern] | None = Field(None, min_length=1, max_length=64, description=MODES)


class KeyCreated(BaseModel):
    id: str
    key: str = Field(description="Shown once; only its hash is stored")
    name: str
    scopes: list[Scope]
    modes: list[str] | None = Field(description=MODES)


class KeyInfo(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    scopes: list[Scope]
    modes: list[str] | None = Field(description=MODES)
    created_at: dt.datetime
    revoked_at: dt.datetime | None


class KeyList(BaseModel):
    keys: list[KeyInfo]
