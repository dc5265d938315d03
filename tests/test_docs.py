"""The README and the reference pages say what the code has: the README stays a short front
page, its library quick start runs and prints what it says, every relative link leads to a
file (and a heading) that exists, docs/configuration.md lists exactly the settings, and
docs/cli.md every command."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
from pathlib import Path

from app.cli import build_parser
from app.config import Settings

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
