"""The ops page in a real headless Chromium: sign in, open a player, see the plot.

Runs Debian's chromium and chromedriver (`make test` installs them when missing) against
a live uvicorn process on the test database.
"""

from __future__ import annotations

import io
import os
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from PIL import Image
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.wait import WebDriverWait

from tests.conftest import ADMIN_KEY
from tests.ui.chromium import start_chromium

BLUE = (0x25, 0x63, 0xEB)  # the online line
ORANGE = (0xEA, 0x58, 0x0C)  # the smoothed line


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    driver = start_chromium()
    try:
        yield driver
    finally:
        driver.quit()


def shown(browser: webdriver.Chrome, by: str, value: str) -> WebElement:
    """The element once the page has it (the suite's database holds many modes: pages take a moment)."""
    return WebDriverWait(browser, 30).until(expected_conditions.presence_of_element_located((by, value)))


def near(pixel: tuple[int, ...], colour: tuple[int, int, int], tolerance: int = 40) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(pixel[:3], colour, strict=True))


def seed_history(base: str, mode: str) -> None:
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    with httpx.Client(base_url=base, headers=admin, timeout=30) as http:
        assert http.put(f"/v1/modes/{mode}", json={}).status_code in (200, 201)
        for n in range(40):
            body = {
                "match_id": f"{mode}-{n}",
                "mode": mode,
                "played_at": f"2026-0{1 + n // 20}-{1 + n % 20:02d}T10:00:00Z",
                "teams": [
                    {"players": [{"id": "hero"}], "rank": 0 if n % 4 else 1},
                    {"players": [{"id": f"foe{n % 5}"}], "rank": 1 if n % 4 else 0},
                ],
            }
            assert http.post("/v1/matches", json=body).status_code == 201
        job = http.post(f"/v1/modes/{mode}/jobs", json={"kind": "smooth"}).json()["job_id"]
        deadline = time.monotonic() + 60
        while (status := http.get(f"/v1/jobs/{job}").json()["status"]) not in ("done", "failed"):
            assert time.monotonic() < deadline, "the smooth job did not finish"
            time.sleep(0.2)
        assert status == "done"


def test_player_page_draws_the_rating_plot_in_chromium(
    live_server: str, browser: webdriver.Chrome, tmp_path: Path
) -> None:
    mode = f"ui-{int(time.time() * 1000) % 10**9}"
    seed_history(live_server, mode)

    browser.get(f"{live_server}/ui")
    assert browser.current_url.endswith("/ui/login")
    browser.find_element(By.ID, "key").send_keys(ADMIN_KEY)
    browser.find_element(By.ID, "sign-in").click()
    # A click starts a navigation; wait for the next page's element rather than race it.
    assert shown(browser, By.ID, "modes").is_displayed()
    shown(browser, By.LINK_TEXT, mode).click()
    assert shown(browser, By.ID, "leaderboard").is_displayed()
    shown(browser, By.LINK_TEXT, "hero").click()

    plot = shown(browser, By.ID, "rating-plot")
    assert plot.is_displayed() and plot.size["width"] >= 700 and plot.size["height"] >= 300
    lines = {p.get_attribute("class"): p for p in plot.find_elements(By.TAG_NAME, "path")}
    assert {"band online", "line online", "band smoothed", "line smoothed"} <= set(lines)
    assert lines["line online"].get_attribute("data-points") == "40"

    shot = tmp_path / "player.png"
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    if os.environ.get("UI_SCREENSHOT"):
        Path(os.environ["UI_SCREENSHOT"]).write_bytes(shot.read_bytes())
    image = Image.open(io.BytesIO(plot.screenshot_as_png)).convert("RGB")
    pixels = list(image.get_flattened_data())
    blue = sum(near(p, BLUE) for p in pixels)
    orange = sum(near(p, ORANGE) for p in pixels)
    # The bands are the line colours at 18% over white: lighter, but clearly tinted.
    tinted = sum(1 for p in pixels if p[2] - p[0] > 25 or p[0] - p[2] > 25)
    assert blue > 100, f"only {blue} pixels of the online line were drawn"
    assert orange > 100, f"only {orange} pixels of the smoothed line were drawn"
    assert tinted > 0.05 * len(pixels), f"the sigma bands cover only {tinted} of {len(pixels)} pixels"
