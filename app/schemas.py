"""HTTP shapes that several domain packages answer with, so each imports them downward."""

from __future__ import annotations

from pydantic import BaseModel, Field


class RatingOut(BaseModel):
    mu: float
    sigma: float
    conservative: float = Field(description="mu − k·sigma, k from the mode")
