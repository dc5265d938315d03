"""Scenario files: every key read and checked, every error one line naming the key."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from app.modes.schemas import ModeUpdate
from app.simulation.checked import ScenarioError
from app.simulation.reading import MODE_KEYS, MODE_NOT_YET, read, scenario_of

SCENARIOS = Path(__file__).resolve().parents[2] / "docs" / "scenarios"


def base() -> dict[str, Any]:
    return {
        "duration": "2h",
        "population": {"size": 100},
        "arrivals": {"players_per_second": 0.5},
        "mode": {"teams": 2, "team_size": 2},
    }


def with_(path: str, value: Any) -> dict[str, Any]:
    data = base()
    *tables, key = path.split(".")
    target = data
    for name in tables:
        target = target.setdefault(name, {})
    target[key] = value
    return data


def error_of(data: dict[str, Any]) -> str:
    with pytest.raises(ScenarioError) as raised:
        scenario_of(data, "test")
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_a_minimal_scenario_takes_the_service_defaults_for_a_new_mode() -> None:
    scenario = scenario_of(base(), "minimal")
    assert scenario.name == "minimal"
    assert scenario.duration_seconds == 7200
    mode = scenario.mode
    assert (mode.name, mode.teams, mode.team_size) == ("sim-minimal", 2, 2)
    # A new mode's defaults (app.modes.service.put_mode): beta = sigma/2, tau = sigma/100.
    assert mode.beta == pytest.approx(25 / 6)
    assert mode.tau == pytest.approx(25 / 300)
    assert (mode.quality_start, mode.quality_floor, mode.relax_seconds) == (0.4, 0.05, 60.0)
    assert mode.latency_rule() is None
    # The game follows the mode's model unless the scenario says otherwise.
    assert (scenario.truth.beta, scenario.truth.draw_probability) == (mode.beta, mode.draw_probability)
    assert scenario.parties == {1: 1.0}


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("30m", 1800), ("72h", 259200), ("3d", 259200), (45, 45)]
)
def test_durations_take_a_unit(text: object, seconds: float) -> None:
    assert scenario_of(with_("duration", text), "d").duration_seconds == seconds


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("population.size", "many", "population.size: must be a whole number, got 'many'"),
        ("population.size", 1, "population.size: must be at least 2, got 1"),
        ("population.colour", "red", "population.colour: unknown key"),
        ("arrivals.players_per_second", -1, "arrivals.players_per_second: must be at least 0, got -1"),
        ("arrivals.daily_curve", [1.0] * 23, "arrivals.daily_curve: must be 24 factors"),
        ("sessions.match_seconds", 0, "sessions.match_seconds: must be above 0, got 0"),
        ("sessions.fixed", "yes", "sessions.fixed: must be true or false, got 'yes'"),
        ("mode.quality_start", 2, "mode.quality_start: Input should be less than or equal to 1"),
        ("mode.quality_floor", 0.9, "mode.quality_floor: 0.9 must not exceed quality_start (0.4)"),
        ("mode.teams", 1, "mode.teams: Input should be greater than or equal to 2"),
        ("mode.speed", 3, "mode.speed: unknown key"),
        ("mode.max_latency_relaxed_ms", 100, "mode.max_latency_relaxed_ms: needs max_latency_ms"),
        ("mode.max_latency_ms", 80, "mode.max_latency_ms: a latency rule needs [[regions]]"),
        ("truth.draw_probability", 1.0, "truth.draw_probability: must be below 1, got 1"),
        ("matchmaker.max_matches", 20000, "matchmaker.max_matches: must be at most 10000, got 20000"),
        ("parties.3", 0.5, "parties.3: party sizes are whole numbers from 1 to mode.team_size (2)"),
        ("duration", "soon", "duration: must be seconds or a string such as"),
        ("seed", -1, "seed: must be at least 0, got -1"),
        ("extra", 1, "extra: unknown key"),
        ("mode.accept_timeout_s", 0, "mode.accept_timeout_s: Input should be greater than or equal to 1"),
        ("mode.accept_timeout_s", 301, "mode.accept_timeout_s: Input should be less than or equal to 300"),
        (
            "sessions.decline_probability",
            0.1,
            "sessions.decline_probability: needs the ready check (set mode.accept_timeout_s)",
        ),
    ],
)
def test_a_bad_value_is_one_line_naming_its_key(path: str, value: Any, expected: str) -> None:
    assert error_of(with_(path, value)).startswith(expected)


@pytest.mark.parametrize(
    ("value", "expected"), [(-0.1, "at least 0"), (1.5, "at most 1"), ("often", "a finite")]
)
def test_decline_probability_is_a_chance_under_the_ready_check(value: Any, expected: str) -> None:
    data = with_("mode.accept_timeout_s", 10)
    data["sessions"] = {"decline_probability": value}
    message = error_of(data)
    assert message.startswith("sessions.decline_probability: ")
    assert expected in message
    data["sessions"] = {"decline_probability": 0.25}
    read_back = scenario_of(data, "ready")
    assert read_back.sessions.decline_probability == 0.25
    assert read_back.mode.accept_timeout_s == 10.0
    assert scenario_of(base(), "none").mode.accept_timeout_s is None


@pytest.mark.parametrize(
    ("value", "expected"), [(-0.1, "at least 0"), (1.5, "at most 1"), ("often", "a finite")]
)
def test_leave_probability_is_a_chance_with_or_without_backfill(value: Any, expected: str) -> None:
    data = base()
    data["sessions"] = {"leave_probability": value}
    message = error_of(data)
    assert message.startswith("sessions.leave_probability: ")
    assert expected in message
    data["sessions"] = {"leave_probability": 0.05}
    assert scenario_of(data, "leaving").sessions.leave_probability == 0.05
    assert scenario_of(base(), "staying").sessions.leave_probability == 0.0


def test_a_missing_table_or_key_is_named() -> None:
    data = base()
    del data["arrivals"]
    assert error_of(data) == "arrivals: missing (a table)"
    data = base()
    del data["population"]["size"]
    assert error_of(data) == "population.size: missing (a whole number)"


def test_regions_are_checked_against_each_other() -> None:
    region = {"name": "eu", "share": 1.0, "latency_ms": 30, "others": {"us": 80}}
    data = base()
    data["regions"] = [region]
    assert error_of(data) == "regions[0].others.us: not another region of the scenario (eu)"
    data["regions"] = [dict(region, others={}), dict(region, others={})]
    assert error_of(data) == "regions[1].name: 'eu' is listed twice"


def test_population_takes_a_skill_distribution_or_a_mode_not_both() -> None:
    data = with_("population.from_mode", "ranked")
    assert scenario_of(data, "m").population.from_mode == "ranked"
    data["population"]["skill"] = {"distribution": "uniform", "low": 0, "high": 50}
    assert error_of(data) == "population.skill: give either skill or from_mode, not both"
    uniform = with_("population.skill", {"distribution": "uniform", "low": 10, "high": 5})
    assert error_of(uniform) == "population.skill.high: must be above 10, got 5"


def test_every_mode_setting_of_the_service_is_modelled_or_refused_by_name() -> None:
    """A mode setting the service gains (ready checks, ...) must be modelled by the virtual
    clock, or refused by name: this fails until one of the two is done."""
    assert MODE_KEYS - {"name"} - set(ModeUpdate.model_fields) == set()
    assert set(ModeUpdate.model_fields) - MODE_KEYS - set(MODE_NOT_YET) == set()


ROLES = {"tank": 1, "damage": 1}


def with_roles(**population: Any) -> dict[str, Any]:
    data = with_("mode.roles", ROLES)
    data["population"].update(population)
    return data


def test_a_mode_with_roles_takes_the_players_preferences_and_its_shape_is_the_services() -> None:
    listed = [{"accepts": ["damage"], "share": 0.6}, {"accepts": ["tank", "damage"], "share": 0.4}]
    scenario = scenario_of(with_roles(roles=listed, avoid_probability=0.1, avoid_list=3), "r")
    composition = scenario.mode.shape.composition
    assert composition is not None
    assert (composition.roles, composition.counts) == (("tank", "damage"), (1, 1))
    assert [(r.accepts, r.share) for r in scenario.population.roles] == [
        (("damage",), 0.6),
        (("tank", "damage"), 0.4),
    ]
    assert (scenario.population.avoid_probability, scenario.population.avoid_list) == (0.1, 3)
    sized = scenario_of(
        with_("mode.teams_min", 2) | {"mode": {"teams": 8, "team_size": 2, "teams_min": 4}}, "s"
    )
    assert (sized.mode.shape.minimum, sized.mode.shape.players, sized.mode.players_per_match) == (8, 16, 16)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            with_roles(),
            "population.roles: missing: mode.roles needs every player's role preferences (tank, damage)",
        ),
        (
            with_("population.roles", [{"accepts": ["tank"], "share": 1.0}]),
            "population.roles: the mode has no roles (set mode.roles)",
        ),
        (
            with_roles(roles={"tank": 1}),
            "population.roles: must be an array of tables ([[population.roles]])",
        ),
        (
            with_roles(roles=[{"accepts": ["tank", "healer"], "share": 1.0}]),
            "population.roles[0].accepts: unknown role 'healer' (the mode's roles: tank, damage)",
        ),
        (
            with_roles(roles=[{"accepts": "tank", "share": 1.0}]),
            "population.roles[0].accepts: must be a list of the mode's roles (tank, damage), each once,"
            " got 'tank'",
        ),
        (
            with_roles(roles=[{"accepts": ["tank"], "share": 1.0, "weight": 2}]),
            "population.roles[0].weight: unknown key",
        ),
        (
            with_roles(roles=[{"accepts": ["tank"]}]),
            "population.roles[0].share: missing (a number)",
        ),
        (
            with_roles(roles=[{"accepts": ["damage"], "share": 1.0}, {"accepts": ["tank"], "share": 0.0}]),
            "population.roles: nobody accepts 'tank', so no match can form",
        ),
        (
            with_("population.avoid_probability", 1.5),
            "population.avoid_probability: must be at most 1, got 1.5",
        ),
        (with_("population.avoid_list", 101), "population.avoid_list: must be at most 100, got 101"),
        (
            with_("mode.roles", {"tank": 1, "damage": 2}),
            "mode.roles: the roles add up to 3 players, not team_size 2",
        ),
        (with_("mode.teams_min", 3), "mode.teams_min: teams_min (3) is above teams (2)"),
        (with_("mode.team_size_min", 3), "mode.team_size_min: team_size_min (3) is above team_size (2)"),
        (
            with_("mode.team_size_min", 1)
            | {"mode": {"teams": 2, "team_size": 2, "team_size_min": 1, "roles": ROLES}},
            "mode.team_size_min: a composition fixes the team size: team_size_min must equal team_size",
        ),
    ],
)
def test_the_keys_of_roles_sizes_and_avoid_lists_are_checked_by_name(
    data: dict[str, Any], expected: str
) -> None:
    assert error_of(data).startswith(expected)


def test_the_shipped_scenarios_read(tmp_path: Path) -> None:
    for path in sorted(SCENARIOS.glob("*.toml")):
        scenario = read(path)
        assert scenario.name == path.stem
        assert scenario.population.size >= 1000
    broken = tmp_path / "broken.toml"
    broken.write_text("duration = [", encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"^not TOML: "):
        read(broken)
    with pytest.raises(ScenarioError, match=r"^cannot read "):
        read(tmp_path / "missing.toml")


def test_the_documented_example_is_a_valid_scenario_using_every_table() -> None:
    guide = (SCENARIOS.parent / "simulator.md").read_text(encoding="utf-8")
    (example,) = re.findall(r"```toml\n(.*?)```", guide, flags=re.DOTALL)
    scenario = scenario_of(tomllib.loads(example), "example")
    assert scenario.population.size == 3000
    assert scenario.arrivals.daily_curve is not None
    assert scenario.parties == {1: 0.8, 2: 0.15, 5: 0.05}
    assert scenario.mode.shape.composition is not None
    assert len(scenario.population.roles) >= 3
    assert scenario.population.avoid_probability > 0
    assert [region.name for region in scenario.regions] == ["eu", "na"]
    assert scenario.mode.latency_rule() is not None
    assert scenario.truth.draw_probability == 0.1
