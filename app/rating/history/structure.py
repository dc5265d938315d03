"""A TrueSkill Through Time history as flat arrays, one per field, appended to in time order.

- players: prior (natural parameters), beta, gamma;
- batches: the time every game of the batch shares;
- skills: one per player per batch they play in (seed 001 §2.3's skill variables), with the
  messages into it: forward (the past), backward (the future) and the sum of its games';
- games: batch, entry range, and for two teams the orientation, tie and draw margin;
- entries: one per player per game: team, skill, weight and the game's last message to it.

Appending reads the new games once, in Python, into compact buffers; nothing in the
message passing holds a Python object per message.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping, Sequence
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from app.rating.history.game import Player
from app.rating.history.gaussian import INF
from app.rating.normal import draw_margin

Array = npt.NDArray[np.float64]
Index = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]

Teams = Sequence[Sequence[str]]


def _floats(values: array) -> Array:  # type: ignore[type-arg]
    return np.frombuffer(values, dtype=np.float64).copy() if len(values) else np.zeros(0)


def _ints(values: array) -> Index:  # type: ignore[type-arg]
    return np.frombuffer(values, dtype=np.int64).copy() if len(values) else np.zeros(0, dtype=np.int64)


Grown = TypeVar("Grown", Array, Index, Mask)


def _grow(old: Grown, new: Grown) -> Grown:
    return np.concatenate((old, new)) if len(old) else new


class Flat:
    """The arrays, and `append`, which extends them with games no earlier than the last."""

    def __init__(self, p_draw: float, timed: bool, default: Player) -> None:
        if not 0.0 <= p_draw < 1.0:
            raise ValueError(f"p_draw must be in [0, 1), got {p_draw!r}")
        self.p_draw = float(p_draw)
        self.timed = timed
        self.default = default
        # players
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self.players: list[Player] = []
        self.prior_pi = np.zeros(0)
        self.prior_tau = np.zeros(0)
        self.beta = np.zeros(0)
        self._last_skill: list[int] = []
        self._last_time: list[float] = []
        # batches
        self.times = np.zeros(0)
        # skills
        self.skill_player = np.zeros(0, dtype=np.int64)
        self.skill_batch = np.zeros(0, dtype=np.int64)
        self.skill_prev = np.zeros(0, dtype=np.int64)  # the player's previous skill, or −1
        self.drift = np.zeros(0)  # gamma²·elapsed since the previous skill
        self.fwd_pi, self.fwd_tau = np.zeros(0), np.zeros(0)
        self.bwd_pi, self.bwd_tau = np.zeros(0), np.zeros(0)
        self.lik_pi, self.lik_tau = np.zeros(0), np.zeros(0)
        # games
        self.game_batch = np.zeros(0, dtype=np.int64)
        self.game_start = np.zeros(1, dtype=np.int64)  # entries of game g: start[g]:start[g+1]
        self.sign = np.zeros(0)  # two teams: +1 when the first won or drew, −1 when it lost
        self.tie = np.zeros(0, dtype=bool)
        self.margin = np.zeros(0)
        self.general = np.zeros(0, dtype=bool)  # three or more teams: solved by Game
        self.log_evidence = np.zeros(0)
        self.results: dict[int, list[float]] = {}  # general games' scores
        # entries
        self.entry_team = np.zeros(0, dtype=np.int64)
        self.entry_skill = np.zeros(0, dtype=np.int64)
        self.entry_player = np.zeros(0, dtype=np.int64)
        self.weight = np.zeros(0)
        self.own_pi, self.own_tau = np.zeros(0), np.zeros(0)

    @property
    def games(self) -> int:
        return len(self.game_batch)

    @property
    def skills(self) -> int:
        return len(self.skill_player)

    def register(self, teams_of_games: Sequence[Teams], priors: Mapping[str, Player]) -> None:
        """Players seen for the first time get their prior (or the history's default)."""
        added: list[Player] = []
        for teams in teams_of_games:
            for team in teams:
                for name in team:
                    if name not in self.index:
                        player = priors.get(name) or self.default
                        self.index[name] = len(self.names)
                        self.names.append(name)
                        added.append(player)
                        self._last_skill.append(-1)
                        self._last_time.append(-INF)
        if not added:
            return
        self.players.extend(added)
        sigma = np.array([p.prior.sigma for p in added])
        mu = np.array([p.prior.mu for p in added])
        with np.errstate(divide="ignore", invalid="ignore"):
            pi = np.where(sigma == INF, 0.0, sigma**-2.0)
            tau = np.where(sigma == INF, 0.0, mu * pi)
        self.prior_pi = _grow(self.prior_pi, pi)
        self.prior_tau = _grow(self.prior_tau, tau)
        self.beta = _grow(self.beta, np.array([p.beta for p in added]))

    def last_skill(self, player: int) -> int:
        """The player's latest skill, or −1."""
        return self._last_skill[player]

    def append(
        self,
        composition: Sequence[Teams],
        results: Sequence[Sequence[float]] | None,
        weights: Sequence[Sequence[Sequence[float]]] | None,
        times: Sequence[float],
        labels: Sequence[int],
    ) -> tuple[int, int]:
        """Add games sorted by time, none before the last batch; games at the last batch's
        time join it. `labels` number the games in errors. Returns the first new game and
        the first new skill."""
        first_game, first_skill = self.games, self.skills
        index, players = self.index, self.players
        last_skill, last_time = self._last_skill, self._last_time
        p_draw = self.p_draw
        batch_times = self.times.tolist()
        batch = len(batch_times) - 1
        # The current batch's skills by player, to find a player's skill in this batch.
        current: dict[int, int] = {}
        if batch >= 0:
            for s in np.flatnonzero(self.skill_batch == batch).tolist():
                current[int(self.skill_player[s])] = s
        skill_count = self.skills
        entry_count = len(self.entry_skill)
        s_player, s_batch, s_prev, s_drift = array("q"), array("q"), array("q"), array("d")
        g_batch, g_start, g_sign, g_tie, g_margin, g_general = (
            array("q"),
            array("q"),
            array("d"),
            array("b"),
            array("d"),
            array("b"),
        )
        e_team, e_skill, e_player, e_weight = array("q"), array("q"), array("q"), array("d")
        betas = [p.beta for p in players]
        gammas = [p.gamma for p in players]
        timed = self.timed

        def open_skill(p: int, batch: int, now: float) -> int:
            nonlocal skill_count
            s = skill_count
            skill_count += 1
            previous = last_time[p]
            if previous == -INF:
                elapsed = 0.0
            elif not timed:
                elapsed = 1.0  # the package's untimed histories: one unit between plays
            else:
                elapsed = now - previous
            gamma = gammas[p]
            s_player.append(p)
            s_batch.append(batch)
            s_prev.append(last_skill[p])
            s_drift.append(elapsed * gamma * gamma)
            last_skill[p] = s
            last_time[p] = now
            current[p] = s
            return s

        for number, teams in enumerate(composition):
            g = first_game + number
            now = times[number]
            if not timed or batch < 0 or now != batch_times[batch]:
                batch += 1
                batch_times.append(now)
                current = {}
            given = results[number] if results else None
            g_batch.append(batch)
            g_start.append(entry_count)
            if (
                len(teams) == 2
                and len(teams[0]) == 1
                and len(teams[1]) == 1
                and not (weights and weights[number])
            ):
                # One against one, unweighted: the common case, read without the general checks.
                first, second = _pair(given, labels[number])
                if first == second and p_draw == 0.0:
                    raise ValueError(f"game {labels[number]}: a draw needs p_draw > 0")
                a, b = index[teams[0][0]], index[teams[1][0]]
                if a == b:
                    raise ValueError(f"game {labels[number]}: player {teams[0][0]!r} appears twice")
                sa = current.get(a)
                if sa is None:
                    sa = open_skill(a, batch, now)
                sb = current.get(b)
                if sb is None:
                    sb = open_skill(b, batch, now)
                e_team.extend((0, 1))
                e_skill.extend((sa, sb))
                e_player.extend((a, b))
                e_weight.extend((1.0, 1.0))
                entry_count += 2
                g_general.append(False)
                g_sign.append(1.0 if first >= second else -1.0)
                g_tie.append(first == second)
                beta_a, beta_b = betas[a], betas[b]
                g_margin.append(draw_margin(p_draw, math.sqrt(beta_a * beta_a + beta_b * beta_b)))
                continue
            label = labels[number]
            count = len(teams)
            result = _scores(given, count, label)
            weighting = _weights(weights[number] if weights else None, teams, label)
            if p_draw == 0.0 and len(set(result)) != count:
                raise ValueError(f"game {label}: a draw needs p_draw > 0")
            seen: set[int] = set()
            beta2 = 0.0
            for team_number, team in enumerate(teams):
                for position, name in enumerate(team):
                    p = index[name]
                    if p in seen:
                        raise ValueError(f"game {label}: player {name!r} appears twice")
                    seen.add(p)
                    found = current.get(p)
                    s = open_skill(p, batch, now) if found is None else found
                    e_team.append(team_number)
                    e_skill.append(s)
                    e_player.append(p)
                    e_weight.append(1.0 if weighting is None else weighting[team_number][position])
                    beta2 += betas[p] * betas[p]
                    entry_count += 1
            general = count != 2
            g_general.append(general)
            if general:
                self.results[g] = result
                g_sign.append(1.0)
                g_tie.append(False)
                g_margin.append(0.0)
            else:
                g_sign.append(1.0 if result[0] >= result[1] else -1.0)
                g_tie.append(result[0] == result[1])
                g_margin.append(draw_margin(p_draw, math.sqrt(beta2)))
        self._extend_arrays(
            batch_times,
            (s_player, s_batch, s_prev, s_drift),
            (g_batch, g_start, g_sign, g_tie, g_margin, g_general),
            (e_team, e_skill, e_player, e_weight),
            entry_count,
        )
        return first_game, first_skill

    def _extend_arrays(
        self,
        times: list[float],
        skills: tuple[array, array, array, array],  # type: ignore[type-arg]
        games: tuple[array, array, array, array, array, array],  # type: ignore[type-arg]
        entries: tuple[array, array, array, array],  # type: ignore[type-arg]
        entry_count: int,
    ) -> None:
        self.times = np.array(times, dtype=np.float64)
        s_player, s_batch, s_prev, s_drift = skills
        new_skills = len(s_player)
        self.skill_player = _grow(self.skill_player, _ints(s_player))
        self.skill_batch = _grow(self.skill_batch, _ints(s_batch))
        self.skill_prev = _grow(self.skill_prev, _ints(s_prev))
        self.drift = _grow(self.drift, _floats(s_drift))
        for field in ("fwd_pi", "fwd_tau", "bwd_pi", "bwd_tau", "lik_pi", "lik_tau"):
            setattr(self, field, _grow(getattr(self, field), np.zeros(new_skills)))
        g_batch, g_start, g_sign, g_tie, g_margin, g_general = games
        new_games = len(g_batch)
        self.game_batch = _grow(self.game_batch, _ints(g_batch))
        starts = _ints(g_start)
        self.game_start = np.concatenate((self.game_start[:-1], starts, [entry_count])).astype(np.int64)
        self.sign = _grow(self.sign, _floats(g_sign))
        self.tie = _grow(self.tie, np.frombuffer(g_tie, dtype=np.int8).astype(bool))
        self.margin = _grow(self.margin, _floats(g_margin))
        self.general = _grow(self.general, np.frombuffer(g_general, dtype=np.int8).astype(bool))
        self.log_evidence = _grow(self.log_evidence, np.zeros(new_games))
        e_team, e_skill, e_player, e_weight = entries
        new_weights = _floats(e_weight)
        self.entry_team = _grow(self.entry_team, _ints(e_team))
        self.entry_skill = _grow(self.entry_skill, _ints(e_skill))
        self.entry_player = _grow(self.entry_player, _ints(e_player))
        self.weight = _grow(self.weight, new_weights)
        new_entries = len(e_skill)
        self.own_pi = _grow(self.own_pi, np.zeros(new_entries))
        self.own_tau = _grow(self.own_tau, np.zeros(new_entries))


def _pair(result: Sequence[float] | None, game: int) -> tuple[float, float]:
    """The two scores of a one-against-one game (the first wins by default), checked."""
    if not result:
        return 1.0, 0.0
    if len(result) != 2:
        raise ValueError(f"game {game}: result has {len(result)} entries for 2 teams")
    first, second = float(result[0]), float(result[1])
    if not (math.isfinite(first) and math.isfinite(second)):
        raise ValueError(f"game {game}: results must be finite")
    return first, second


def _scores(result: Sequence[float] | None, count: int, game: int) -> list[float]:
    if count < 2:
        raise ValueError(f"game {game}: a game needs at least 2 teams, got {count}")
    if not result:
        return [float(count - 1 - t) for t in range(count)]
    if len(result) != count:
        raise ValueError(f"game {game}: result has {len(result)} entries for {count} teams")
    scores = [float(r) for r in result]
    if not all(math.isfinite(r) for r in scores):
        raise ValueError(f"game {game}: results must be finite")
    return scores


def _weights(weights: Sequence[Sequence[float]] | None, teams: Teams, game: int) -> list[list[float]] | None:
    if any(len(team) == 0 for team in teams):
        raise ValueError(f"game {game}: every team needs at least one player")
    if not weights:
        return None
    if len(weights) != len(teams) or any(len(w) != len(t) for w, t in zip(weights, teams, strict=True)):
        raise ValueError(f"game {game}: weights must have one entry per player of every team")
    out = [[float(w) for w in team] for team in weights]
    if any(not math.isfinite(w) for team in out for w in team):
        raise ValueError(f"game {game}: weights must be finite")
    return out
