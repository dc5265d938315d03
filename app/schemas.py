"""HTTP shapes that several packages answer with, so each imports them downward."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class RatingOut(BaseModel):
    mu: float
    sigma: float
    conservative: float = Field(description="mu − k·sigma, k from the mode")


class FieldError(BaseModel):
    """One failing field of a 422."""

    loc: list[str | int] = Field(description='where, as a path: ["body", "teams", 1, "rank"]')
    msg: str
    type: str | None = Field(None, description="pydantic's error type, when schema validation found it")


class Problem(BaseModel):
    """RFC 9457 problem details: every error the API answers, and each failed item of a batch."""

    type: str = Field(description='always "about:blank": the status and title say what kind of error')
    title: str = Field(description="the status's name, the same for every answer of that status (RFC 9110)")
    status: int
    detail: str = Field(description="one sentence naming what is wrong")
    instance: str | None = Field(description="the request's path")
    errors: list[FieldError] | None = Field(None, description="in a 422 only: each field that fails")


class Health(BaseModel):
    status: Literal["ok"]


class Readiness(BaseModel):
    status: Literal["ready"]
    postgres: Literal["ok"]
    redis: Literal["ok"]
