"""The live clock: the scenario through HTTP against a running service, in real time.

The same population and behaviour as the virtual clock, played through the typed client
(app.client): each party queues a ticket (`create_ticket`, with its latencies, its players'
roles and their avoid list) and long-polls
it (`get_ticket(wait=)`); one lobby loop calls `matchmake` every interval (again at once while
it forms matches); the first ticket of each proposal hosts the match: it plays it out (the
match's length in real seconds), draws the outcome from the true skills and posts the result
(`post_match`, the proposal's id as match_id), and its teammates and opponents pause and queue
again once the result is in. Under the mode's ready check each party answers every proposal its
ticket is in (`accept_proposal`, or `decline_proposal` for its players who decline) before it is
played. A match a player leaves (sessions.leave_probability) is hosted as a game with its
backfill through the service's backfill calls (live_leaving.py), and a party a fill brings in
joins it. Every failed call is an error line of the run; at the end every
player's match count is read back from the leaderboard, and a match whose result the service
does not hold is a lost result. It is also the service's end-to-end soak.

The run gets a mode of its own (the scenario's mode name plus a fresh suffix) and players
named after it, so it never touches other data.
"""

from __future__ import annotations

import asyncio
import math
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx
import numpy as np
import numpy.typing as npt

from app.client import ApiError, AsyncClient
from app.matches.schemas import MatchPlayerOut
from app.queues.schemas import ProposalOut, TicketOut
from app.simulation.live_leaving import LiveGames
from app.simulation.loop import LoopState
from app.simulation.population import Population, Streams
from app.simulation.record import DECLINED, EXPIRED, LEFT_AT_END, MATCHED, Run
from app.simulation.scenario import Scenario
from app.simulation.truth import FIRST_WINS, SECOND_WINS, ranks, two_team_outcomes

Progress = Callable[[float], None]
# A long-poll asks for at most this many seconds (the service allows 60).
POLL_SECONDS = 20.0
# How long a match's players wait for its host beyond ten match lengths before giving up.
HOST_PATIENCE = 60.0


def read_ratings(url: str, key: str, mode: str) -> list[tuple[float, float]]:
    """Every (mu, sigma) on mode's leaderboard, for population.from_mode."""
    return asyncio.run(_read_ratings(url, key, mode))


async def _read_ratings(url: str, key: str, mode: str) -> list[tuple[float, float]]:
    found: list[tuple[float, float]] = []
    async with AsyncClient(url, key) as api:
        cursor: str | None = None
        while True:
            page = await api.get_leaderboard(mode, limit=500, cursor=cursor)
            found += [(entry.rating.mu, entry.rating.sigma) for entry in page.entries]
            cursor = page.next_cursor
            if cursor is None:
                return found


@dataclass(slots=True)
class Played:
    """A hosted match once its result is in (or failed to post)."""

    posted: bool


