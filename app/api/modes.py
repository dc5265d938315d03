"""Game modes: admin writes, read scope reads."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import AdminKey, ReadKey, SessionDep
from app.ids import Identifier
from app.jobs import service as jobs
from app.leaderboards import service as leaderboards
from app.leaderboards.schemas import TierCounts
from app.modes import service
from app.modes.schemas import ModeChanged, ModeDetail, ModeList, ModeOut, ModeUpdate
from app.seasons import service as seasons

router = APIRouter(prefix="/v1/modes", tags=["modes"])


@router.get("", operation_id="list_modes", response_model=ModeList)
async def list_modes(session: SessionDep, key: ReadKey) -> ModeList:
    """Every mode with its rating parameters (for a key limited to modes, those modes)."""
    return ModeList(modes=[ModeOut.of(m) for m in await service.list_modes(session, key.modes)])


@router.get("/{mode}", operation_id="get_mode", response_model=ModeDetail)
async def get_mode(mode: Identifier, session: SessionDep, _: ReadKey) -> ModeDetail:
    """One mode, with its current season and the past ones; 404 if unknown."""
    found = await service.get_mode(session, mode)
    held = await seasons.of_mode(session, found)
    return ModeDetail.of(found, season=held.season, past_seasons=held.past_seasons)


@router.get("/{mode}/tiers", operation_id="get_tier_counts", response_model=TierCounts)
async def get_tier_counts(mode: Identifier, session: SessionDep, _: ReadKey) -> TierCounts:
    """How many ranked players each of the mode's tiers holds, lowest tier first: exact after
    every write (counts kept in each write's transaction); 404 for an unknown mode."""
    return await leaderboards.tier_counts(session, mode)


@router.put("/{mode}", operation_id="put_mode", response_model=ModeChanged)
async def put_mode(mode: Identifier, body: ModeUpdate, session: SessionDep, _: AdminKey) -> ModeChanged:
    """Create or change a mode. On creation, omitted fields take the TrueSkill defaults
    (beta = sigma/2, tau = sigma/100); on change, omitted fields keep their values.
    Changing rating parameters does not rewrite existing ratings: a replay job does, and the
    answer says `replay_recommended` when the mode has matches. A new
    min_matches_for_leaderboard applies to the leaderboard at once. A new conservative_k or
    drift_per_day (which recommends a replay) re-scores the leaderboard in a job, in batches,
    while reads say `rescoring`. New tiers, demotion_margin, display_scale or display_offset
    (or k, or the placement matches) re-tier the mode in the same job, named by `retier_job`:
    every ranked player placed afresh where their rating lies.
    422 when quality_floor would exceed quality_start, or for tiers out of order or with a
    repeated name."""
    change = await service.put_mode(session, mode, body)
    # In this request's transaction: the job is queued if and only if the change commits.
    job = await jobs.queue_retier(session, mode, change)
    return ModeChanged.of(change.mode, replay_recommended=change.replay_recommended, retier_job=job)
