"""Bulk work under a session: the psycopg connection itself (COPY, plain tuples), lifting the
request statement timeout for long statements, NumPy columns in and out, and rebuilding whole
tables into fresh ones swapped in.

In: binary COPY of fixed-width columns (int4, int8, float8, never null) is a fixed-width record
per row: a 16-bit field count, then per field a 32-bit length and the value, big-endian
(PostgreSQL's COPY BINARY format), which NumPy writes as one structured array. Out: each
column as one bytea of its values' binary forms (`fetch_columns`). Either way hundreds of
thousands of rows cross without a Python object each.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import pq
from psycopg.adapt import Dumper
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
_HEADER = _SIGNATURE + b"\x00\x00\x00\x00" + b"\x00\x00\x00\x00"  # no flags, no extension
_TRAILER = b"\xff\xff"
# PostgreSQL type -> big-endian NumPy type of its binary form; a native NumPy column's type ->
# its PostgreSQL type; and the element type oids of the binary array form.
_WIDTHS = {"int4": ">i4", "int8": ">i8", "float8": ">f8"}
_KINDS = {np.dtype(np.int32): "int4", np.dtype(np.int64): "int8", np.dtype(np.float64): "float8"}
_OIDS = {"int4": 23, "int8": 20, "float8": 701}
# An element of the binary array form, per type: its length, then its value (built once: a
# structured dtype costs more to make than a short column costs to fill).
_ELEMENTS = {kind: np.dtype([("length", ">i4"), ("value", width)]) for kind, width in _WIDTHS.items()}


async def driver(session: AsyncSession) -> psycopg.AsyncConnection[Any]:
    """The psycopg connection under the session's transaction."""
    connection = await session.connection()
    raw = (await connection.get_raw_connection()).driver_connection
    assert isinstance(raw, psycopg.AsyncConnection)
    return raw


async def unbounded(session: AsyncSession) -> None:
    """Lift the request statement timeout for this transaction: jobs run long statements."""
    await session.execute(text("SET LOCAL statement_timeout = 0"))


def _record(types: Sequence[str]) -> np.dtype[Any]:
    fields: list[tuple[str, str]] = [("count", ">i2")]
    for number, kind in enumerate(types):
        fields += [(f"length{number}", ">i4"), (f"value{number}", _WIDTHS[kind])]
    return np.dtype(fields)


_SEND = {"int4": "int4send", "int8": "int8send", "float8": "float8send"}


async def fetch_columns(
    conn: psycopg.AsyncConnection[Any], query: str, types: Sequence[str], params: Any = None
) -> list[npt.NDArray[Any]]:
    """The columns of `query` (fixed-width types, no nulls) as native NumPy arrays, the rows
    in no particular order (the caller sorts them by columns it asks for).

    Each column comes back as one bytea, its values' binary forms concatenated (a COPY out
    would hand over one row at a time, a Python call each); NumPy reads it as it is."""
    names = [f"c{n}" for n in range(len(types))]
    aggregates = ", ".join(
        f"string_agg({_SEND[kind]}({name}), '')" for name, kind in zip(names, types, strict=True)
    )
    async with conn.cursor(binary=True) as cursor:
        await cursor.execute(f"SELECT {aggregates} FROM ({query}) AS q({', '.join(names)})", params)
        row = await cursor.fetchone()
    assert row is not None
    return [
        np.frombuffer(data or b"", dtype=_WIDTHS[kind]).astype(_WIDTHS[kind][1:])
        for data, kind in zip(row, types, strict=True)
    ]


async def fetch_lines(conn: psycopg.AsyncConnection[Any], query: str, params: Any = None) -> list[str]:
    """The values of a query of (position, text), in position order, as one string split:
    for identifiers (app.ids), which never hold a newline."""
    async with conn.cursor() as cursor:
        await cursor.execute(f"SELECT string_agg(v, E'\\n' ORDER BY k) FROM ({query}) AS q(k, v)", params)
        row = await cursor.fetchone()
    return [] if row is None or row[0] is None else str(row[0]).split("\n")


async def copy_in_columns(
    conn: psycopg.AsyncConnection[Any], table: str, names: Sequence[str], columns: Sequence[npt.NDArray[Any]]
) -> None:
    """COPY equal-length NumPy columns (int4, int8 or float8 by dtype) into `table`."""
    types = [_KINDS[c.dtype] for c in columns]
    record = _record(types)
    rows = np.empty(len(columns[0]) if columns else 0, dtype=record)
    rows["count"] = len(columns)
    for number, (kind, column) in enumerate(zip(types, columns, strict=True)):
        rows[f"length{number}"] = np.dtype(_WIDTHS[kind]).itemsize
        rows[f"value{number}"] = column
    async with (
        conn.cursor() as cursor,
        cursor.copy(f"COPY {table} ({', '.join(names)}) FROM STDIN (FORMAT binary)") as copy,
    ):
        await copy.write(_HEADER + rows.tobytes() + _TRAILER)