class LiveRun:
    def __init__(
        self, scenario: Scenario, population: Population, url: str, key: str, progress: Progress | None = None
    ) -> None:
        self.scenario, self.population, self.url, self.key = scenario, population, url, key
        self.progress = progress or (lambda _: None)
        token = secrets.token_hex(3)
        self.mode = f"{scenario.mode.name}-{token}"
        self.ids = [f"sim{token}-{number}" for number in range(len(population))]
        self.index = {player: number for number, player in enumerate(self.ids)}
        self.state = LoopState.of(scenario, population, Streams.of(scenario.seed))
        self.games = LiveGames(scenario, self.mode, self.ids, self.state, self.now, self.fail)
        # The ready check's proposals the players saw, and those that failed.
        self.proposals: set[str] = set()
        self.failed: set[str] = set()
        self.matches: dict[str, asyncio.Future[Played]] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.hosted = 0
        self.lost = 0
        self.started = 0.0
        self.arrivals_done = False

    def now(self) -> float:
        return time.monotonic() - self.started

    def fail(self, what: str, error: Exception) -> None:
        detail = str(error).splitlines()[0] if str(error) else error.__class__.__name__
        self.state.recorder.errors.append(f"{what}: {detail}")

    async def run(self) -> Run:
        wall = time.perf_counter()
        async with AsyncClient(self.url, self.key) as api:
            # Every rated player on the leaderboard, for the final check of lost results.
            await api.put_mode(self.mode, **{**self.scenario.mode.body, "min_matches_for_leaderboard": 0})
            await self._seed_ratings(api)
            self.started = time.monotonic()
            lobby = asyncio.create_task(self._lobby(api))
            await self._arrivals()
            while self.tasks:
                await asyncio.gather(*list(self.tasks))
            await lobby
            lost = await self._check(api)
        self.state.recorder.proposals, self.state.recorder.proposals_failed = (
            len(self.proposals),
            len(self.failed),
        )
        self.progress(1.0)
        return self.state.recorder.finish(
            "live",
            "quality",
            self.scenario.mode.teams,
            self.scenario.duration_seconds,
            time.perf_counter() - wall,
            self.state.columns,
            lost,
            self.state.roles.composition.roles if self.state.roles is not None else (),
        )

    async def _seed_ratings(self, api: AsyncClient) -> None:
        """Players of a population read from a mode start from their ratings there."""
        if self.scenario.population.from_mode is None:
            return
        gate = asyncio.Semaphore(16)

        async def seed(number: int) -> None:
            async with gate:
                await api.set_rating(
                    self.ids[number],
                    self.mode,
                    float(self.population.mu[number]),
                    float(self.population.sigma[number]),
                )

        await asyncio.gather(*(seed(number) for number in range(len(self.population))))

    async def _arrivals(self) -> None:
        duration = self.scenario.duration_seconds
        wanted = round(self.scenario.arrivals.initial_share * len(self.population))
        started = 0
        while started < wanted:
            came = self._arrive()
            if not came:
                break
            started += came
        moment = 0.0
        while True:
            moment = self.state.behaviour.next_arrival(moment)
            if not math.isfinite(moment):
                break
            await asyncio.sleep(max(0.0, moment - self.now()))
            self.progress(min(self.now() / duration, 1.0))
            self._arrive()
        await asyncio.sleep(max(0.0, duration - self.now()))
        self.arrivals_done = True

    def _arrive(self) -> int:
        players = self.state.arrive()
        if not players:
            return 0
        task = asyncio.create_task(self._session(players))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return len(players)

    async def _lobby(self, api: AsyncClient) -> None:
        """The lobby's matchmaking loop: again at once while it forms matches, else after the
        interval; it stops once the run is over and every session has ended."""
        interval = self.scenario.matchmaker.interval_seconds
        while not (self.arrivals_done and not self.tasks):
            try:
                made = await api.matchmake(self.mode, self.scenario.matchmaker.max_matches)
                formed = len(made.matches)
            except (ApiError, httpx.HTTPError) as exc:
                self.fail("matchmake", exc)
                formed = 0
            if not formed:
                await asyncio.sleep(interval)

    def _ticket_body(self, players: list[int]) -> dict[str, object]:
        body: dict[str, object] = {"players": [self.ids[p] for p in players]}
        if self.population.latency is not None:
            worst = self.population.latency[players].max(axis=0)
            body["latencies"] = {
                name: round(float(ms), 3)
                for name, ms in zip(self.population.regions, worst.tolist(), strict=True)
                if math.isfinite(ms)
            }
        if self.state.roles is not None:
            listed = self.state.roles.ticket(players)
            body["roles"] = {self.ids[p]: list(names) for p, names in zip(players, listed, strict=True)}
        if self.state.avoid:
            body["avoid"] = [self.ids[p] for p in self.state.avoid.of(players)]
        return body

    async def _session(self, players: list[int]) -> None:
        remaining = self.state.behaviour.session_matches()
        home = int(self.population.home[players[0]])
        skill = float(self.state.columns.skill[players].mean())
        first = (
            int(self.state.roles.first[players[0]])
            if self.state.roles is not None and len(players) == 1
            else -1
        )
        try:
            async with AsyncClient(self.url, self.key) as api:
                while remaining > 0 and self.now() < self.scenario.duration_seconds:
                    try:
                        ticket = await api.create_ticket(self.mode, self._ticket_body(players))
                    except (ApiError, httpx.HTTPError) as exc:
                        self.fail("create_ticket", exc)
                        return
                    queued_at = self.now()
                    before = float(self.state.columns.games[players].mean())
                    state, requeued_at, declined = await self._ready(api, ticket.ticket_id, players)
                    waited = self.now() - queued_at
                    if declined or state is None or state.status != "matched" or state.match is None:
                        outcome = (
                            DECLINED
                            if declined
                            else EXPIRED
                            if state is not None and state.status == "expired"
                            else LEFT_AT_END
                        )
                        self.state.recorder.ticket(
                            queued_at, waited, outcome, len(players), skill, before, home, first
                        )
                        self._requeued(requeued_at, outcome)
                        return
                    proposal = state.match
                    seated = -1
                    if first >= 0 and self.state.roles is not None and proposal.roles is not None:
                        seated = self.state.roles.index(proposal.roles[self.ids[players[0]]])
                    self.state.recorder.ticket(
                        queued_at, waited, MATCHED, len(players), skill, before, home, first, seated
                    )
                    self._requeued(requeued_at, MATCHED)
                    match_id = proposal.proposal_id
                    if proposal.kind == "backfill":
                        # A fill: the party joins a game a player left, and waits for its result.
                        joined = self.games.join(proposal, players)
                        if joined is None:
                            continue  # the game was over: the party queues again
                        match_id = joined.proposal_id
                    played = self.matches.setdefault(match_id, asyncio.get_running_loop().create_future())
                    if proposal.kind == "match" and proposal.ticket_ids[0] == ticket.ticket_id:
                        await self._host(api, proposal, played)
                    result = await self._result(match_id, played)
                    # Players who left the game: their session is over (offline once it ended).
                    gone = [p for p in players if p in self.games.left]
                    self.games.left.difference_update(gone)
                    players[:] = [p for p in players if p not in gone]
                    if not result or not players:
                        return
                    remaining -= 1
                    if remaining > 0:
                        await asyncio.sleep(self.state.behaviour.pause())
        finally:
            self.state.offline.put_back(players)

    async def _result(self, proposal_id: str, played: asyncio.Future[Played]) -> bool:
        """Whether the match was played out; a host never heard from (its own poll failed) is an
        error and a lost result, once, and its players leave."""
        patience = HOST_PATIENCE + 10 * self.scenario.sessions.match_seconds
        try:
            await asyncio.wait_for(asyncio.shield(played), patience)
        except TimeoutError:
            if not played.done():
                played.set_result(Played(False))
                self.lost += 1
                self.state.recorder.errors.append(f"match {proposal_id}: its host never played it")
            return False
        return True

    def _requeued(self, requeued_at: float | None, outcome: int) -> None:
        """A ticket a failed ready check put back in the queue leaves it: its extra wait."""
        if requeued_at is not None:
            self.state.recorder.requeued(
                np.array([self.now() - requeued_at]), np.array([outcome], dtype=np.int64)
            )

    async def _ready(
        self, api: AsyncClient, ticket_id: str, players: list[int]
    ) -> tuple[TicketOut | None, float | None, bool]:
        """The ticket once it leaves the queue for good: matched in an accepted proposal,
        expired, or cancelled at the run's end (None after a failed call). Under the
        ready check, the party answers each proposal its ticket is in as soon as it sees it
        (each player declining with sessions.decline_probability, the party's decliners in one
        call, else all accepting in one); a proposal that fails puts the ticket back in the
        queue with its wait, and the poll goes on. Also when it was first put back (None:
        never), and whether the party declined (its ticket then cancelled, its session over)."""
        chance = self.scenario.sessions.decline_probability
        answered: str | None = None
        requeued_at: float | None = None
        seen = "queued"
        while True:
            # A ticket a failed proposal put back reads `queued`, which _wait polls through; each
            # poll says where the ticket was last seen, so a proposal formed since answers it.
            state = await self._wait(api, ticket_id, seen)
            if state is None or state.status != "matched" or state.match is None:
                # Cancelled by a failed ready check (a party that had not answered yet when
                # another declined), unless the run's end cancelled it: as a decline.
                by_check = (
                    state is not None
                    and state.status == "cancelled"
                    and answered is not None
                    and self.now() < self.scenario.duration_seconds
                )
                if state is not None and answered is not None and requeued_at is None and not by_check:
                    requeued_at = self.now()  # the answered proposal failed, then the ticket left
                return state, requeued_at, by_check
            proposal = state.match
            self.proposals.add(proposal.proposal_id)
            if answered is not None and proposal.proposal_id != answered and requeued_at is None:
                requeued_at = self.now()  # the answered proposal failed and the ticket rematched
            if proposal.state == "accepted":
                return state, requeued_at, False
            if proposal.state != "pending":
                # A proposal's failure moves its tickets on in the same step, so the service
                # never reads one matched in it; should a server do so: look again shortly.
                self.failed.add(proposal.proposal_id)
                await asyncio.sleep(0.1)
                continue
            seen = proposal.proposal_id
            if proposal.proposal_id == answered:
                continue
            answered = proposal.proposal_id
            ids = [self.ids[p] for p in players]
            declining = [player for player in ids if self.state.answers.random() < chance]
            try:
                if declining:
                    self.failed.add(proposal.proposal_id)
                    await api.decline_proposal(self.mode, proposal.proposal_id, declining)
                    return state, requeued_at, True
                await api.accept_proposal(self.mode, proposal.proposal_id, ids)
            except ApiError as exc:
                if exc.status != 409:
                    self.fail("decline_proposal" if declining else "accept_proposal", exc)
                    return None, requeued_at, False
                # Another player declined first: the proposal failed before this answer, and
                # (not having answered) this party's ticket was cancelled with the decliners'.
                self.failed.add(proposal.proposal_id)
                if declining:
                    return state, requeued_at, True
            except httpx.HTTPError as exc:
                self.fail("decline_proposal" if declining else "accept_proposal", exc)
                return None, requeued_at, False

    async def _wait(self, api: AsyncClient, ticket_id: str, seen: str) -> TicketOut | None:
        """The ticket once it leaves `queued` and where it was `seen` last (queued, or a pending
        proposal's id); past the run's end a queued ticket is cancelled."""
        cancelled = False
        while True:
            left = self.scenario.duration_seconds - self.now()
            try:
                if left <= 0 and not cancelled:
                    cancelled = True
                    try:
                        await api.cancel_ticket(self.mode, ticket_id)
                    except ApiError as exc:
                        if exc.status != 409:  # 409: matched meanwhile, which the poll shows
                            raise
                state = await api.get_ticket(
                    self.mode,
                    ticket_id,
                    wait=max(0.5, min(POLL_SECONDS, left)) if left > 0 else 0.5,
                    seen=seen,
                )
            except (ApiError, httpx.HTTPError) as exc:
                self.fail("get_ticket", exc)
                return None
            if state.status != "queued":
                return state
            seen = "queued"

    async def _host(self, api: AsyncClient, proposal: ProposalOut, played: asyncio.Future[Played]) -> None:
        """Play the match out and post its result; its players learn of it through `played`."""
        formed = self.now()
        teams = [[self.index[player] for player in team] for team in proposal.teams]
        shares = self.games.shares(sum(len(team) for team in teams))
        if shares is not None:
            # A player will leave: played as a game with its backfill (live_leaving.py).
            try:
                await self.games.host(api, proposal, shares, self.state.behaviour.match_length())
            except (ApiError, httpx.HTTPError) as exc:
                self.fail("post_match", exc)
                self.lost += 1
                played.set_result(Played(False))
                return
            played.set_result(Played(True))
            return
        truth = self.scenario.truth
        skills = np.array([[self.state.columns.skill[team].sum() for team in teams]])
        # Every team of a match has one size, the mode's or, once it may shrink, smaller.
        size = len(teams[0])
        if len(teams) == 2:
            outcome = int(
                two_team_outcomes(
                    self.state.outcomes,
                    skills[:, 0],
                    skills[:, 1],
                    size,
                    truth.beta,
                    truth.draw_probability,
                )[0]
            )
            placed = np.array(
                [[2.0 if outcome == SECOND_WINS else 1.0, 2.0 if outcome == FIRST_WINS else 1.0]]
            )
        else:
            placed = ranks(self.state.outcomes, skills, size, truth.beta, truth.draw_probability)
            outcome = -1
        await asyncio.sleep(self.state.behaviour.match_length())
        body = {
            "match_id": proposal.proposal_id,
            "mode": self.mode,
            "teams": [
                {"players": [{"id": self.ids[p]} for p in team], "rank": float(rank)}
                for team, rank in zip(teams, placed[0].tolist(), strict=True)
            ],
        }
        try:
            result = await api.post_match(body)
        except (ApiError, httpx.HTTPError) as exc:
            self.fail("post_match", exc)
            self.lost += 1
            played.set_result(Played(False))
            return
        self._rated(teams, placed, outcome, proposal, result.players, formed)
        played.set_result(Played(True))

    def _rated(
        self,
        teams: list[list[int]],
        placed: npt.NDArray[np.float64],
        outcome: int,
        proposal: ProposalOut,
        players: list[MatchPlayerOut],
        formed: float,
    ) -> None:
        """Mirror the service's new ratings and tally the match (the virtual clock's tally, for a
        batch of one match)."""
        before = {self.index[p.player_id]: p.before for p in players}
        after = {self.index[p.player_id]: p.after for p in players}
        members = np.array(teams, dtype=np.int64)
        tallied = self.state.tally(
            members[None],
            placed,
            np.array([outcome], dtype=np.int64),
            np.array([[[before[p].mu for p in team] for team in teams]]),
            np.array([[[before[p].sigma for p in team] for team in teams]]),
            np.array([formed]),
            np.array([proposal.quality]),
            [proposal.region],
        )
        flat = members.ravel()
        self.state.seen(
            flat,
            np.array([after[p].mu for p in flat.tolist()]),
            np.array([after[p].sigma for p in flat.tolist()]),
            tallied.elo[0].ravel(),
            tallied.score[0].ravel(),
        )

    async def _check(self, api: AsyncClient) -> int:
        """Lost results: matches whose post failed, and any player whose match count on the
        service's leaderboard differs from the matches posted for them."""
        held: dict[str, int] = {}
        cursor: str | None = None
        try:
            while True:
                page = await api.get_leaderboard(self.mode, limit=500, cursor=cursor)
                held.update((entry.player_id, entry.matches) for entry in page.entries)
                cursor = page.next_cursor
                if cursor is None:
                    break
        except (ApiError, httpx.HTTPError) as exc:
            self.fail("get_leaderboard", exc)
            return self.lost
        differ = [
            (player, int(ours), held.get(player, 0))
            for player, ours in zip(self.ids, self.state.columns.games.tolist(), strict=True)
            if held.get(player, 0) != ours
        ]
        for player, ours, theirs in differ[:10]:
            self.state.recorder.errors.append(
                f"player {player}: {ours} matches posted, the service holds {theirs}"
            )
        missing = sum(max(0, ours - theirs) for _, ours, theirs in differ)
        # Games missing, in matches: at the fewest players a match may have (a mode's matches
        # may shrink), so a lost match is never undercounted.
        return self.lost + math.ceil(missing / self.scenario.mode.shape.minimum)


def run_live(
    scenario: Scenario, population: Population, url: str, key: str, progress: Progress | None = None
) -> Run:
    """One run of the scenario through the service at `url`, in real time."""
    return asyncio.run(LiveRun(scenario, population, url, key, progress).run())
