"""/docs and /redoc render their operation lists in chromium with the network cut.

Every request chromium makes goes through a proxy on a dead port, except loopback (which
chromium never proxies), and every host name but 127.0.0.1 resolves to nothing. So a page
that needs a CDN renders blank; these render from the service's own files.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest
from selenium import webdriver
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.wait import WebDriverWait

from tests.ui.chromium import start_chromium


def _dead_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def offline_browser() -> Iterator[webdriver.Chrome]:
    driver = start_chromium(
        f"--proxy-server=http://127.0.0.1:{_dead_port()}",
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        network_log=True,
    )
    try:
        yield driver
    finally:
        driver.quit()


def _operations(base: str) -> int:
    document = httpx.get(f"{base}/openapi.json", timeout=30).json()
    methods = {"get", "put", "post", "delete", "patch"}
    return sum(1 for item in document["paths"].values() for method in item if method in methods)


def _hosts_requested(browser: webdriver.Chrome) -> set[str]:
    """The hosts of the page's requests, less those the browser itself blocked (the page's
    Content-Security-Policy): those never leave it."""
    hosts: dict[str, str] = {}
    blocked: set[str] = set()
    for entry in browser.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        params = message["params"]
        if message["method"] == "Network.requestWillBeSent":
            url = urlsplit(params["request"]["url"])
            if url.scheme in ("http", "https", "ws", "wss"):
                hosts[params["requestId"]] = url.hostname or ""
        elif message["method"] == "Network.loadingFailed" and params.get("blockedReason"):
            blocked.add(params["requestId"])
    return {host for request, host in hosts.items() if request not in blocked}


def _count(browser: webdriver.Chrome, selector: str, expected: int) -> int:
    """How many elements match once the count reaches `expected` (or after 60 s, what it is)."""
    with contextlib.suppress(TimeoutException):  # the caller's assertion says what was rendered
        WebDriverWait(browser, 60).until(
            lambda b: len(b.find_elements(By.CSS_SELECTOR, selector)) >= expected
        )
    return len(browser.find_elements(By.CSS_SELECTOR, selector))


def test_the_network_is_cut(offline_browser: webdriver.Chrome) -> None:
    # The guard of the two tests below: a page from outside does not load.
    with pytest.raises(WebDriverException, match="net::ERR_"):
        offline_browser.get("https://cdn.jsdelivr.net/npm/swagger-ui-dist@5/swagger-ui.css")
    offline_browser.get_log("performance")  # drop this page's requests


def test_swagger_ui_lists_every_operation_offline(
    live_server: str, offline_browser: webdriver.Chrome
) -> None:
    operations = _operations(live_server)
    offline_browser.get(f"{live_server}/docs")
    assert _count(offline_browser, ".opblock", operations) == operations
    assert offline_browser.find_elements(By.CSS_SELECTOR, ".opblock-summary-path")
    assert _hosts_requested(offline_browser) == {"127.0.0.1"}


def test_redoc_lists_every_operation_offline(live_server: str, offline_browser: webdriver.Chrome) -> None:
    operations = _operations(live_server)
    offline_browser.get(f"{live_server}/redoc")
    assert _count(offline_browser, '[data-section-id^="operation/"]', operations) == operations
    assert _hosts_requested(offline_browser) == {"127.0.0.1"}
