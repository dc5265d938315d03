"""One writer of a matchmaking call's proposals (app/queues/proposals.py), matches and fills."""

from __future__ import annotations

import datetime as dt
import json

from app.queues.proposals import Filling, ProposalWriter
from app.queues.schemas import ProposalOut
from app.queues.store import ProposalClaim


def test_a_match_is_written_as_the_schema_reads_it_and_kept_for_the_answer() -> None:
    write = ProposalWriter("accepted", None)
    claim = ProposalClaim([[0], [1]], 0.75, 12.5, "eu")
    body = write("p" * 32, claim, ["t1", "t2"], [["ann"], ["bea"]], None)
    read = ProposalOut.model_validate_json(body)
    assert read == write.written["p" * 32]
    assert json.loads(body) == {
        "proposal_id": "p" * 32,
        "state": "accepted",
        "deadline": None,
        "teams": [["ann"], ["bea"]],
        "ticket_ids": ["t1", "t2"],
        "quality": 0.75,
        "longest_wait_s": 12.5,
        "region": "eu",
        "roles": None,
        "kind": "match",
        "backfill_id": None,
    }


def test_a_fill_lists_its_whole_roster_and_shares_the_calls_state_and_deadline() -> None:
    deadline = 1_800_000_000.0
    write = ProposalWriter("pending", deadline, {"f" * 32: Filling("b" * 32, [["ann", "bea"], ["cat"]])})
    claim = ProposalClaim([[], [3]], 0.5, 4.0)
    fill = ProposalOut.model_validate_json(write("f" * 32, claim, ["t4"], [[], ["dan"]], None))
    match = ProposalOut.model_validate_json(write("m" * 32, claim, ["t5"], [["eve"], ["fay"]], None))
    assert (fill.kind, fill.backfill_id) == ("backfill", "b" * 32)
    assert fill.teams == [["ann", "bea"], ["cat", "dan"]]
    assert (match.kind, match.backfill_id, match.teams) == ("match", None, [["eve"], ["fay"]])
    for proposal in (fill, match):
        assert proposal.state == "pending"
        assert proposal.deadline == dt.datetime.fromtimestamp(deadline, dt.UTC)
    assert [p.proposal_id for p in write.claimed([(1, "m" * 32), (0, "f" * 32)])] == ["m" * 32, "f" * 32]
