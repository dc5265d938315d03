"""Bulk import: the whole file or nothing, bad rows by line, rated by the replay after."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import random
import secrets
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI

from app.client import AsyncClient
from app.imports import reading, service
from app.imports.repository import Participant
from app.imports.service import erased_since
from app.matches.schemas import MatchIn
from app.matches.service import body_hash
from app.progress import Progress
from app.rating import TrueSkill
from tests.jobs.test_jobs import rate_again
from tests.leaderboards.test_leaderboards import check_all, expected

Headers = dict[str, str]


def run_cli(database_url: str, redis_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url}
    return subprocess.run(
        [sys.executable, "-m", "app", *args], env=env, capture_output=True, text=True, timeout=300
    )


def count(database_url: str, mode: str) -> tuple[int, int]:
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM matches WHERE mode = %(m)s),"
            " (SELECT count(*) FROM match_players WHERE mode = %(m)s)",
            {"m": mode},
        ).fetchone()
    assert row is not None
    return row[0], row[1]


def bodies_for(mode: str, rng: random.Random, count: int) -> list[dict[str, Any]]:
    players = [f"{mode}-p{i}" for i in range(9)]
    out = []
    start = dt.datetime(2020, 5, 1, tzinfo=dt.UTC)
    for n in range(count):
        teams = rng.choice([2, 3])
        chosen = rng.sample(players, teams * 2 if teams == 2 else teams)
        size = 2 if teams == 2 else 1
        out.append(
            {
                "match_id": f"{mode}-i{n}",
                "mode": mode,
                "played_at": (start + dt.timedelta(hours=rng.randint(0, 2000)))
                .isoformat()
                .replace("+00:00", "Z"),
                "teams": [
                    {
                        "players": [
                            {"id": p, "weight": rng.choice([1.0, 0.5])}
                            for p in chosen[t * size : (t + 1) * size]
                        ],
                        "rank": rng.randint(1, teams),
                    }
                    for t in range(teams)
                ],
            }
        )
    return out


async def test_csv_and_jsonl_imports_rate_like_posting_the_matches(
    api: AsyncClient,
    client: httpx.AsyncClient,
    admin_headers: Headers,
    database_url: str,
    service_url: str,
    redis_url: str,
    tmp_path: Path,
) -> None:
    mode = f"imp-{secrets.token_hex(3)}"
    rng = random.Random(6)
    bodies = bodies_for(mode, rng, 30)
    half = len(bodies) // 2
    jsonl = tmp_path / "first.jsonl.gz"
    with gzip.open(jsonl, "wt") as handle:
        for body in bodies[:half]:
            handle.write(json.dumps({k: v for k, v in body.items() if k != "mode"}) + "\n")
    long = tmp_path / "second.csv"
    lines = ["match_id,played_at,team,player,rank,weight"]
    for body in bodies[half:]:
        for team, spec in enumerate(body["teams"]):
            for player in spec["players"]:
                lines.append(
                    f"{body['match_id']},{body['played_at']},{team},{player['id']},{spec['rank']},{player['weight']}"
                )
    long.write_text("\n".join(lines) + "\n")

    first = run_cli(service_url, redis_url, "import", "--mode", mode, "--no-replay", str(jsonl))
    assert first.returncode == 0, first.stdout + first.stderr
    unrated = await client.get(f"/v1/matches/{bodies[0]['match_id']}", headers=admin_headers)
    assert unrated.status_code == 409 and "not rated yet" in unrated.json()["detail"]
    second = run_cli(service_url, redis_url, "import", "--mode", mode, str(long))
    assert second.returncode == 0, second.stdout + second.stderr
    assert json.loads(second.stdout)["replay"]["matches"] == len(bodies)

    truth = rate_again(TrueSkill(), bodies)
    for player, (rating, matches) in truth.items():
        profile = next(r for r in (await api.get_player(player)).ratings if r.mode == mode)
        # The import's replay rates level by level: equal to one at a time within 1e-12.
        assert (profile.rating.mu, profile.rating.sigma) == pytest.approx(
            (rating.mu, rating.sigma), rel=1e-12
        )
        assert profile.matches == matches
    await check_all(client, admin_headers, mode, await expected(api, mode, list(truth)))
    # Posting an imported match again is a retry of it, not a new match or a conflict.
    again = await client.post("/v1/matches", json=bodies[-1], headers=admin_headers)
    assert again.status_code == 200, again.text
    assert again.json()["created"] is False
    assert count(database_url, mode) == (
        len(bodies),
        sum(len(t["players"]) for b in bodies for t in b["teams"]),
    )


async def test_bad_rows_are_named_by_line_and_nothing_is_written(
    database_url: str, service_url: str, redis_url: str, tmp_path: Path, api: AsyncClient
) -> None:
    mode = f"imp-{secrets.token_hex(3)}"
    path = tmp_path / "games.csv"
    path.write_text(
        "played_at,winner,loser\n"
        "2021-01-01,ann,bea\n"
        "2021-13-01,ann,bea\n"
        "2021-01-02,ann,ann\n"
        "2021-01-03,a n,bea\n"
        "2999-01-03,ann,bea\n"
        "2021-01-04,cid,dee\n"
    )
    result = run_cli(service_url, redis_url, "import", "--mode", mode, str(path))
    assert result.returncode == 1
    # One wrong row a line, then their count.
    out = result.stderr[result.stderr.index("error: nothing was imported:") :].strip().splitlines()
    rows, total = out[1:-1], out[-1]
    assert [row.split(":")[0] for row in rows] == ["line 3", "line 4", "line 5", "line 6"], out
    for row, words in zip(
        rows, ("2021-13-01", "appears twice", "should match pattern", "future"), strict=True
    ):
        assert words in row, (row, words)
    assert total == "4 rows are wrong"
    assert count(database_url, mode) == (0, 0)

    good = tmp_path / "good.csv"
    good.write_text("match_id,played_at,winner,loser\nclash-1,2021-01-01,ann,bea\n")
    assert run_cli(service_url, redis_url, "import", "--mode", mode, str(good)).returncode == 0
    both = tmp_path / "both.csv"
    both.write_text("match_id,played_at,winner,loser\nnew-1,2021-01-02,ann,bea\nclash-1,2021-01-01,bea,ann\n")
    clash = run_cli(service_url, redis_url, "import", "--mode", mode, str(both))
    assert clash.returncode == 1
    assert "line 3: match_id 'clash-1' is already recorded with another body" in clash.stderr
    assert count(database_url, mode) == (1, 2)


async def test_importing_a_file_again_or_a_renamed_copy_changes_nothing(
    database_url: str, service_url: str, redis_url: str, tmp_path: Path, api: AsyncClient
) -> None:
    mode = f"imp-{secrets.token_hex(3)}"
    fra, ger, ita, esp = (f"{mode}-{team}" for team in ("fra", "ger", "ita", "esp"))
    rows = [
        "played_at,home,away,draw",
        f"1990-05-01,{fra},{ger},",
        f"1990-05-01,{fra},{ger},",  # the same match twice in a day (football repeats rows)
        f"1990-05-01,{ger},{fra},1",
        f"1990-05-02T12:00:00+02:00,{ita},{esp},",
        f"1990-05-01,{fra},{ger},",
    ]
    first = tmp_path / "results.csv"
    first.write_text("\n".join(rows) + "\n")
    columns = ["--column", "winner=home", "--column", "loser=away"]
    loaded = run_cli(service_url, redis_url, "import", "--mode", mode, *columns, str(first))
    assert loaded.returncode == 0, loaded.stderr
    out = json.loads(loaded.stdout)
    assert (out["matches"], out["already_recorded"], out["replay"]["matches"]) == (5, 0, 5)
    ids = [m.match_id for m in reading.read_file(first, mode, {"winner": "home", "loser": "away"}).matches]
    assert len(set(ids)) == 5 and [i.rsplit(":", 1)[1] for i in ids] == ["0", "1", "0", "0", "2"]
    before = await api.get_player(fra)

    # The same rows under another name and in another order: the same ids, nothing new.
    renamed = tmp_path / "copy-of-results.csv.gz"
    with gzip.open(renamed, "wt") as handle:
        handle.write("\n".join([rows[0], *reversed(rows[1:])]) + "\n")
    again = run_cli(service_url, redis_url, "import", "--mode", mode, *columns, str(renamed))
    assert again.returncode == 0, again.stderr
    out = json.loads(again.stdout)
    assert (out["matches"], out["already_recorded"], out["replay"]) == (0, 5, None)
    assert "5 of the file's matches were already recorded; 0 new" in again.stderr
    assert count(database_url, mode) == (5, 10)
    assert await api.get_player(fra) == before

    # One more row: only it is loaded, and the mode is replayed with it.
    grown = tmp_path / "grown.csv"
    grown.write_text("\n".join([*rows, f"1990-05-03,{esp},{fra},"]) + "\n")
    more = run_cli(service_url, redis_url, "import", "--mode", mode, *columns, str(grown))
    assert more.returncode == 0, more.stderr
    out = json.loads(more.stdout)
    assert (out["matches"], out["already_recorded"], out["replay"]["matches"]) == (1, 5, 6)
    assert count(database_url, mode) == (6, 12)


def test_wrong_rows_are_listed_one_a_line_fifty_at_most_then_counted(
    service_url: str, redis_url: str, tmp_path: Path
) -> None:
    mode = f"imp-{secrets.token_hex(3)}"
    path = tmp_path / "wrong.csv"
    path.write_text(
        "played_at,winner,loser\n" + "".join(f"2021-01-{n % 28 + 1:02d},p{n},p{n}\n" for n in range(73))
    )
    result = run_cli(service_url, redis_url, "import", "--mode", mode, str(path))
    assert result.returncode == 1
    out = result.stderr[result.stderr.index("error: nothing was imported:") :].strip().splitlines()
    assert out[0] == "error: nothing was imported:"
    assert [row.split(":")[0] for row in out[1:-1]] == [f"line {n}" for n in range(2, 52)]
    assert all("appears twice" in row for row in out[1:-1])
    assert out[-1] == "73 rows are wrong, the first 50 listed"


async def test_a_repeat_import_after_an_erasure_skips_the_erased_rows_and_exits_0(
    database_url: str,
    service_url: str,
    redis_url: str,
    tmp_path: Path,
    api: AsyncClient,
    client: httpx.AsyncClient,
    admin_headers: Headers,
) -> None:
    mode = f"imp-{secrets.token_hex(3)}"
    ann, bea, cid = (f"{mode}-{name}" for name in ("ann", "bea", "cid"))
    rows = [
        "played_at,winner,loser",
        f"2021-01-01,{ann},{bea}",
        f"2021-01-02,{bea},{cid}",
        f"2021-01-03,{cid},{ann}",
        f"2021-01-04,{bea},{cid}",
    ]
    path = tmp_path / "games.csv"
    path.write_text("\n".join(rows) + "\n")
    assert run_cli(service_url, redis_url, "import", "--mode", mode, str(path)).returncode == 0
    erased = await client.delete(f"/v1/players/{ann}", headers=admin_headers)
    assert erased.status_code == 204
    before = count(database_url, mode)
    bea_before = await api.get_player(bea)

    again = run_cli(service_url, redis_url, "import", "--mode", mode, str(path))
    assert again.returncode == 0, again.stderr
    out = json.loads(again.stdout)
    assert (out["matches"], out["already_recorded"], out["erased_since"], out["replay"]) == (0, 4, 2, None)
    assert "2 rows name players erased since; skipped" in again.stderr
    assert count(database_url, mode) == before
    assert await api.get_player(bea) == bea_before
    with psycopg.connect(database_url) as conn:
        named = conn.execute(
            "SELECT (SELECT count(*) FROM players WHERE id = %(id)s),"
            " (SELECT count(*) FROM match_players WHERE player_id = %(id)s),"
            " (SELECT count(*) FROM ratings WHERE player_id = %(id)s)",
            {"id": ann},
        ).fetchone()
    assert named == (0, 0, 0)


def test_a_stored_match_differing_elsewhere_than_erased_players_is_another_body() -> None:
    at = dt.datetime(2021, 1, 3, tzinfo=dt.UTC)
    row = reading.Parsed(4, "g3", at, [[("cid", 1.0, None)], [("ann", 1.0, None)]], [0.0, 1.0], "")
    erased = "erased:" + "0" * 32
    stored: list[Participant] = [(0, "cid", 0.0, 1.0, None), (1, erased, 1.0, 1.0, None)]
    assert erased_since(row, stored)
    # Not erased at all (the hash differs for another reason), the winner swapped, a weight or
    # a rank changed, a player more: each is another body.
    assert not erased_since(row, [(0, "cid", 0.0, 1.0, None), (1, "bob", 1.0, 1.0, None)])
    assert not erased_since(row, [(0, erased, 0.0, 1.0, None), (1, "cid", 1.0, 1.0, None)])
    assert not erased_since(row, [(0, "cid", 0.0, 1.0, None), (1, erased, 1.0, 0.5, None)])
    assert not erased_since(row, [(0, "cid", 0.0, 1.0, None), (1, erased, 0.0, 1.0, None)])
    assert not erased_since(row, [*stored, (1, "erased:" + "1" * 32, 1.0, 1.0, None)])


def test_the_fast_one_per_row_path_hashes_like_the_api(tmp_path: Path) -> None:
    rng = random.Random(1)
    path = tmp_path / "duels.csv"
    rows = ["played_at,winner,loser,draw"]
    for n in range(200):
        day = dt.date(1990, 1, 1) + dt.timedelta(days=rng.randint(0, 10000))
        when = day.isoformat() if n % 2 else f"{day.isoformat()}T{rng.randint(0, 23):02d}:15:00Z"
        rows.append(
            f"{when},w{rng.randint(0, 50)}.x,l-{rng.randint(51, 99)}@y,{rng.choice(['', '1', 'true', '0'])}"
        )
    path.write_text("\n".join(rows) + "\n")
    read = reading.read_file(path, "duels")
    assert read.error_count == 0 and len(read.matches) == 200
    for parsed in read.matches:
        teams = [
            {"players": [{"id": p} for p, _, _ in team], "rank": rank}
            for team, rank in zip(parsed.teams, parsed.ranks, strict=True)
        ]
        body = {
            "match_id": parsed.match_id,
            "mode": "duels",
            "played_at": parsed.played_at.isoformat(),
            "teams": teams,
        }
        assert parsed.body_hash == body_hash(MatchIn.model_validate(body)), parsed


ATP_HEADER = (
    "date,tourney_id,tourney_name,tourney_level,surface,round,match_num,best_of,"
    "winner_id,loser_id,winner_name,loser_name,score"
)


def write_atp_like(path: Path) -> list[tuple[str, str, str]]:
    """ATP singles in the published layout (the data itself is not shipped: docs/datasets.md),
    with every kind of row the recipe drops. Returns (date, winner, loser) of the rows it keeps."""
    kept: list[tuple[str, str, str]] = []
    lines = [ATP_HEADER]
    scores = ["6-4 6-3", "7-6(5) 3-6 6-2", "6-3 2-1 RET", "DEF", "UNK"]
    for number in range(30):
        date = f"1990-{1 + number // 10:02d}-0{1 + number % 7}"
        winner, loser = f"{100 + number}", f"{200 + number % 9}"
        names = f"W{winner},L{loser},{scores[number % 5]}"
        lines.append(f"{date},1990-{number},Open,A,Hard,R32,{number},3,{winner},{loser},{names}")
        kept.append((date, winner, loser))
    dropped = [
        ("101", "102", "W/O"),
        ("101", "102", " W/O"),
        ("103", "104", "Walkover"),
        ("199999", "105", "6-1 6-1"),
        ("106", "199999", "6-2 6-2"),
        ("199999", "199999", "6-0 6-0"),
    ]
    for number, (winner, loser, score) in enumerate(dropped):
        lines.append(f"1990-06-01,1990-x,Open,A,Clay,F,{number},3,{winner},{loser},W,L,{score}")
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    return kept


def test_the_atp_recipe_columns_and_skips(tmp_path: Path) -> None:
    """The recipe printed by `import --help` (and docs/import.md) reads the ATP layout and drops
    what app.evaluation.histories.atp drops, so the imported mode and the evaluations agree."""
    from app.evaluation import histories
    from app.imports.commands import ATP_RECIPE

    path = tmp_path / "atp" / "atp_singles_1968_2024.csv.gz"
    kept = write_atp_like(path)
    words = shlex.split(ATP_RECIPE.split("python -m app import", 1)[1].replace("\\\n", " "))
    columns = dict(words[i + 1].split("=", 1) for i, word in enumerate(words) if word == "--column")
    skips = [reading.Skip.parse(words[i + 1]) for i, word in enumerate(words) if word == "--skip"]
    assert columns == {"played_at": "date", "winner": "winner_id", "loser": "loser_id"}
    assert len(skips) == 3
    read = reading.read_file(path, "atp", columns, skips)
    assert read.error_count == 0
    assert read.skipped == 6
    got = [(m.played_at.date().isoformat(), m.teams[0][0][0], m.teams[1][0][0]) for m in read.matches]
    assert sorted(got) == sorted(kept)
    assert all(m.ranks[0] < m.ranks[1] for m in read.matches), "the winner ranks first"
    evaluated = histories.atp(tmp_path)
    assert sorted(
        (dt.date(1970, 1, 1) + dt.timedelta(days=int(t)), c[0][0], c[1][0])
        for t, c in zip(evaluated.times, evaluated.composition, strict=True)
    ) == sorted((dt.date.fromisoformat(d), w, lo) for d, w, lo in kept)
    with pytest.raises(ValueError, match="no column 'nope'"):
        reading.read_file(path, "atp", {"played_at": "nope"})


async def test_an_import_moves_its_progress_while_reading_loading_and_replaying(
    app: FastAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shown at once (before the file is read), then moved every few lines read, every chunk
    loaded and every step of the replay; counted, not timed."""
    monkeypatch.setattr(reading, "TICK_LINES", 50)
    monkeypatch.setattr(service, "CHUNK", 500)
    mode = f"imp-{secrets.token_hex(3)}"
    rng = random.Random(7)
    names = [f"{mode}-p{i}" for i in range(10)]
    rows = ["played_at,winner,loser"]
    for n in range(3000):
        winner, loser = rng.sample(names, 2)
        rows.append(f"{dt.date(2000, 1, 1) + dt.timedelta(days=n // 3)},{winner},{loser}")
    path = tmp_path / "games.csv"
    path.write_text("\n".join(rows) + "\n")
    shown: list[float] = []
    traced: list[float] = []

    async def show(value: float) -> None:
        shown.append(value)

    progress = Progress(show, trace=traced.append)
    async with progress.watched(every=3600.0):
        assert shown == [0.0]
        result = await service.import_file(app.state.resources.sessions, path, mode, progress=progress)
    assert result.matches == 3000
    assert traced == sorted(traced) and traced[-1] == 1.0
    # The share of the file read moves as the text is decoded, 8 KB at a time (100 KB here).
    assert len([v for v in traced if v < service.READ_END]) >= 10
    assert len([v for v in traced if service.READ_END < v < service.LOAD_END]) >= 3000 // 500 - 1
    assert len([v for v in traced if v > service.LOAD_END]) >= 10  # the replay's steps
    assert shown[-1] == 1.0 and len(shown) >= 4  # the start, the read, the load, the replay's checkpoints
