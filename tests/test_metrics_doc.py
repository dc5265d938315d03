"""docs/metrics.md lists exactly the series the service registers, and every `source` its
rating counter is given in the code."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from prometheus_client.metrics import MetricWrapperBase

from app import metrics
from app.api import middleware

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "metrics.md").read_text()
# A table row's first cell: | `name` | ...
ROW = re.compile(r"^\| `(?P<name>[a-z_]+)` \|", re.MULTILINE)


def registered() -> set[str]:
    """The exposed names of the series app.metrics and the middleware declare."""
    found = set()
    for module in (metrics, middleware):
        for value in vars(module).values():
            if isinstance(value, MetricWrapperBase):
                kind = value._type  # prometheus_client strips a counter's _total from its name
                found.add(f"{value._name}_total" if kind == "counter" else value._name)
    return found


def sources_in_code() -> set[str]:
    """Every literal `source` of `RATINGS_WRITTEN.labels(mode, "...")` under app/."""
    found = set()
    for path in (ROOT / "app").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "labels"
                and isinstance(node.func.value, ast.Attribute)
                and node.func.value.attr == "RATINGS_WRITTEN"
            ):
                source = node.args[1]
                assert isinstance(source, ast.Constant), f"{path}: a source is a literal of RATING_SOURCES"
                found.add(source.value)
    return found


def test_the_page_lists_every_registered_series_and_no_other() -> None:
    series = registered()
    assert {"skill_ratings_written_total", "http_request_duration_seconds"} <= series
    documented = {m["name"] for m in ROW.finditer(DOC)} - set(metrics.RATING_SOURCES)
    assert documented == series


def test_every_source_written_is_declared_in_the_help_and_documented() -> None:
    written = sources_in_code()
    assert "season" in written and "match" in written
    assert written == set(metrics.RATING_SOURCES)
    help_text = metrics.RATINGS_WRITTEN._documentation
    for source in metrics.RATING_SOURCES:
        assert f"| `{source}` |" in DOC, source
        assert source in help_text, source
