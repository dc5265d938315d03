"""Leaving and backfill on the live clock: games a player leaves, through the service's backfills.

The host of a match a player will leave (Leaving.draw, as on the virtual clock) plays it as a
`leaving.Game` in real time. At each leave it takes the player off the game's backfill, as a
lobby does: `create_backfill` at the first (the players still seated, the match's region),
then `get_backfill` and `replace_backfill` with the version read, so a fill that landed
meanwhile is kept. The queue's matchmaking fills it; each filling party's session sees its
ticket matched in a proposal of kind "backfill", joins the game (`join`) and waits for its
result with the match's players. At the end the host deletes the backfill and posts the result
with every player's partial play (`weight`), drawn from the same partial play.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
import numpy as np
import numpy.typing as npt

from app.client import ApiError, AsyncClient
from app.matches.schemas import MatchOut
from app.queues.schemas import MAX_BACKFILL_TTL_S, ProposalOut
from app.simulation.leaving import Game, Seat, leave_moment, share_left
from app.simulation.loop import LoopState
from app.simulation.scenario import Scenario
from app.simulation.truth import DRAW, FIRST_WINS, SECOND_WINS, partial_places

FloatArray = npt.NDArray[np.float64]


@dataclass(slots=True)
class LiveGame:
    """A game in play on the live clock: the game, its match's proposal id (its players wait on
    that result), its backfill's id once it has one, and the leaves still to come."""

    game: Game
    proposal_id: str
    api: AsyncClient  # the host's client, open for the game's length
    backfill_id: str | None = None
    over: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    leaves: list[asyncio.Task[None]] = field(default_factory=list)


