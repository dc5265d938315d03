"""API keys (admin)."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from app.api.deps import AdminKey, SessionDep
from app.auth import service
from app.auth.schemas import KeyCreate, KeyCreated, KeyInfo, KeyList

router = APIRouter(prefix="/v1/keys", tags=["api keys"])


@router.post("", operation_id="create_key", status_code=status.HTTP_201_CREATED, response_model=KeyCreated)
async def create_key(body: KeyCreate, session: SessionDep, _: AdminKey) -> KeyCreated:
    """Create a key with the given scopes. The key is in this response only."""
    row, key = await service.create_key(session, body.name, body.scopes)
    return KeyCreated(id=row.id, key=key, name=row.name, scopes=body.scopes)


@router.get("", operation_id="list_keys", response_model=KeyList)
async def list_keys(session: SessionDep, _: AdminKey) -> KeyList:
    """Every key, without secrets."""
    return KeyList(keys=[KeyInfo.model_validate(k) for k in await service.list_keys(session)])


@router.delete("/{key_id}", operation_id="revoke_key", status_code=status.HTTP_204_NO_CONTENT)
async def revoke_key(key_id: str, session: SessionDep, _: AdminKey) -> Response:
    """Revoke a key; it stops working at once."""
    await service.revoke_key(session, key_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
