"""The contract in another language: a TypeScript client generated from openapi/openapi.json
(openapi-typescript's types, sent by openapi-fetch) runs the game-backend and lobby quick
start against the live service (clients/typescript/).

The steps are what a TypeScript developer runs, untouched: `npm ci` (from the pinned lock
file, npm's cache first), `npm run generate` (no hand edits after it), `npm run typecheck`
(tsc --noEmit, strict), `npm run build`, then the quick start. Node and npm are required:
`make test` installs Debian's when they are missing; without them this test fails, saying so.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.client import Client
from tests.conftest import ADMIN_KEY

PROJECT = Path(__file__).resolve().parents[1] / "clients" / "typescript"
# openapi-typescript's parser (@redocly/openapi-core) needs at least this node.
NODE_AT_LEAST = (18, 17)


def npm(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> str:
    """Run an npm script or command in the project; its output, or the test fails with it."""
    done = subprocess.run(
        ["npm", *args],
        cwd=PROJECT,
        env=env or os.environ.copy(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if done.returncode != 0:
        pytest.fail(f"npm {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def require_node() -> None:
    missing = [tool for tool in ("node", "npm") if shutil.which(tool) is None]
    if missing:
        pytest.fail(f"{' and '.join(missing)} not found: `make test` installs Debian's nodejs and npm")
    version = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout
    found = tuple(int(part) for part in re.findall(r"\d+", version)[:2])
    if found < NODE_AT_LEAST:
        pytest.fail(
            f"node {version.strip()} is too old: the generator needs {'.'.join(map(str, NODE_AT_LEAST))}+"
        )


def steps(output: str) -> dict[str, list[dict[str, Any]]]:
    """The quick start's JSON lines, by step."""
    found: dict[str, list[dict[str, Any]]] = {}
    for line in output.splitlines():
        record = json.loads(line)
        found.setdefault(record.pop("step"), []).append(record)
    return found


def test_a_generated_typescript_client_runs_the_quick_start(live_server: str) -> None:
    require_node()
    mode, run = f"ts-{secrets.token_hex(4)}", secrets.token_hex(4)
    with Client(live_server, ADMIN_KEY) as admin:
        admin.put_mode(mode, min_matches_for_leaderboard=1)
        # What a game backend and its lobby service hold: no admin scope.
        key = admin.create_key(f"{mode}-backend", ["results:write", "matchmaking", "read"]).key

        npm("ci", "--prefer-offline", "--no-audit", "--no-fund")
        npm("run", "generate")
        assert "components" in (PROJECT / "src" / "generated" / "api.ts").read_text()
        npm("run", "typecheck")
        npm("run", "build")
        env = {
            **os.environ,
            "SKILL_URL": live_server,
            "SKILL_API_KEY": key,
            "SKILL_MODE": mode,
            "SKILL_RUN": run,
        }
        said = steps(npm("run", "--silent", "quickstart", env=env, timeout=120))

        (posted,) = said["post"]
        assert posted["created"] is True and posted["winner_after"] > posted["winner_before"]
        (retried,) = said["retry"]
        assert retried == {"status": 200, "created": False, "same_ratings": True}
        (reused,) = said["reuse"]
        assert (reused["status"], reused["title"]) == (409, "Conflict")
        assert f"g-{run}" in reused["detail"]
        (board,) = said["leaderboard"]
        assert [(e["rank"], e["player_id"]) for e in board["ours"]] == [
            (1, f"alice-{run}"),
            (2, f"bob-{run}"),
        ]

        assert [(q["player"], q["ticket_status"]) for q in said["queue"]] == [
            (f"carol-{run}", "queued"),
            (f"dave-{run}", "queued"),
        ]
        (made,) = said["matchmake"]
        assert made["proposals"] == 1 and made["both_tickets"] is True and 0 < made["quality"] <= 1
        (woken,) = said["long-poll"]
        assert (woken["ticket_status"], woken["same_proposal"]) == ("matched", True)
        assert sorted(woken["teams"]) == [[f"carol-{run}"], [f"dave-{run}"]]
        assert said["done"] == [{}]

        # What the TypeScript client did is in the service: one match, applied once.
        stored = admin.get_match(f"g-{run}")
        assert (stored.mode, stored.created) == (mode, False)
        assert admin.get_player(f"alice-{run}").ratings[0].matches == 1
        assert admin.queue_stats(mode).tickets == 0
