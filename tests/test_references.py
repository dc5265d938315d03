"""Every paper the code cites as "seed 00N" is cited in full in docs/references.md."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CITATION = re.compile(r"\bseed (\d{3})\b", re.IGNORECASE)


def test_every_cited_seed_is_in_the_references() -> None:
    sources = [p for folder in ("app", "bench", "migrations") for p in (ROOT / folder).rglob("*.py")]
    sources += [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    cited = {number for path in sources for number in CITATION.findall(path.read_text(encoding="utf-8"))}
    assert {"000", "001", "002"} <= cited, "the code cites the papers it implements"
    listed = set(
        re.findall(r"^### seed (\d{3})$", (ROOT / "docs" / "references.md").read_text(), re.MULTILINE)
    )
    assert sorted(cited - listed) == []
