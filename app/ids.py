"""Client-chosen identifiers: player ids, mode names and match ids (API.md conventions)."""

from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints

ID_PATTERN = r"^[A-Za-z0-9._:@-]{1,128}$"

Identifier = Annotated[str, StringConstraints(pattern=ID_PATTERN, min_length=1, max_length=128)]
