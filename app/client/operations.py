"""Every operation of the HTTP API, described once for both clients.

Each method builds the request of one route of openapi/openapi.json (its decorator names the
route); `Client` sends it and returns the decoded answer, `AsyncClient` returns an awaitable
of it. Errors raise ApiError carrying the problem+json.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

import httpx

from app.auth.schemas import KeyCreated, KeyInfo, KeyList
from app.client.calls import Request, body, model, no_content, operation
from app.jobs.schemas import JobAccepted, JobOut
from app.leaderboards.schemas import LeaderboardPage, Standing, TierCounts
from app.lobbies.schemas import BalanceIn, BalanceOut, EvaluateIn, EvaluateOut
from app.matches.schemas import BatchOut, MatchIn, MatchOut
from app.modes.schemas import ModeChanged, ModeDetail, ModeList, ModeOut, Reset
from app.players.schemas import LearningCurve, PlayerMatches, PlayerOut
from app.queues.schemas import (
    BackfillIn,
    BackfillOut,
    BackfillUpdate,
    MatchmakeOut,
    ProposalDetail,
    QueueStatistics,
    QueueStats,
    RequeueOut,
    TicketBatchOut,
    TicketCreated,
    TicketIn,
    TicketOut,
)
from app.schemas import Health, Readiness


def _modes(response: httpx.Response) -> list[ModeOut]:
    return ModeList.model_validate_json(response.content).modes


def _keys(response: httpx.Response) -> list[KeyInfo]:
    return KeyList.model_validate_json(response.content).keys


def _text(response: httpx.Response) -> str:
    return response.text


class Operations:
    """The API's operations; Client and AsyncClient inherit them."""

    # --- matches (results:write posts, read reads, admin voids) ---

    # Repeatable: the service applies each match_id once and answers a repeat with 200 and
    # the stored result, so a post whose answer was lost is safe to send again.
    @operation("POST", "/v1/matches", model(MatchOut), repeatable=True)
    def post_match(self, match: MatchIn | dict[str, Any]) -> Request[MatchOut]:
        """Rate a finished match, exactly once per match_id (`created` is false on a repeat)."""
        return Request(json=body(match))

    # Repeatable for the same reason: each item of a repeat answers 200 (or its 409/422) again.
    @operation("POST", "/v1/matches/batch", model(BatchOut), repeatable=True)
    def post_matches_batch(self, matches: Iterable[MatchIn | dict[str, Any]]) -> Request[BatchOut]:
        """Rate up to 1,000 matches in one transaction, in order; each item has its own
        status (201, 200, 409 or 422) with the match or the problem."""
        return Request(json={"matches": [body(match) for match in matches]})

    @operation("GET", "/v1/matches/{match_id}", model(MatchOut))
    def get_match(self, match_id: str) -> Request[MatchOut]:
        """The stored result of a match."""
        return Request({"match_id": match_id})

    # Repeatable: voiding a void match answers as the first void did.
    @operation("POST", "/v1/matches/{match_id}/void", model(MatchOut), repeatable=True)
    def void_match(self, match_id: str) -> Request[MatchOut]:
        """Mark a match void (admin); the next replay job corrects the ratings."""
        return Request({"match_id": match_id})

    # --- players (read; rating overrides are admin) ---

    @operation("GET", "/v1/players/{player_id}", model(PlayerOut))
    def get_player(self, player_id: str) -> Request[PlayerOut]:
        """A player's rating and counters in every mode."""
        return Request({"player_id": player_id})

    @operation("GET", "/v1/players/{player_id}/matches", model(PlayerMatches))
    def player_matches(
        self, player_id: str, mode: str | None = None, limit: int = 50, cursor: str | None = None
    ) -> Request[PlayerMatches]:
        """The player's matches, most recent first; pass `next_cursor` back for the next page."""
        return Request({"player_id": player_id}, {"mode": mode, "limit": limit, "cursor": cursor})

    @operation("GET", "/v1/players/{player_id}/learning-curve", model(LearningCurve))
    def get_learning_curve(self, player_id: str, mode: str | None = None) -> Request[LearningCurve]:
        """Online ratings after each match, and the last smooth job's curve; without `mode`, in
        the only mode the player is rated in (ApiError 422 naming them when several)."""
        return Request({"player_id": player_id}, {"mode": mode})

    @operation("PUT", "/v1/players/{player_id}/ratings/{mode}", model(PlayerOut))
    def set_rating(self, player_id: str, mode: str, mu: float, sigma: float) -> Request[PlayerOut]:
        """Seed or override a rating (admin)."""
        return Request({"player_id": player_id, "mode": mode}, json={"mu": mu, "sigma": sigma})

    @operation("DELETE", "/v1/players/{player_id}", no_content)
    def delete_player(self, player_id: str) -> Request[None]:
        """Erase a player (admin): ratings, curves and tickets go, history names a pseudonym."""
        return Request({"player_id": player_id})

    # --- modes (read; writes are admin) ---

    @operation("GET", "/v1/modes", _modes)
    def list_modes(self) -> Request[list[ModeOut]]:
        """Every mode with its parameters."""
        return Request()

    @operation("GET", "/v1/modes/{mode}", model(ModeDetail))
    def get_mode(self, name: str) -> Request[ModeDetail]:
        """One mode, with its current season and the past ones."""
        return Request({"mode": name})

    @operation("GET", "/v1/modes/{mode}/tiers", model(TierCounts))
    def get_tier_counts(self, mode: str) -> Request[TierCounts]:
        """How many ranked players each of the mode's tiers holds, lowest first."""
        return Request({"mode": mode})

    @operation("PUT", "/v1/modes/{mode}", model(ModeChanged))
    def put_mode(self, /, name: str, **params: Any) -> Request[ModeChanged]:
        """Create a mode or change some of its parameters (admin); `replay_recommended` says
        when stored ratings now differ from what the parameters would give, and `retier_job`
        names the job re-tiering the mode after a change of its tier settings, and re-scoring
        its leaderboard after a change of conservative_k or drift_per_day."""
        return Request({"mode": name}, json=params)

    # --- lobbies (matchmaking); pure computations, so repeatable ---

    @operation("POST", "/v1/lobbies/evaluate", model(EvaluateOut), repeatable=True)
    def evaluate_lobby(self, lobby: EvaluateIn | dict[str, Any]) -> Request[EvaluateOut]:
        """Draw quality and win probabilities of a proposed lobby."""
        return Request(json=body(lobby))

    @operation("POST", "/v1/lobbies/balance", model(BalanceOut), repeatable=True)
    def balance_lobby(self, lobby: BalanceIn | dict[str, Any]) -> Request[BalanceOut]:
        """The fairest split of players into teams, parties kept together."""
        return Request(json=body(lobby))

    # --- the matchmaking queue (matchmaking) ---
    # Enqueueing and matchmaking are not repeatable: a lost answer may hide a queued ticket
    # or claimed matches, which a second send would not return.

    @operation("POST", "/v1/queues/{mode}/tickets", model(TicketCreated), repeatable=False)
    def create_ticket(self, mode: str, ticket: TicketIn | dict[str, Any]) -> Request[TicketCreated]:
        """Queue a player or a party (409 while one of them holds an active ticket)."""
        return Request({"mode": mode}, json=body(ticket))

    @operation("POST", "/v1/queues/{mode}/tickets/batch", model(TicketBatchOut), repeatable=False)
    def create_tickets(
        self, mode: str, tickets: Iterable[TicketIn | dict[str, Any]]
    ) -> Request[TicketBatchOut]:
        """Queue up to 1,000 tickets; each has its own outcome (queued or rejected)."""
        return Request({"mode": mode}, json={"tickets": [body(ticket) for ticket in tickets]})

    @operation("GET", "/v1/queues/{mode}/tickets/{ticket_id}", model(TicketOut))
    def get_ticket(
        self, mode: str, ticket_id: str, wait: float | None = None, seen: str | None = None
    ) -> Request[TicketOut]:
        """A ticket's status and, once matched, its match. With `wait` (seconds, at most 60) a
        long-poll: answered as soon as the ticket moves on from `seen` ("queued", or the id of
        the pending proposal it was last seen in; by default where it stands when the poll
        starts), or after `wait` as it is."""
        if wait is None:
            return Request({"mode": mode, "ticket_id": ticket_id})
        query: dict[str, Any] = {"wait": wait} if seen is None else {"wait": wait, "seen": seen}
        # The HTTP timeout covers the wait plus the answer's way back.
        return Request({"mode": mode, "ticket_id": ticket_id}, query, timeout=wait + 10.0)

    @operation("GET", "/v1/queues/{mode}/players/{player_id}/ticket", model(TicketOut))
    def get_player_ticket(self, mode: str, player_id: str) -> Request[TicketOut]:
        """The player's active ticket (queued, or matched in a proposal that stands); 404 if none."""
        return Request({"mode": mode, "player_id": player_id})

    @operation(
        "POST", "/v1/queues/{mode}/proposals/{proposal_id}/requeue", model(RequeueOut), repeatable=False
    )
    def requeue_proposal(
        self, mode: str, proposal_id: str, cancel: Sequence[str] = ()
    ) -> Request[RequeueOut]:
        """A proposal fell through: cancel the listed tickets, put the others back with their
        original wait (409 when already requeued, so a lost answer is not resent)."""
        return Request({"mode": mode, "proposal_id": proposal_id}, json={"cancel": list(cancel)})

    @operation("GET", "/v1/queues/{mode}/proposals/{proposal_id}", model(ProposalDetail))
    def get_proposal(self, mode: str, proposal_id: str) -> Request[ProposalDetail]:
        """A proposal: its state (pending, accepted or failed), its ready check's deadline and
        each player's answer so far."""
        return Request({"mode": mode, "proposal_id": proposal_id})

    # Repeatable: the same answer again is 200 with the proposal as it stands.
    @operation(
        "POST", "/v1/queues/{mode}/proposals/{proposal_id}/accept", model(ProposalDetail), repeatable=True
    )
    def accept_proposal(self, mode: str, proposal_id: str, players: Sequence[str]) -> Request[ProposalDetail]:
        """The players accept the proposal (accepted once everyone has; 409 if it settled otherwise
        for one of them)."""
        return Request({"mode": mode, "proposal_id": proposal_id}, json={"players": list(players)})

    @operation(
        "POST", "/v1/queues/{mode}/proposals/{proposal_id}/decline", model(ProposalDetail), repeatable=True
    )
    def decline_proposal(
        self, mode: str, proposal_id: str, players: Sequence[str]
    ) -> Request[ProposalDetail]:
        """The players decline the proposal: it fails, their tickets are cancelled and the others
        queue again with their wait (409 if it settled otherwise for one of them)."""
        return Request({"mode": mode, "proposal_id": proposal_id}, json={"players": list(players)})

    @operation("DELETE", "/v1/queues/{mode}/tickets/{ticket_id}", no_content)
    def cancel_ticket(self, mode: str, ticket_id: str) -> Request[None]:
        """Leave the queue (409 once matched)."""
        return Request({"mode": mode, "ticket_id": ticket_id})

    @operation("POST", "/v1/queues/{mode}/matchmake", model(MatchmakeOut), repeatable=False)
    def matchmake(self, mode: str, max_matches: int | None = None) -> Request[MatchmakeOut]:
        """Fill backfills, then form matches, best draw quality first, and claim them: up to
        `max_matches` proposals in all (default: the service's), fills first."""
        return Request({"mode": mode}, json=None if max_matches is None else {"max_matches": max_matches})

    # Creating a backfill is not repeatable: a lost answer hides the backfill's id.
    @operation("POST", "/v1/queues/{mode}/backfills", model(BackfillOut), repeatable=False)
    def create_backfill(self, mode: str, backfill: BackfillIn | dict[str, Any]) -> Request[BackfillOut]:
        """A game whose open slots the queue fills, before it forms new matches (409 when a player
        is on another backfill's roster or holds an active ticket)."""
        return Request({"mode": mode}, json=body(backfill))

    @operation("GET", "/v1/queues/{mode}/backfills/{backfill_id}", model(BackfillOut))
    def get_backfill(self, mode: str, backfill_id: str, wait: float | None = None) -> Request[BackfillOut]:
        """A backfill: its roster, pending players, open slots and version. With `wait` (seconds,
        at most 60) a long-poll: answered as soon as its version moves on (a fill, a new roster),
        or after `wait` as it is."""
        if wait is None:
            return Request({"mode": mode, "backfill_id": backfill_id})
        return Request({"mode": mode, "backfill_id": backfill_id}, {"wait": wait}, timeout=wait + 10.0)

    # Repeatable: the same roster again only raises the version.
    @operation("PUT", "/v1/queues/{mode}/backfills/{backfill_id}", model(BackfillOut), repeatable=True)
    def replace_backfill(
        self, mode: str, backfill_id: str, roster: BackfillUpdate | dict[str, Any]
    ) -> Request[BackfillOut]:
        """A new roster (players left or joined); with its `version`, 409 when the backfill moved on."""
        return Request({"mode": mode, "backfill_id": backfill_id}, json=body(roster))

    @operation("DELETE", "/v1/queues/{mode}/backfills/{backfill_id}", no_content)
    def delete_backfill(self, mode: str, backfill_id: str) -> Request[None]:
        """The game ended or is full: no more fills."""
        return Request({"mode": mode, "backfill_id": backfill_id})

    @operation("GET", "/v1/queues/{mode}/stats", model(QueueStatistics))
    def queue_statistics(self, mode: str) -> Request[QueueStatistics]:
        """Tickets and players waiting by region; matches, wait and quality percentiles over the
        last 1, 5 and 15 minutes."""
        return Request({"mode": mode})

    @operation("GET", "/v1/queues/{mode}", model(QueueStats))
    def queue_stats(self, mode: str) -> Request[QueueStats]:
        """Waiting tickets and players, and the longest wait."""
        return Request({"mode": mode})

    # --- leaderboards (read) ---

    @operation("GET", "/v1/leaderboards/{mode}", model(LeaderboardPage))
    def get_leaderboard(
        self,
        mode: str,
        limit: int = 50,
        cursor: str | None = None,
        season: str | None = None,
        tier: str | None = None,
    ) -> Request[LeaderboardPage]:
        """A page of the leaderboard (of an ended `season`: as it stood at the switch; of one
        `tier`: ranked within it); pass `next_cursor` back for the next page."""
        return Request({"mode": mode}, {"limit": limit, "cursor": cursor, "season": season, "tier": tier})

    @operation("GET", "/v1/leaderboards/{mode}/players/{player_id}", model(Standing))
    def get_leaderboard_standing(
        self, mode: str, player_id: str, around: int = 5, season: str | None = None
    ) -> Request[Standing]:
        """A player's exact rank, percentile and `around` neighbours each side (in an ended
        `season`: as they stood at the switch)."""
        return Request({"mode": mode, "player_id": player_id}, {"around": around, "season": season})

    # --- history jobs (admin submits, read follows) ---

    @operation("POST", "/v1/modes/{mode}/jobs", model(JobAccepted), repeatable=False)
    def submit_job(
        self, /, mode: str, kind: Literal["replay", "smooth"] = "replay", **options: Any
    ) -> Request[JobAccepted]:
        """Queue a `replay` or a `smooth` job (options: gamma, sigma, iterations, epsilon)."""
        return Request({"mode": mode}, json={"kind": kind, **options})

    @operation("POST", "/v1/modes/{mode}/seasons", model(JobAccepted), repeatable=False)
    def start_season(self, /, mode: str, name: str, reset: Reset, **factors: float) -> Request[JobAccepted]:
        """Archive the current season and start `name` with a `hard`, `soft` (factors: pull,
        widen) or `none` reset (admin); follow the job with get_job."""
        return Request({"mode": mode}, json={"name": name, "reset": reset, **factors})

    @operation("POST", "/v1/jobs/{job_id}/retry", model(JobAccepted), repeatable=False)
    def retry_job(self, job_id: str) -> Request[JobAccepted]:
        """Queue a failed job again, as a new job (admin); follow it with get_job."""
        return Request({"job_id": job_id})

    @operation("GET", "/v1/jobs/{job_id}", model(JobOut))
    def get_job(self, job_id: str) -> Request[JobOut]:
        """A job's status, progress and result or failure."""
        return Request({"job_id": job_id})

    # --- API keys (admin) ---

    @operation("POST", "/v1/keys", model(KeyCreated), repeatable=False)
    def create_key(
        self, name: str, scopes: Sequence[str], modes: Sequence[str] | None = None
    ) -> Request[KeyCreated]:
        """A new key, for every mode or only `modes` (names, and prefixes ending in `*`); its
        secret is in this answer only."""
        return Request(
            json={"name": name, "scopes": list(scopes), "modes": None if modes is None else list(modes)}
        )

    @operation("GET", "/v1/keys", _keys)
    def list_keys(self) -> Request[list[KeyInfo]]:
        """Every key (for an admin key limited to modes, the keys within them), without secrets."""
        return Request()

    @operation("DELETE", "/v1/keys/{key_id}", no_content)
    def revoke_key(self, key_id: str) -> Request[None]:
        """Revoke a key; it stops working at once."""
        return Request({"key_id": key_id})

    # --- operations (no key needed) ---

    @operation("GET", "/healthz", model(Health))
    def healthz(self) -> Request[Health]:
        """200 while the process lives."""
        return Request()

    @operation("GET", "/readyz", model(Readiness))
    def readyz(self) -> Request[Readiness]:
        """PostgreSQL and Redis both answer (ApiError 503 naming the one that does not)."""
        return Request()

    @operation("GET", "/metrics", _text)
    def metrics(self) -> Request[str]:
        """The Prometheus text exposition."""
        return Request()
