"""History jobs: admin submits a replay or a smooth of a mode; read scope follows them."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response, status

from app.api.deps import AdminKey, ReadKey, SessionDep
from app.ids import Identifier
from app.jobs import service
from app.jobs.schemas import JobAccepted, JobIn, JobOut

router = APIRouter(tags=["jobs"])

LOCATION = {
    "Location": {"description": "The job's URL (GET it to follow the job)", "schema": {"type": "string"}}
}


@router.post(
    "/v1/modes/{mode}/jobs",
    operation_id="submit_job",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=JobAccepted,
    responses={202: {"headers": LOCATION}},
)
async def submit_job(
    mode: Identifier, body: JobIn, request: Request, response: Response, session: SessionDep, _: AdminKey
) -> JobAccepted:
    """Queue a job over the mode's history. `replay` re-rates every non-void match in
    played_at order with the mode's current parameters (players start at their seeded
    rating or the prior); `smooth` runs TrueSkill Through Time and stores learning curves.
    Either swaps its results in with one transaction, or leaves everything as it was.
    The answer's Location is the job's URL."""
    accepted = await service.submit(session, mode, body)
    # A relative reference (RFC 9110 §10.2.2): right behind any proxy, whatever Host it rewrote.
    path = request.app.url_path_for("get_job", job_id=accepted.job_id)
    response.headers["Location"] = request.scope.get("root_path", "") + str(path)
    return accepted


@router.post(
    "/v1/jobs/{job_id}/retry",
    operation_id="retry_job",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=JobAccepted,
    responses={202: {"headers": LOCATION}},
)
async def retry_job(
    job_id: Identifier, request: Request, response: Response, session: SessionDep, key: AdminKey
) -> JobAccepted:
    """Queue a failed job again, as a new job of the same mode, kind and params (a `retier`
    job, which no request submits, is retried this way). 409 for a job that has not failed; 404
    for an unknown job (or one of a mode the key may not use). The answer's Location is the new
    job's URL."""
    accepted = await service.retry(session, job_id, key.modes)
    path = request.app.url_path_for("get_job", job_id=accepted.job_id)
    response.headers["Location"] = request.scope.get("root_path", "") + str(path)
    return accepted


@router.get("/v1/jobs/{job_id}", operation_id="get_job", response_model=JobOut)
async def get_job(job_id: Identifier, session: SessionDep, key: ReadKey) -> JobOut:
    """A job's status, progress (0..1), and result or failure reason (read scope: jobs are
    ops data). For a key limited to modes, a job of another mode is a 404."""
    return await service.get(session, job_id, key.modes)
