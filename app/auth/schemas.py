"""HTTP shapes of API keys."""

from __future__ import annotations

import datetime as dt

from pydantic import BaseModel, ConfigDict, Field

from app.auth.keys import Scope


class KeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=128)
    scopes: list[Scope] = Field(min_length=1, max_length=4)


class KeyCreated(BaseModel):
    id: str
    key: str = Field(description="Shown once; only its hash is stored")
    name: str
    scopes: list[Scope]


class KeyInfo(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    name: str
    scopes: list[Scope]
    created_at: dt.datetime
    revoked_at: dt.datetime | None


class KeyList(BaseModel):
    keys: list[KeyInfo]
