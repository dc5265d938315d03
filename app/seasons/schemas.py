"""HTTP shapes of seasons."""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from app.ids import Identifier
from app.modes.schemas import Reset, SeasonOut

# A soft reset's defaults: mu moves half way back to the prior mean, and a quarter of the
# variance lost since the prior comes back (docs/api.md, "Seasons").
DEFAULT_PULL = 0.5
DEFAULT_WIDEN = 0.25
# The season a mode is in before its first switch.
FIRST_SEASON = "preseason"


class SeasonIn(BaseModel):
    """Start a season: the current one is archived as it stands, then ratings are reset."""

    model_config = ConfigDict(extra="forbid")

    name: Identifier = Field(description="the new season's name, unique within the mode")
    reset: Reset = Field(
        description="hard: every rating to the prior; soft: mu pulled toward the prior mean and sigma "
        "widened toward the prior sigma by `pull` and `widen`; none: ratings carry over. Matches, wins, "
        "losses and draws restart in every case"
    )
    pull: float | None = Field(
        None,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description=f"soft only: mu' = mu0 + (1 - pull)(mu - mu0); default {DEFAULT_PULL}",
    )
    widen: float | None = Field(
        None,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description=f"soft only: sigma'^2 = sigma^2 + widen (sigma0^2 - sigma^2); default {DEFAULT_WIDEN}",
    )

    @model_validator(mode="after")
    def _soft_only(self) -> Self:
        if self.reset != "soft" and (self.pull is not None or self.widen is not None):
            raise ValueError(f"pull and widen apply to a soft reset, not {self.reset!r}")
        return self

    def factors(self) -> tuple[float, float]:
        """(pull, widen): hard is (1, 1) and none (0, 0) of the one formula."""
        if self.reset == "hard":
            return 1.0, 1.0
        if self.reset == "none":
            return 0.0, 0.0
        return (
            DEFAULT_PULL if self.pull is None else self.pull,
            DEFAULT_WIDEN if self.widen is None else self.widen,
        )


class ModeSeasons(BaseModel):
    season: SeasonOut = Field(description="the current season")
    past_seasons: list[SeasonOut] = Field(
        description="ended seasons, latest first; their leaderboards are read with ?season=NAME"
    )
