"""The ops page in a real headless Chromium: sign in, open a player, see the plot.

Runs Debian's chromium and chromedriver (`make test` installs them when missing) against
a live uvicorn process on the test database.
"""

from __future__ import annotations

import io
import os
import re
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


def seed_burst(base: str, mode: str) -> None:
    """Matches posted seconds apart (the server stamps played_at), then a season switch."""
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    with httpx.Client(base_url=base, headers=admin, timeout=30) as http:
        assert http.put(f"/v1/modes/{mode}", json={}).status_code in (200, 201)
        for n in range(12):
            body = {
                "match_id": f"{mode}-b{n}",
                "mode": mode,
                "teams": [
                    {"players": [{"id": f"{mode}-a-rather-long-player-identifier"}], "rank": n % 3 and 1},
                    {"players": [{"id": f"foe{n % 4}"}], "rank": 0 if n % 3 else 1},
                ],
            }
            assert http.post("/v1/matches", json=body).status_code == 201
        accepted = http.post(f"/v1/modes/{mode}/seasons", json={"name": "s1", "reset": "soft"})
        assert accepted.status_code == 202
        deadline = time.monotonic() + 60
        while (status := http.get(accepted.headers["Location"]).json()["status"]) not in ("done", "failed"):
            assert time.monotonic() < deadline, "the season job did not finish"
            time.sleep(0.2)
        assert status == "done"


def overflow(browser: webdriver.Chrome) -> tuple[int, int]:
    """(page width, window width): the page scrolls sideways when the first exceeds the second."""
    width, inner = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    return int(width), int(inner)


@pytest.mark.parametrize("width", [1280, 390])
def test_every_page_fits_the_window_and_the_plot_spreads_a_burst(
    live_server: str, browser: webdriver.Chrome, width: int
) -> None:
    mode = f"ui-w{width}-{int(time.time() * 1000) % 10**9}"
    seed_burst(live_server, mode)
    player = f"{mode}-a-rather-long-player-identifier"
    browser.set_window_size(width, 900)
    browser.get(f"{live_server}/ui/login")
    shown(browser, By.ID, "key").send_keys(ADMIN_KEY)
    browser.find_element(By.ID, "sign-in").click()
    shown(browser, By.ID, "modes")
    assert browser.execute_script("return window.innerWidth") <= width
    pages = {
        "modes": ("/ui", "modes"),
        "leaderboard": (f"/ui/modes/{mode}", "leaderboard"),
        "past season": (f"/ui/modes/{mode}?season=preseason", "leaderboard"),
        "player": (f"/ui/players/{player}?mode={mode}", "rating-plot"),
    }
    for name, (path, element) in pages.items():
        browser.get(live_server + path)
        shown(browser, By.ID, element)
        page_width, inner = overflow(browser)
        assert page_width <= inner, f"{name} at {width} px: the page is {page_width} px wide in {inner}"

    # The season is on the leaderboard page, with the past one a link away.
    browser.get(f"{live_server}/ui/modes/{mode}")
    assert shown(browser, By.ID, "current-season").text == "s1 (current)"
    browser.find_element(By.LINK_TEXT, "preseason").click()
    assert "Final standings of preseason" in shown(browser, By.ID, "archived-note").text
    assert browser.find_elements(By.LINK_TEXT, player)

    # Twelve matches within seconds: twelve distinct x positions, and time-of-day labels.
    browser.get(f"{live_server}/ui/players/{player}?mode={mode}")
    plot = shown(browser, By.ID, "rating-plot")
    line = next(
        p for p in plot.find_elements(By.TAG_NAME, "path") if p.get_attribute("class") == "line online"
    )
    assert line.get_attribute("data-points") == "12"
    xs = [float(x) for x in re.findall(r"[ML]([\d.]+),", line.get_attribute("d") or "")]
    assert len(set(xs)) == 12 and xs == sorted(xs)
    box = line.rect
    assert box["width"] > 0.6 * plot.rect["width"], "the history is squeezed into a narrow strip"
    labels = [t.text for t in plot.find_elements(By.CSS_SELECTOR, "text.x-tick")]
    assert len(labels) >= 2 and len(set(labels)) == len(labels), labels
    assert all(re.fullmatch(r"\d\d:\d\d(:\d\d(\.\d{3})?)?", label) for label in labels), labels
    assert "match order; time on " in shown(browser, By.ID, "x-caption").text
    assert plot.rect["width"] <= browser.execute_script("return window.innerWidth")