# -- NumPy columns as query parameters -------------------------------------------------


@dataclass(frozen=True, slots=True)
class ColumnParam:
    """A NumPy column (int32, int64 or float64, no nulls) as a one-dimensional array
    parameter in PostgreSQL's binary form. The statement names its type (`CAST(%s AS
    float8[])`), and the server checks that the elements are of that type."""

    data: bytes


def column_param(values: npt.NDArray[Any]) -> ColumnParam:
    """The binary array form: a header (one dimension, no nulls, the element type, the
    length, lower bound 1), then per element a 32-bit length and the value, big-endian. One
    structured NumPy array, so thousands of values cross with no text (and no Python object)
    per value: as array literals, a large batch's numbers cost a good part of its worker's CPU
    (docs/benchmarks.md, issue #23)."""
    kind = _KINDS[values.dtype]
    element = _OIDS[kind]
    if not len(values):
        return ColumnParam(struct.pack("!iii", 0, 0, element))
    item = _ELEMENTS[kind]
    items = np.empty(len(values), dtype=item)
    items["length"] = item["value"].itemsize
    items["value"] = values
    return ColumnParam(struct.pack("!iiiii", 1, 0, element, len(values), 1) + items.tobytes())


class _ColumnDumper(Dumper):
    format = pq.Format.BINARY

    def dump(self, obj: ColumnParam) -> bytes:
        return obj.data


psycopg.adapters.register_dumper(ColumnParam, _ColumnDumper)


# -- fresh tables swapped in -----------------------------------------------------------

_INDEX = re.compile(r"^CREATE (UNIQUE )?INDEX \S+ ON (?:ONLY )?\S+ (USING .*)$")
_REFERENCES = re.compile(r"REFERENCES (\S+?)\(")


async def _rows(conn: psycopg.AsyncConnection[Any], query: str, params: Any) -> list[Any]:
    async with conn.cursor() as cursor:
        await cursor.execute(query, params)
        return await cursor.fetchall()


async def columns_of(conn: psycopg.AsyncConnection[Any], table: str, where: str = "") -> list[str]:
    """The table's columns in order (`where`: more conditions on pg_attribute)."""
    rows = await _rows(
        conn,
        "SELECT attname FROM pg_attribute WHERE attrelid = CAST(%s AS regclass) AND attnum > 0"
        f" AND NOT attisdropped {where} ORDER BY attnum",
        (table,),
    )
    return [row[0] for row in rows]


@dataclass(slots=True)
class Fresh:
    """A fresh copy of a table, filled and indexed, waiting for `swap_in`."""

    table: str
    name: str
    renames: list[tuple[str, str, bool]] = field(default_factory=list)  # (temporary, original, constraint)


