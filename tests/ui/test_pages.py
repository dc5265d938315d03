"""The ops page over HTTP: sign-in, modes with queue depth, leaderboard paging, player plots."""

from __future__ import annotations

import re

import httpx
import pytest

from app.ui.plot import Point, nice_step, plot, thin
from tests.jobs.test_jobs import run_job
from tests.seasons.test_seasons import switch


async def run_season(
    client: httpx.AsyncClient, headers: dict[str, str], mode: str, body: dict[str, str]
) -> None:
    await switch(client, headers, mode, **body)


Headers = dict[str, str]


async def new_key(client: httpx.AsyncClient, admin: Headers, scopes: list[str]) -> str:
    response = await client.post("/v1/keys", json={"name": "ui", "scopes": scopes}, headers=admin)
    assert response.status_code == 201
    return str(response.json()["key"])


async def sign_in(client: httpx.AsyncClient, key: str) -> httpx.Response:
    return await client.post(
        "/ui/login", content=f"key={key}", headers={"content-type": "application/x-www-form-urlencoded"}
    )


async def test_pages_need_a_read_key(client: httpx.AsyncClient, admin_headers: Headers) -> None:
    first = await client.get("/ui")
    assert first.status_code == 303 and first.headers["location"] == "/ui/login"
    form = await client.get("/ui/login")
    assert form.status_code == 200 and 'name="key"' in form.text

    wrong = await sign_in(client, "ssk_deadbeefdeadbeef_nope")
    assert wrong.status_code == 401 and "unknown or revoked API key" in wrong.text
    queue_only = await sign_in(client, await new_key(client, admin_headers, ["matchmaking"]))
    assert queue_only.status_code == 403 and "lacks the &#39;read&#39; scope" in queue_only.text
    assert "set-cookie" not in queue_only.headers
    not_a_form = await client.post("/ui/login", json={"key": "x"})
    assert not_a_form.status_code == 400

    key = await new_key(client, admin_headers, ["read"])
    page = await client.get("/ui", headers={"Authorization": f"Bearer {key}"})  # a bearer header works too
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.headers["cache-control"] == "no-store"
    assert "default-src 'none'" in page.headers["content-security-policy"]


