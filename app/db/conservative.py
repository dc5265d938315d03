"""The SQL of `conservative`, mu − k·sigma: every statement that writes the column renders it here.

Its Python twin is app.rating.conservative; tests/db/test_conservative.py checks that the
two agree to the bit, so a rating written by SQL equals the one an answer computes."""

from __future__ import annotations


def conservative_sql(mu: str, sigma: str, k: str = "m.conservative_k") -> str:
    """The expression over three SQL operands (columns, casts or placeholders); k is by
    default the column of the `modes` row the statement joins as `m`."""
    return f"({mu} - {k} * {sigma})"
