"""Schemathesis against openapi/openapi.json, over a live uvicorn process with a valid key.

At least 5,000 generated requests, spread over every operation: none may answer 5xx, and
every response must match the document (status declared, content type, body schema).

One test per operation and part, so pytest-xdist spreads them over its workers (each has its
own live server): one test over every operation took minutes alone and, under load, hit the
timeout. Each part sends its share of the operation's requests and checks it sent them all, so
the parts together send the plan's total (test_the_plan_sends_at_least_5000_requests).
"""

from __future__ import annotations

import math
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
SOAK = 4 if os.environ.get("SOAK") == "1" else 1
EXAMPLES_PER_OPERATION = 250 * SOAK
# A batch request carries 1 to 1,000 items (about 4 as generated), and Hypothesis takes about
# half a second to draw one (its regex strategies for ids): 40 batches hold over half as many
# generated matches or tickets as the 250 single posts, at a sixth of the time. Their parts
# are smaller (COST: drawing a batch request takes about ten times as long as a single one).
EXAMPLES = {
    "POST /v1/matches/batch": 40 * SOAK,
    "POST /v1/queues/{mode}/tickets/batch": 40 * SOAK,
}
COST = {"POST /v1/matches/batch": 10, "POST /v1/queues/{mode}/tickets/batch": 10}
# Requests per test at most, so that none takes a minute under load: DELETE
# /v1/players/{player_id} (an erasure visits every mode's queue, and the fuzzer's
# PUT /v1/modes/{mode} makes hundreds of modes) and POST /v1/matches's draws take up to about
# 0.3 s a request on a loaded machine.
PART = 100 * SOAK
AT_LEAST = 5000
# What the contract promises of every response. Schemathesis's "schema-valid data is
# accepted" is left out on purpose: rules JSON Schema cannot state (a match must have the
# mode's team shape, a player plays once per match, ranks...) make some schema-valid
# bodies a correct 4xx.
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]

OPERATIONS = {
    operation.label: operation
    for operation in (result.ok() for result in schemathesis.openapi.from_path(DOCUMENT).get_all_operations())
}


def planned(label: str) -> int:
    """Requests planned for an operation: one when it takes no input (Hypothesis has one case
    to draw), else its examples."""
    operation = OPERATIONS[label]
    takes_input = operation.path_parameters or operation.query or operation.headers or operation.body
    return EXAMPLES.get(label, EXAMPLES_PER_OPERATION) if takes_input else 1


def parts(label: str) -> list[int]:
    """Each part's requests: the operation's planned requests in near-equal shares of at most PART."""
    total = planned(label)
    count = math.ceil(total * COST.get(label, 1) / PART)
    return [total // count + (1 if n < total % count else 0) for n in range(count)]


PARTS = [
    pytest.param(label, share, id=f"{label} part {n + 1}/{len(shares)}")
    for label in OPERATIONS
    for shares in [parts(label)]
    for n, share in enumerate(shares)
]


def test_the_plan_sends_at_least_5000_requests_over_every_operation() -> None:
    assert len(OPERATIONS) >= 33
    assert {label for label, *_ in (p.values for p in PARTS)} == set(OPERATIONS)
    assert sum(share for _, share in (p.values for p in PARTS)) >= AT_LEAST


@pytest.mark.parametrize(("label", "requests"), PARTS)
def test_generated_requests_never_fail_and_always_match_the_schema(
    label: str, requests: int, live_server: str
) -> None:
    operation = OPERATIONS[label]
    headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
    statuses: Counter[int] = Counter()

    @given(case=operation.as_strategy())
    @settings(
        max_examples=requests,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def exercise(case: Case) -> None:
        response = case.call_and_validate(base_url=live_server, headers=headers, checks=CHECKS, timeout=30)
        statuses[response.status_code] += 1
        assert response.status_code < 500, (case.method, case.formatted_path, response.text)

    exercise()
    print(f"\nschemathesis {label}: {sum(statuses.values())} requests; statuses {dict(statuses)}")
    assert sum(statuses.values()) >= requests, (label, dict(statuses))
    assert not [s for s in statuses if s >= 500]