async def test_modes_page_lists_each_mode_with_its_queue_depth(
    client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    for player in ("qa", "qb", "qc"):
        created = await client.post(
            f"/v1/queues/{mode}/tickets", json={"players": [player]}, headers=admin_headers
        )
        assert created.status_code == 201
    page = await client.get("/ui", headers=admin_headers)
    assert page.status_code == 200
    row = re.search(rf'<tr>\s*<td><a href="/ui/modes/{mode}">{mode}</a>.*?</tr>', page.text, re.S)
    assert row is not None, page.text
    assert "3 tickets · 3 players" in row.group(0)


async def test_leaderboard_pages_follow_the_api_order(
    client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    for n in range(57):
        response = await client.put(
            f"/v1/players/lb{n:02d}/ratings/{mode}",
            json={"mu": 20 + (n * 7) % 57 / 5, "sigma": 3.0},
            headers=admin_headers,
        )
        assert response.status_code == 200
    api = (await client.get(f"/v1/leaderboards/{mode}?limit=100", headers=admin_headers)).json()
    order = [e["player_id"] for e in api["entries"]]
    assert len(order) == 57

    first = await client.get(f"/ui/modes/{mode}", headers=admin_headers)
    assert first.status_code == 200
    shown = re.findall(r'<a href="/ui/players/(lb\d\d)\?mode=', first.text)
    assert shown == order[:50]
    assert '<b id="total">57</b>' in first.text
    following = re.search(r'href="(/ui/modes/[^"]+\?cursor=[^"]+)" id="next-page"', first.text)
    assert following is not None
    second = await client.get(following.group(1).replace("&amp;", "&"), headers=admin_headers)
    assert re.findall(r'<a href="/ui/players/(lb\d\d)\?mode=', second.text) == order[50:]
    ranks = re.findall(r'<td class="num">(\d+)</td>\s*<td><a href="/ui/players/', second.text)
    assert ranks == [str(r) for r in range(51, 58)]
    assert 'id="next-page"' not in second.text and 'id="first-page"' in second.text

    # A season switch: the page names the season and links the archived one, which keeps the
    # order above while the live board restarts.
    await run_season(client, admin_headers, mode, {"name": "s1", "reset": "hard"})
    live = await client.get(f"/ui/modes/{mode}", headers=admin_headers)
    assert re.search(r'<strong id="current-season">s1 \(current\)</strong>', live.text)
    link = re.search(
        r'<a href="(/ui/modes/[^"]+\?season=preseason)" class="past-season">preseason</a>', live.text
    )
    assert link is not None
    archived = await client.get(link.group(1), headers=admin_headers)
    assert re.findall(r'<a href="/ui/players/(lb\d\d)\?mode=', archived.text) == order[:50]
    assert 'id="archived-note"' in archived.text and '<b id="total">57</b>' in archived.text
    following = re.search(r'href="([^"]+)" id="next-page"', archived.text)
    assert following is not None and "season=preseason" in following.group(1)
    rest = await client.get(following.group(1).replace("&amp;", "&"), headers=admin_headers)
    assert re.findall(r'<a href="/ui/players/(lb\d\d)\?mode=', rest.text) == order[50:]
    unknown = await client.get(f"/ui/modes/{mode}?season=never", headers=admin_headers)
    assert unknown.status_code == 404 and "no season" in unknown.text

    missing = await client.get("/ui/modes/no-such-mode", headers=admin_headers)
    assert missing.status_code == 404 and "does not exist" in missing.text
    bad_cursor = await client.get(f"/ui/modes/{mode}?cursor=zzz", headers=admin_headers)
    assert bad_cursor.status_code == 422 and "<html" in bad_cursor.text and "cursor" in bad_cursor.text


async def test_player_page_plots_the_history_and_the_smoothed_curve(
    client: httpx.AsyncClient, admin_headers: Headers, mode: str
) -> None:
    for n in range(6):
        body = {
            "match_id": f"{mode}-p{n}",
            "mode": mode,
            "played_at": f"2026-03-{n + 1:02d}T12:00:00Z",
            "teams": [
                {"players": [{"id": "pa"}], "rank": n % 2},
                {"players": [{"id": "pb"}], "rank": 1 - n % 2},
            ],
        }
        assert (await client.post("/v1/matches", json=body, headers=admin_headers)).status_code == 201
    page = await client.get(f"/ui/players/pa?mode={mode}", headers=admin_headers)
    assert page.status_code == 200
    assert '<svg id="rating-plot"' in page.text
    assert re.search(
        r'<path class="line online" data-points="6" d="M[\d.]+,[\d.]+( L[\d.]+,[\d.]+){5}"', page.text
    )
    assert 'class="line smoothed"' not in page.text and "run a <code>smooth</code> job" in page.text
    assert page.text.count(f"{mode}-p") == 6  # the recent matches table

    job = await run_job(client, admin_headers, mode, {"kind": "smooth"})
    assert job["status"] == "done", job
    smoothed = await client.get(f"/ui/players/pa?mode={mode}", headers=admin_headers)
    assert re.search(r'<path class="band smoothed" data-points="6" d="M[^"]+ Z"', smoothed.text)
    # A default smooth converges, and the page says how close it got, beside the curve.
    assert not job["result"]["capped"] and job["result"]["tolerance"] <= 1e-6
    note = re.search(r'<span id="smooth-note" class="muted">([^<]+)</span>', smoothed.text)
    assert note and note.group(1).startswith("converged: within ") and "(asked 1e-06)" in note.group(1)
    capped = await run_job(client, admin_headers, mode, {"kind": "smooth", "iterations": 1})
    assert capped["result"]["capped"] and capped["result"]["iterations"] == 1
    page = await client.get(f"/ui/players/pa?mode={mode}", headers=admin_headers)
    note = re.search(r'<span id="smooth-note" class="muted">([^<]+)</span>', page.text)
    assert note and note.group(1).startswith("stopped by the cap of 1 sweeps before reaching 1e-06")

    search = await client.get(f"/ui/players?id=pa&mode={mode}", headers=admin_headers)
    assert search.status_code == 303 and search.headers["location"] == f"/ui/players/pa?mode={mode}"
    hostile = await client.get("/ui/players/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E", headers=admin_headers)
    assert hostile.status_code == 404 and hostile.headers["content-type"].startswith("text/html")
    assert "<img src=x" not in hostile.text and "&lt;img src=x onerror=alert(1)&gt;" in hostile.text


def at(day: int) -> Point:
    import datetime as dt

    return Point(dt.datetime(2026, 1, 1, tzinfo=dt.UTC) + dt.timedelta(days=day), 25.0 + day, 8.0 - day / 10)


def test_plot_geometry_stays_in_the_frame_and_brackets_every_band() -> None:
    drawn = plot([("a", "online", [at(d) for d in range(30)]), ("b", "smoothed", [])])
    assert drawn is not None and [c.css for c in drawn.curves] == ["online"]
    numbers = [float(v) for v in re.findall(r"[\d.]+", drawn.curves[0].band + drawn.curves[0].line)]
    xs, ys = numbers[0::2], numbers[1::2]
    assert min(xs) >= drawn.left - 1e-9 and max(xs) <= drawn.right + 1e-9
    assert min(ys) >= drawn.top - 1e-9 and max(ys) <= drawn.bottom + 1e-9
    labels = [float(t.label) for t in drawn.y_ticks]
    assert labels[0] <= 25.0 - 8.0 and labels[-1] >= 54.0 + 5.1
    assert plot([("a", "online", [])]) is None
    single = plot([("a", "online", [at(0)])])
    assert single is not None and [t.label for t in single.x_ticks] == ["2026-01-01"]
    assert single.x_ticks[0].at == pytest.approx((single.left + single.right) / 2)


def burst(seconds: list[int]) -> list[Point]:
    import datetime as dt

    start = dt.datetime(2026, 5, 4, 9, 30, tzinfo=dt.UTC)
    return [Point(start + dt.timedelta(seconds=s), 25.0 + i, 5.0) for i, s in enumerate(seconds)]


def xs_of(path: str) -> list[float]:
    return [float(x) for x in re.findall(r"[ML]([\d.]+),", path)]


def test_matches_seconds_apart_get_their_own_x_and_times_of_day_as_labels() -> None:
    drawn = plot([("a", "online", burst([0, 2, 2, 5, 9, 3600, 7200]))])
    assert drawn is not None
    xs = xs_of(drawn.curves[0].line)
    # Evenly spread by order, even the two posted in the same second.
    assert len(set(xs)) == 7 and xs == sorted(xs)
    assert xs[0] == pytest.approx(drawn.left) and xs[-1] == pytest.approx(drawn.right)
    labels = [t.label for t in drawn.x_ticks]
    assert len(labels) == len(set(labels)) >= 3
    assert all(re.fullmatch(r"\d\d:\d\d(:\d\d)?", label) for label in labels), labels
    assert labels[0] == "09:30:00" and labels[-1] == "11:30:00"  # minutes repeat: seconds shown
    assert drawn.x_caption == "match order; time on 2026-05-04 (UTC)"


def test_days_apart_are_dates_and_days_repeating_add_the_time() -> None:
    drawn = plot([("a", "online", [at(d) for d in range(30)])])
    assert drawn is not None
    labels = [t.label for t in drawn.x_ticks]
    assert labels[0] == "2026-01-01" and labels[-1] == "2026-01-30" and len(set(labels)) == 5
    # Most points in one burst, one a month later: ticks share a day, so they carry the time.
    crowded = plot([("a", "online", [*burst(list(range(0, 600, 60))), at(40)])])
    assert crowded is not None
    labels = [t.label for t in crowded.x_ticks]
    assert len(labels) == len(set(labels)) and all(re.fullmatch(r"\d\d-\d\d \d\d:\d\d", x) for x in labels)


@pytest.mark.parametrize(("span", "step"), [(10.0, 2.0), (37.0, 10.0), (0.3, 0.1), (1000.0, 200.0)])
def test_ticks_use_one_two_five_steps(span: float, step: float) -> None:
    assert nice_step(span, 5) == pytest.approx(step)


def test_long_histories_are_thinned_but_keep_the_last_point() -> None:
    points = [at(d) for d in range(4001)]
    kept = thin(points, 1500)
    assert len(kept) <= 1501 and kept[0] is points[0] and kept[-1] is points[-1]