def seed_tiers(base: str, mode: str) -> dict[str, int]:
    """A mode with drift, placements and four tiers, and matches that spread its players over
    them: the tier counts the API answers."""
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    tiers = [{"name": "bronze", "min": 0}, {"name": "silver", "min": 1000}, {"name": "gold", "min": 1400},
             {"name": "diamond", "min": 1800}]  # fmt: skip
    settings = {"tiers": tiers, "display_scale": 100, "display_offset": 1000, "drift_per_day": 0.05,
                "placement_matches": 2, "demotion_margin": 50}  # fmt: skip
    with httpx.Client(base_url=base, headers=admin, timeout=30) as http:
        assert http.put(f"/v1/modes/{mode}", json=settings).status_code == 200
        for n in range(30):
            a, b = n % 6, (n * 5 + 1) % 6
            if a == b:
                continue
            first_wins = a < b
            body = {
                "match_id": f"{mode}-t{n}",
                "mode": mode,
                "played_at": f"2026-01-{1 + n % 28:02d}T10:00:00Z",
                "teams": [
                    {"players": [{"id": f"{mode}-p{a}"}], "rank": 0 if first_wins else 1},
                    {"players": [{"id": f"{mode}-p{b}"}], "rank": 1 if first_wins else 0},
                ],
            }
            assert http.post("/v1/matches", json=body).status_code == 201
        counts = http.get(f"/v1/modes/{mode}/tiers").json()["tiers"]
    return {t["name"]: t["players"] for t in counts}


@pytest.mark.parametrize("width", [1280, 390])
def test_the_mode_page_charts_the_tiers_and_the_player_page_shows_the_rank(
    live_server: str, browser: webdriver.Chrome, width: int
) -> None:
    mode = f"ui-t{width}-{int(time.time() * 1000) % 10**9}"
    counts = seed_tiers(live_server, mode)
    assert sum(counts.values()) == 6 and len([c for c in counts.values() if c]) >= 2, counts
    browser.set_window_size(width, 900)
    browser.get(f"{live_server}/ui/login")
    shown(browser, By.ID, "key").send_keys(ADMIN_KEY)
    browser.find_element(By.ID, "sign-in").click()
    shown(browser, By.ID, "modes")

    browser.get(f"{live_server}/ui/modes/{mode}")
    chart = shown(browser, By.ID, "tier-chart")
    page_width, inner = overflow(browser)
    assert page_width <= inner, f"the mode page at {width} px is {page_width} px wide in {inner}"
    assert chart.rect["width"] <= inner
    bars = chart.find_elements(By.CSS_SELECTOR, "rect.tier-bar")
    assert [b.get_attribute("data-tier") for b in bars] == ["bronze", "silver", "gold", "diamond"]
    assert {b.get_attribute("data-tier"): int(b.get_attribute("data-players") or -1) for b in bars} == counts
    # Drawn heights follow the counts: the fullest tier is the tallest, an empty one is flat.
    heights = {b.get_attribute("data-tier"): b.rect["height"] for b in bars}
    fullest = max(counts, key=lambda name: counts[name])
    assert heights[fullest] == max(heights.values()) > 20
    assert all(heights[name] < 1 for name, count in counts.items() if count == 0)
    teal = sum(
        near(p, (0x0D, 0x94, 0x88))
        for p in Image.open(io.BytesIO(chart.screenshot_as_png)).convert("RGB").get_flattened_data()
    )
    assert teal > 200, f"only {teal} pixels of bars were drawn"

    browser.get(f"{live_server}/ui/players/{mode}-p0?mode={mode}")
    assert shown(browser, By.ID, "tier").text in counts
    assert shown(browser, By.ID, "placement").text == "2 of 2"
    drift = shown(browser, By.ID, "drift").text
    assert re.fullmatch(r"sigma [\d.]+ → [\d.]+ over [\d.]+ days", drift), drift
    page_width, inner = overflow(browser)
    assert page_width <= inner, f"the player page at {width} px is {page_width} px wide in {inner}"
