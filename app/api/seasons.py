"""Seasons: admin starts one (a job); the mode and the leaderboards show them."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response, status

from app.api.deps import AdminKey, SessionDep
from app.api.jobs import LOCATION
from app.ids import Identifier
from app.jobs import service
from app.jobs.schemas import JobAccepted
from app.seasons.schemas import SeasonIn

router = APIRouter(tags=["modes"])


@router.post(
    "/v1/modes/{mode}/seasons",
    operation_id="start_season",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=JobAccepted,
    responses={
        202: {"headers": LOCATION},
        409: {"description": "The mode has (or is starting) a season of that name"},
    },
)
async def start_season(
    mode: Identifier, body: SeasonIn, request: Request, response: Response, session: SessionDep, _: AdminKey
) -> JobAccepted:
    """Queue a season switch: the current season's leaderboard is archived as it stands
    (read it with `?season=NAME` on the leaderboard routes), then every rating is reset
    (hard, soft or none) and matches, wins, losses and draws restart. Matches posted during
    the switch wait for it and land in exactly one season. 409 when the mode has (or is
    starting) a season of that name. The answer's Location is the job's URL."""
    accepted = await service.submit_season(session, mode, body)
    path = request.app.url_path_for("get_job", job_id=accepted.job_id)
    response.headers["Location"] = request.scope.get("root_path", "") + str(path)
    return accepted
