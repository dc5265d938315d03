"""The README and the reference pages say what the code has: the README stays a short front
page, its quick starts run as written (the library's offline, the game backend's and the
lobby's against the live service) and print what they say, every relative link leads to a
file (and a heading) that exists, docs/configuration.md lists exactly the settings,
docs/cli.md every command, and docs/benchmarks.md every bench script."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import re
import secrets
from pathlib import Path

from app.cli import build_parser
from app.client import Client
from app.config import Settings
from tests.conftest import ADMIN_KEY

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "clients/typescript/README.md"]
# [text](target) with a relative target; code spans never hold one on these pages.
LINK = re.compile(r"\]\((?!https?://|mailto:)(?P<path>[^)#\s]*)(?:#(?P<anchor>[^)\s]+))?\)")
CLAIM = re.compile(r"print\(.*\)\s+#[^\d\n]*(\d\.\d+|Rating\(.*?\))$", re.MULTILINE)
PYTHON_BLOCK = re.compile(r"^```python\n(?P<code>.*?)^```", re.MULTILINE | re.DOTALL)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(h) for h in re.findall(r"^#+ (.+)$", page.read_text(), re.MULTILINE)}


def test_the_readme_is_a_front_page() -> None:
    lines = README.count("\n")
    assert lines <= 200, f"README.md has {lines} lines: move reference to docs/"
    for command in ("make run", "make test"):
        assert command in README.split("## ", 2)[1], f"{command} opens the README"


def test_every_relative_link_leads_somewhere() -> None:
    broken = []
    for page in PAGES:
        for link in LINK.finditer(page.read_text()):
            target = (page.parent / link["path"]).resolve() if link["path"] else page
            if not target.exists():
                broken.append(f"{page.relative_to(ROOT)}: {link['path']}")
            elif link["anchor"] and target.suffix == ".md" and link["anchor"] not in anchors(target):
                broken.append(f"{page.relative_to(ROOT)}: {link['path']}#{link['anchor']}")
    assert broken == []


def test_the_library_quick_start_runs_and_prints_what_it_says() -> None:
    blocks = [b["code"] for b in PYTHON_BLOCK.finditer(README) if "app.rating" in b["code"]]
    assert len(blocks) == 2, "the README shows app.rating and app.rating.history"
    claims, outputs = [], []
    for code in blocks:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, "README.md", "exec"), {})
        outputs.append(printed.getvalue())
        # The value a `print(...)  # comment` says it shows, checked against what it printed.
        for claimed in CLAIM.findall(code):
            claims.append(claimed)
            assert claimed in printed.getvalue(), (claimed, printed.getvalue())
    assert claims == ["0.447", "Rating(mu=28.108, sigma=7.774)"]
    # ana's learning curve: one point per time she played.
    assert [line.split()[0] for line in outputs[1].splitlines()] == ["1.0", "2.0", "31.0"]


def service_blocks(run: str, base: str) -> str:
    """The README's game-backend and lobby blocks, for the live service at `base`: the ids and
    the lobby's attribute made unique to this run (the test database is shared), nothing else."""
    blocks = [b["code"] for b in PYTHON_BLOCK.finditer(README) if "app.client" in b["code"]]
    assert len(blocks) == 2, "the README shows the game backend's and the lobby's quick start"
    code = "\n".join(blocks).replace("http://127.0.0.1:8000", base)
    for literal in ("g-123", "alice", "bob", "carol", "dave", "eu"):
        assert f'"{literal}"' in code, literal
        code = code.replace(f'"{literal}"', f'"{literal}-{run}"')
    return code


def test_the_game_backend_and_lobby_quick_starts_run_against_the_service(live_server: str) -> None:
    run = secrets.token_hex(4)
    with Client(live_server, ADMIN_KEY) as admin:
        key = admin.create_key(f"readme-{run}", ["results:write", "matchmaking", "read"]).key
        namespace: dict[str, object] = {"api_key": key}
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(service_blocks(run, live_server), "README.md", "exec"), namespace)
            asyncio.run(namespace["lobby"](key))  # type: ignore[operator]
        lines = printed.getvalue().splitlines()
        # The retry asserted itself inside the block; the reuse of the id printed its 409.
        assert lines[1].startswith("409 ") and f"g-123-{run}" in lines[1]
        assert lines[-1].startswith("matched [")
        assert f"carol-{run}" in lines[-1] and f"dave-{run}" in lines[-1]
        stored = admin.get_match(f"g-123-{run}")
        assert stored.players[0].player_id == f"alice-{run}" and stored.created is False
        assert admin.get_player_ticket("default", f"carol-{run}").status == "matched"


def test_the_configuration_page_lists_every_setting() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text()
    documented = set(re.findall(r"^\| `([A-Z_]+)` \|", page, re.MULTILINE))
    assert documented == {name.upper() for name in Settings.model_fields}


def test_the_cli_page_lists_every_command() -> None:
    page = (ROOT / "docs" / "cli.md").read_text()
    documented = set(re.findall(r"^\| `([a-z-]+)` \|", page, re.MULTILINE))
    (commands,) = (
        action.choices
        for action in build_parser("skillservice")._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    assert documented == set(commands)


def test_the_benchmarks_page_lists_every_script_and_stays_short() -> None:
    page = (ROOT / "docs" / "benchmarks.md").read_text()
    assert page.count("\n") <= 400, "docs/benchmarks.md keeps each benchmark's current figure only"
    listed = set(re.findall(r"^\| `(bench/[a-z_]+\.py)` \|", page, re.MULTILINE))
    assert listed == {f"bench/{path.name}" for path in (ROOT / "bench").glob("*.py")}