async def fresh_table(
    conn: psycopg.AsyncConnection[Any], table: str, select: str, params: Any = None
) -> Fresh:
    """A fresh table holding the rows of `select` (every column of `table`, in its order, or
    the columns it names first: `(a, b) SELECT ...`), with `table`'s defaults, checks,
    storage, indexes and owned sequences.

    Writing rows into a table with no index and building its indexes once costs a fraction of
    updating them in place, where every new row version enters every index. The caller holds
    a lock that keeps the table's writers out (its readers go on until `swap_in`). A table
    with triggers is refused (its transaction fails, and nothing changes)."""
    fresh = Fresh(table, f"{table}__fresh")
    # Each index is built by one sort: in memory where it fits (a default of 64 MB is not much).
    await conn.execute("SET LOCAL maintenance_work_mem = '256MB'")
    triggers = await _rows(
        conn,
        "SELECT count(*) FROM pg_trigger WHERE tgrelid = CAST(%s AS regclass) AND NOT tgisinternal",
        (table,),
    )
    if triggers[0][0]:
        raise RuntimeError(f"table {table} has triggers: a fresh copy would not carry them")
    await conn.execute(
        f"CREATE TABLE {fresh.name} (LIKE {table} INCLUDING DEFAULTS INCLUDING CONSTRAINTS"
        " INCLUDING STORAGE INCLUDING COMPRESSION)"
    )
    # The fill's joins hash in memory where they fit, for this statement only: with PostgreSQL's
    # default work_mem the join filling a fresh matches spilled to disk (docs/benchmarks.md, "Replay").
    (work_mem,) = (await _rows(conn, "SELECT current_setting('work_mem')", None))[0]
    await conn.execute("SET LOCAL work_mem = '256MB'")
    await conn.execute(f"INSERT INTO {fresh.name} {select}", params)
    await conn.execute("SELECT set_config('work_mem', %s, true)", (work_mem,))
    indexes = await _rows(
        conn,
        """
        SELECT ic.relname, pg_get_indexdef(i.indexrelid), c.contype
        FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid
        LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid AND c.conrelid = i.indrelid
                                  AND c.contype IN ('p', 'u')
        WHERE i.indrelid = CAST(%s AS regclass) ORDER BY ic.relname
        """,
        (table,),
    )
    for position, (index, definition, contype) in enumerate(indexes):
        match = _INDEX.match(definition)
        if match is None:
            raise RuntimeError(f"cannot copy index {index}: {definition}")
        temporary = f"{table}__fresh_{position}"
        await conn.execute(f"CREATE {match.group(1) or ''}INDEX {temporary} ON {fresh.name} {match.group(2)}")
        if contype is not None:
            kind = "PRIMARY KEY" if contype == "p" else "UNIQUE"
            await conn.execute(
                f"ALTER TABLE {fresh.name} ADD CONSTRAINT {temporary} {kind} USING INDEX {temporary}"
            )
        fresh.renames.append((temporary, index, contype is not None))
    for sequence, column in await _rows(
        conn,
        """
        SELECT CAST(CAST(s.oid AS regclass) AS text), a.attname FROM pg_depend d
        JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
        JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
        WHERE d.refobjid = CAST(%s AS regclass) AND d.deptype = 'a'
        """,
        (table,),
    ):
        await conn.execute(f"ALTER SEQUENCE {sequence} OWNED BY {fresh.name}.{column}")
    return fresh


async def swap_in(conn: psycopg.AsyncConnection[Any], tables: Sequence[Fresh]) -> None:
    """Put the fresh tables in place of theirs, with the old ones' foreign keys (both ways,
    under the same names) and their index and constraint names, and analyse them. `tables`
    lists a referenced table before the tables referencing it. A table a view depends on is
    refused (the transaction fails, and nothing changes)."""
    names = {fresh.table: fresh.name for fresh in tables}
    outside: list[tuple[str, str, str]] = []  # foreign keys into the tables from other tables
    for fresh in tables:
        for constraint, definition in await _rows(
            conn,
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint"
            " WHERE conrelid = CAST(%s AS regclass) AND contype = 'f' ORDER BY conname",
            (fresh.table,),
        ):
            target = _REFERENCES.search(definition)
            if target and target.group(1) in names:
                definition = _REFERENCES.sub(f"REFERENCES {names[target.group(1)]}(", definition, count=1)
            await conn.execute(f"ALTER TABLE {fresh.name} ADD CONSTRAINT {constraint} {definition}")
        outside += await _rows(
            conn,
            "SELECT CAST(CAST(conrelid AS regclass) AS text), conname, pg_get_constraintdef(oid)"
            " FROM pg_constraint WHERE confrelid = CAST(%s AS regclass) AND contype = 'f'"
            " AND NOT CAST(CAST(conrelid AS regclass) AS text) = ANY(%s)",
            (fresh.table, list(names)),
        )
    for table, constraint, _ in outside:
        await conn.execute(f"ALTER TABLE {table} DROP CONSTRAINT {constraint}")
    # From here to commit, readers of these tables wait.
    for fresh in reversed(tables):
        await conn.execute(f"DROP TABLE {fresh.table}")
    for fresh in tables:
        await conn.execute(f"ALTER TABLE {fresh.name} RENAME TO {fresh.table}")
        for temporary, original, constraint in fresh.renames:
            if constraint:
                await conn.execute(f"ALTER TABLE {fresh.table} RENAME CONSTRAINT {temporary} TO {original}")
            else:
                await conn.execute(f"ALTER INDEX {temporary} RENAME TO {original}")
    for table, constraint, definition in outside:
        await conn.execute(f"ALTER TABLE {table} ADD CONSTRAINT {constraint} {definition}")
    # The planner's first statistics of the new tables, from a small sample and without the
    # documents (a stored response) nobody filters on; autovacuum's analyse of the inserted
    # rows refines them later.
    await conn.execute("SET LOCAL default_statistics_target = 10")
    for fresh in tables:
        analysed = await columns_of(
            conn, fresh.table, "AND NOT atttypid IN (CAST('json' AS regtype), CAST('jsonb' AS regtype))"
        )
        await conn.execute(f"ANALYZE {fresh.table} ({', '.join(analysed)})")
