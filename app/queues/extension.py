"""A ticket's extension: what it says beyond its pool record (roles, avoid lists), stored beside it.

The pool record (record.py) is the layout every release of this layout reads, the previous one
(mm:v4 as first released) included. So a ticket that says more than a record can, its players'
roles or an avoid list, keeps the rest in its extension: a JSON object, canonical (sorted keys,
no spaces), in the field "x:<ticket>" of the done hash of its id's minute (store.py), written by
the enqueue script with the record and kept as long as the ticket's status. Readers ignore keys
they do not know, so a later release adds keys without a new layout.

A release that does not read extensions must not match such a ticket as if it had none (it
would put players who avoid each other in one match). So an extended ticket's record carries,
in place of its attribute group, a group no attributes give (`extended_group`, negative; attribute
groups are 48-bit digests, never negative): such a release sees a group of one ticket, and
never matches it. This release reads the true group from the record's attributes.

Keys:
    "roles": per player of the ticket, in order, the roles they accept (names, in their order);
    "avoid": player ids none of the ticket's players may meet;
    "group": the ticket's attribute group (as text: Lua's cjson would round a 48-bit number),
        which the record's header no longer says;
    "level": present when the ticket needs a reader of a later level than LEVEL to be matched
        right (a constraint a later release adds); a reader of a lower level leaves it unmatched,
        as a release that reads no extension does. This release writes none: level 1 is its own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from app.matchmaking.pool import TicketRoles

__all__ = ["FIELD_PREFIX", "LEVEL", "Extension", "TicketRoles", "decode", "encode", "extended_group", "field"]

# What the extension field of a ticket is named in its done hash.
FIELD_PREFIX = "x:"
# The extension keys this release understands (docs/upgrades.md).
LEVEL = 1


@dataclass(frozen=True, slots=True)
class Extension:
    roles: TicketRoles | None = None
    avoid: tuple[str, ...] = ()
    level: int = LEVEL
    group: int | None = None  # None: read it from the record's attributes

    @property
    def readable(self) -> bool:
        """Whether this release knows every key that changes whom the ticket may meet."""
        return self.level <= LEVEL


def encode(roles: Sequence[Sequence[str]] | None, avoid: Sequence[str], group: int) -> str:
    """The extension's text; empty when the ticket has none (then its record keeps its group)."""
    found: dict[str, object] = {}
    if roles is not None:
        found["roles"] = [list(names) for names in roles]
    if avoid:
        found["avoid"] = list(avoid)
    if not found:
        return ""
    found["group"] = str(group)
    return json.dumps(found, sort_keys=True, separators=(",", ":"))


def decode(text: bytes | str | None) -> Extension:
    """An extension read back (none: a ticket queued without, or whose field is gone)."""
    if not text:
        return Extension()
    found = json.loads(text)
    roles = found.get("roles")
    return Extension(
        tuple(tuple(names) for names in roles) if isinstance(roles, list) else None,
        tuple(found.get("avoid") or ()),
        int(found.get("level", LEVEL)),
        int(found["group"]) if "group" in found else None,
    )


def extended_group(ticket_id: str) -> float:
    """The attribute group an extended ticket's record carries: negative, one per ticket (from
    the 48 random bits after its id's second), so a release that reads no extension never
    matches it with another ticket."""
    return -1.0 - int(ticket_id[8:20], 16)


def field(ticket_id: str) -> str:
    return FIELD_PREFIX + ticket_id
