"""/docs (Swagger UI) and /redoc, with their scripts and styles served by this service.

FastAPI's defaults load them from a CDN, which a build network may not reach: the page
stays blank. The files come from the fastapi-offline package (Swagger UI's dist and
ReDoc's standalone bundle, kept up to date there), mounted as static files; nothing is
copied into this repository.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/docs-assets"


def _asset_dir() -> Path:
    return Path(str(files("fastapi_offline") / "static"))


def install(app: FastAPI) -> None:
    """Serve the two pages and their assets. The app is built with docs_url=redoc_url=None."""
    app.mount(ASSETS, StaticFiles(directory=_asset_dir()), name="docs-assets")
    openapi_url = app.openapi_url or "/openapi.json"
    title = f"{app.title} - API"

    @app.get("/docs", include_in_schema=False)
    async def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=title,
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon.png",
            # No badge image from validator.swagger.io: the page makes no outside request.
            swagger_ui_parameters={"validatorUrl": None},
        )

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        page = get_redoc_html(
            openapi_url=openapi_url,
            title=title,
            redoc_js_url=f"{ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{ASSETS}/favicon.png",
            with_google_fonts=False,
        )
        # ReDoc's menu always shows Redocly's logo from cdn.redoc.ly; images stay on this host.
        page.headers["Content-Security-Policy"] = "img-src 'self' data:"
        return page
