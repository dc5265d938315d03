"""API keys (admin)."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from app.api.deps import AdminKey, SessionDep
from app.auth import service
from app.auth.schemas import KeyCreate, KeyCreated, KeyInfo, KeyList

router = APIRouter(prefix="/v1/keys", tags=["api keys"])


@router.post("", operation_id="create_key", status_code=status.HTTP_201_CREATED, response_model=KeyCreated)
async def create_key(body: KeyCreate, session: SessionDep, admin: AdminKey) -> KeyCreated:
    """Create a key with the given scopes, for every mode or limited to `modes`. The key is in
    this response only. An admin key limited to modes creates keys within them only (403)."""
    row, key = await service.create_key(session, body.name, body.scopes, body.modes, admin.modes)
    return KeyCreated(id=row.id, key=key, name=row.name, scopes=body.scopes, modes=row.modes)


@router.get("", operation_id="list_keys", response_model=KeyList)
async def list_keys(session: SessionDep, admin: AdminKey) -> KeyList:
    """Every key, without secrets; for an admin key limited to modes, the keys within them."""
    rows = await service.list_keys(session, admin.modes)
    return KeyList(keys=[KeyInfo.model_validate(k) for k in rows])


@router.delete("/{key_id}", operation_id="revoke_key", status_code=status.HTTP_204_NO_CONTENT)
async def revoke_key(key_id: str, session: SessionDep, admin: AdminKey) -> Response:
    """Revoke a key; it stops working at once, and its ops-page sessions end. An admin key
    limited to modes revokes keys within them only (404 for the others, as in its list)."""
    await service.revoke_key(session, key_id, admin.modes)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
