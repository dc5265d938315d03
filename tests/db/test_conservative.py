"""mu − k·sigma is written by SQL and answered by Python: the two must agree to the bit."""

from __future__ import annotations

import psycopg

from app.db.conservative import conservative_sql
from app.rating import conservative

# Values whose products round: a differently ordered or fused expression would differ.
CASES = [
    (25.0, 25.0 / 3.0, 3.0),
    (31.41592653589793, 2.718281828459045, 1.5),
    (-7.1e-3, 1e-12, 100.0),
    (1e15, 1e15, 0.3),
    (0.1, 0.2, 0.0),
]


def test_sql_and_python_agree_to_the_bit(database_url: str) -> None:
    # k from the joined mode row `m`, as every statement that writes the column takes it.
    expression = conservative_sql("CAST(%(mu)s AS float8)", "CAST(%(sigma)s AS float8)")
    sql = f"SELECT {expression} FROM (VALUES (CAST(%(k)s AS float8))) AS m(conservative_k)"
    with psycopg.connect(database_url) as conn:
        for mu, sigma, k in CASES:
            stored = conn.execute(sql, {"mu": mu, "sigma": sigma, "k": k}).fetchone()
            assert stored is not None
            assert stored[0] == conservative(mu, sigma, k), (mu, sigma, k)
