"""Jinja2 templates of the ops page, autoescaped: player ids and mode names are user data."""

from __future__ import annotations

from typing import Any

from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, StrictUndefined

_templates = Environment(
    loader=PackageLoader("app.ui", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)

# The pages carry no script; styles are inline. Nothing may frame them.
_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


def page(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    context.setdefault("signed_in", True)
    html = _templates.get_template(template).render(**context)
    return HTMLResponse(html, status_code=status, headers=_HEADERS)
