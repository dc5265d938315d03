"""History jobs (admin): replay a mode, or smooth it with TrueSkill Through Time."""

from __future__ import annotations

from fastapi import APIRouter, status

from app.api.deps import AdminKey, SessionDep
from app.ids import Identifier
from app.jobs import service
from app.jobs.schemas import JobAccepted, JobIn, JobOut

router = APIRouter(tags=["jobs"])


@router.post(
    "/v1/modes/{mode}/jobs",
    operation_id="submit_job",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=JobAccepted,
)
async def submit_job(mode: Identifier, body: JobIn, session: SessionDep, _: AdminKey) -> JobAccepted:
    """Queue a job over the mode's history. `replay` re-rates every non-void match in
    played_at order with the mode's current parameters (players start at their seeded
    rating or the prior); `smooth` runs TrueSkill Through Time and stores learning curves.
    Either swaps its results in with one transaction, or leaves everything as it was."""
    return await service.submit(session, mode, body)


@router.get("/v1/jobs/{job_id}", operation_id="get_job", response_model=JobOut)
async def get_job(job_id: Identifier, session: SessionDep, _: AdminKey) -> JobOut:
    """A job's status, progress (0..1), and result or failure reason."""
    return await service.get(session, job_id)
