"""Schemathesis against openapi/openapi.json, over a live uvicorn process with a valid key.

At least 5,000 generated requests, spread over every operation: none may answer 5xx, and
every response must match the document (status declared, content type, body schema).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import Case
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.conftest import ADMIN_KEY

pytestmark = pytest.mark.reliability
DOCUMENT = Path(__file__).resolve().parents[2] / "openapi" / "openapi.json"
# `make soak` (SOAK=1) sends four times as many.
EXAMPLES_PER_OPERATION = 1000 if os.environ.get("SOAK") == "1" else 250
AT_LEAST = 5000
# What the contract promises of every response. Schemathesis's "schema-valid data is
# accepted" is left out on purpose: rules JSON Schema cannot state (a match must have the
# mode's team shape, a player plays once per match, ranks...) make some schema-valid
# bodies a correct 4xx.
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def test_generated_requests_never_fail_and_always_match_the_schema(live_server: str) -> None:
    schema = schemathesis.openapi.from_path(DOCUMENT)
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    sent: Counter[str] = Counter()
    statuses: Counter[int] = Counter()
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 27

    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def exercise(case: Case) -> None:
            response = case.call_and_validate(
                base_url=live_server, headers=headers, checks=CHECKS, timeout=30
            )
            sent[case.operation.label] += 1
            statuses[response.status_code] += 1
            assert response.status_code < 500, (case.method, case.formatted_path, response.text)

        exercise()

    print(
        f"\nschemathesis: {sum(sent.values())} requests over {len(sent)} operations; "
        f"statuses {dict(statuses)}"
    )
    assert {op.label for op in operations} <= set(sent)
    assert sum(sent.values()) >= AT_LEAST, (sum(sent.values()), sent)
    assert not [s for s in statuses if s >= 500]