class LiveGames:
    """The games a player left, by backfill id, for the players a fill brings in."""

    def __init__(
        self,
        scenario: Scenario,
        mode: str,
        ids: list[str],
        state: LoopState,
        now: Callable[[], float],
        fail: Callable[[str, Exception], None],
    ) -> None:
        self.scenario, self.mode, self.ids, self.state = scenario, mode, ids, state
        self.index = {player: number for number, player in enumerate(ids)}
        self.now, self.fail = now, fail
        self.by_backfill: dict[str, LiveGame] = {}
        self.fills: set[str] = set()
        self.left: set[int] = set()  # players who left a game: their session is over

    def shares(self, players: int) -> FloatArray | None:
        """Who of a match's players leaves it (their shares of it; None: nobody)."""
        leaving = self.state.leaving
        if leaving is None:
            return None
        shares = leaving.draw(players)
        return shares if share_left(shares) else None

    async def host(
        self, api: AsyncClient, proposal: ProposalOut, shares: FloatArray, length: float
    ) -> MatchOut:
        """Play out a match a player leaves, and post its result (ApiError, httpx errors)."""
        start = self.now()
        teams = [[self.index[player] for player in team] for team in proposal.teams]
        seats = [Seat(p, t, -1, start, start + length) for t, team in enumerate(teams) for p in team]
        live = LiveGame(
            Game(
                start,
                start + length,
                len(teams[0]),
                proposal.quality,
                proposal.region,
                seats,
                [],
                [[] for _ in teams],
            ),
            proposal.proposal_id,
            api,
        )
        self._leaves(live, list(range(len(seats))), shares, start)
        await asyncio.sleep(max(0.0, live.game.ends - self.now()))
        await asyncio.gather(*live.leaves)
        async with live.lock:
            live.over = True
            if live.backfill_id is not None:
                self.by_backfill.pop(live.backfill_id, None)
                try:
                    await api.delete_backfill(self.mode, live.backfill_id)
                except ApiError as exc:
                    if exc.status != 404:
                        self.fail("delete_backfill", exc)
        await asyncio.gather(*live.leaves)  # any a late join added: over, they do nothing
        try:
            return await self._post(api, live)
        finally:
            self.state.offline.put_back(live.game.gone)

    def join(self, proposal: ProposalOut, players: list[int]) -> LiveGame | None:
        """A party a fill brought into a game takes its seats (the oldest open of its team);
        None when the game is over (the fill came too late: the party plays on elsewhere)."""
        live = self.by_backfill.get(proposal.backfill_id or "")
        now = self.now()
        if live is None or live.over or now >= live.game.ends:
            return None
        game, recorder = live.game, self.state.recorder
        if proposal.proposal_id not in self.fills:
            self.fills.add(proposal.proposal_id)
            recorder.fill_quality.append(proposal.quality)
        first = len(game.seats)
        for player in players:
            team = next(t for t, names in enumerate(proposal.teams) if self.ids[player] in names)
            game.seats.append(Seat(player, team, -1, now, game.ends))
            if game.open_since[team]:
                recorder.fill_wait.append(now - game.open_since[team].pop(0))
        joined = list(range(first, len(game.seats)))
        leaving = self.state.leaving
        if leaving is not None:
            self._leaves(live, joined, leaving.draw(len(joined)), now)
        return live

    def _leaves(self, live: LiveGame, seats: list[int], shares: FloatArray, since: float) -> None:
        for seat, share in zip(seats, shares.tolist(), strict=True):
            if math.isfinite(share):
                moment = leave_moment(since, live.game.ends, share)
                live.leaves.append(asyncio.create_task(self._leave(live, seat, moment)))

    async def _leave(self, live: LiveGame, number: int, moment: float) -> None:
        """A player leaves at `moment`: off the game, and off its backfill (one is made at the
        first leave) where the mode takes backfills."""
        await asyncio.sleep(max(0.0, moment - self.now()))
        async with live.lock:
            if live.over:
                return
            game, recorder = live.game, self.state.recorder
            seat = game.seats[number]
            seat.left = self.now()
            game.gone.append(seat.player)
            self.left.add(seat.player)
            recorder.leavers += 1
            if not recorder.backfill or len(game.open_since) != self.scenario.mode.teams:
                return
            before = game.open_seats()
            game.open_backfill(seat.left, self.scenario.mode.team_size)
            recorder.seats_opened += game.open_seats() - before
            await self._roster(live.api, live, self.ids[seat.player])

    async def _roster(self, api: AsyncClient, live: LiveGame, leaver: str) -> None:
        game = live.game
        try:
            if live.backfill_id is None:
                teams = [[self.ids[p] for p in game.present(t)] for t in range(len(game.open_since))]
                # It ends with the game at the latest, should the host's delete never arrive.
                ttl = min(MAX_BACKFILL_TTL_S, max(1.0, game.ends - self.now() + 60.0))
                body: dict[str, object] = {"teams": teams, "ttl_s": ttl}
                if game.region is not None:
                    body["region"] = game.region
                made = await api.create_backfill(self.mode, body)
                live.backfill_id = made.backfill_id
                self.by_backfill[made.backfill_id] = live
                return
            for _ in range(5):
                current = await api.get_backfill(self.mode, live.backfill_id)
                teams = [[name for name in team if name != leaver] for team in current.teams]
                try:
                    await api.replace_backfill(
                        self.mode, live.backfill_id, {"teams": teams, "version": current.version}
                    )
                    return
                except ApiError as exc:
                    if exc.status != 409:
                        raise
            self.state.recorder.errors.append(f"backfill {live.backfill_id}: its roster kept moving on")
        except (ApiError, httpx.HTTPError) as exc:
            self.fail("create_backfill" if live.backfill_id is None else "replace_backfill", exc)

    async def _post(self, api: AsyncClient, live: LiveGame) -> MatchOut:
        """The game's result, drawn from every player's partial play, posted with their weights
        and tallied."""
        game, columns, truth = live.game, self.state.columns, self.scenario.truth
        weights_of = game.weights()
        seats = game.teams()
        players = [np.array([game.seats[n].player for n in team], dtype=np.int64) for team in seats]
        weights = [weights_of[team] for team in seats]
        strength = np.array(
            [float((columns.skill[p] * w).sum()) for p, w in zip(players, weights, strict=True)]
        )
        noise = np.array([math.sqrt(float((w * w).sum())) * truth.beta for w in weights])
        placed = partial_places(
            self.state.outcomes, strength, noise, game.team_size, truth.beta, truth.draw_probability
        )
        outcome = -1
        if len(players) == 2:
            outcome = FIRST_WINS if placed[0] < placed[1] else SECOND_WINS if placed[0] > placed[1] else DRAW
        body = {
            "match_id": live.proposal_id,
            "mode": self.mode,
            "teams": [
                {
                    "players": [
                        {"id": self.ids[p], "weight": float(w)}
                        for p, w in zip(team.tolist(), ws.tolist(), strict=True)
                    ],
                    "rank": float(rank),
                }
                for team, ws, rank in zip(players, weights, placed.tolist(), strict=True)
            ],
        }
        result = await api.post_match(body)
        self.state.recorder.games_left += 1
        self.state.recorder.games_short += game.short()
        before = {self.index[p.player_id]: p.before for p in result.players}
        after = {self.index[p.player_id]: p.after for p in result.players}
        tallied = self.state.tally_partial(
            players,
            weights,
            placed,
            outcome,
            [np.array([before[p].mu for p in team.tolist()]) for team in players],
            [np.array([before[p].sigma for p in team.tolist()]) for team in players],
            game.started,
            game.quality,
            game.region,
        )
        flat = np.concatenate(players)
        self.state.seen(
            flat,
            np.array([after[p].mu for p in flat.tolist()]),
            np.array([after[p].sigma for p in flat.tolist()]),
            tallied.elo,
            tallied.score,
        )
        return result
