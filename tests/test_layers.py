"""The import structure of app/, drawn from the code with ast: imports only point down.

docs/design.md draws these layers. Every import counts, those under `if TYPE_CHECKING:`
and inside functions included: a structure that only holds at run time still makes a
maintainer read upwards.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[1] / "app"

# Bottom first. A module may import its own layer's units and the layers below, never above.
LAYERS: list[tuple[str, frozenset[str]]] = [
    # The pure core: standard library and NumPy only (checked below).
    ("core", frozenset({"rating", "matchmaking"})),
    # Shared by everything above: settings, errors, ids, the shapes several packages answer.
    (
        "foundation",
        frozenset(
            {"collection", "config", "errors", "ids", "logs", "metrics", "pagination", "progress", "schemas"}
        ),
    ),
    # The database engine, locks and migrations runner; the embedded servers.
    ("storage", frozenset({"db", "infra"})),
    # One package per idea of the domain: schemas, service (use cases), repository (SQL).
    (
        "domain",
        frozenset(
            {
                "auth",
                "erasure",
                "evaluation",
                "imports",
                "jobs",
                "leaderboards",
                "lobbies",
                "matches",
                "modes",
                "players",
                "queues",
                "seasons",
            }
        ),
    ),
    # What serves the domain: HTTP routers, the ops page, background work, the Python client, and
    # the simulator (its live clock drives the service through the client).
    ("delivery", frozenset({"api", "ui", "background", "client", "simulation"})),
    # Processes: the app factory, the worker supervisor, the command line.
    ("entry", frozenset({"main", "workers", "cli", "__main__"})),
]
LAYER_OF = {unit: rank for rank, (_, units) in enumerate(LAYERS) for unit in units}
CORE = LAYERS[0][1]
# What the core may import from outside app/ (and the standard library).
CORE_THIRD_PARTY = {"numpy"}
# The one compiled module: TrueSkill Through Time's passes (docs/benchmarks.md says why).
COMPILED = {"app.rating.history.kernel": {"numba"}}
# The simulator's modules that reach outside the pure core: the scenario file's reader (the
# service's mode schema), the live clock (the HTTP client) and the command.
SIMULATION_EDGES = {
    "app.simulation.reading",
    "app.simulation.live",
    "app.simulation.live_leaving",
    "app.simulation.commands",
}
# What the rest of the simulator may use of app/: the core, itself, and the ops page's pure
# plot geometry (the charts share its size and tick steps).
SIMULATION_PURE = {"rating", "matchmaking", "simulation"}
SIMULATION_ALSO = {"app.ui.plot"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(APP.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(APP.rglob("*.py"))}


def imported(name: str, path: Path) -> Iterator[str]:
    """Every module `name` imports (absolute names; `from x import y` gives x.y when that
    is a module of app, else x)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                full = f"{source}.{alias.name}"
                yield full if full in MODULES else source


def app_imports() -> dict[str, set[str]]:
    return {
        name: {target for target in imported(name, path) if target == "app" or target.startswith("app.")}
        for name, path in MODULES.items()
    }


GRAPH = app_imports()


def unit(module: str) -> str:
    """The top-level package or module of app/ a module belongs to."""
    return module.split(".")[1] if module.count(".") else module


def layer(module: str) -> str:
    return LAYERS[LAYER_OF[unit(module)]][0]


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node, or a self-loop (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1 or node in graph.get(node, ()):
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_every_unit_of_app_has_a_layer() -> None:
    units = {unit(name) for name in MODULES if name != "app"}
    assert units - set(LAYER_OF) == set(), "place the new package in LAYERS (and in docs/design.md)"
    assert set(LAYER_OF) - units == set(), "LAYERS names a package that no longer exists"


def test_no_import_runs_back_up() -> None:
    upward = [
        f"{source} ({layer(source)}) imports {target} ({layer(target)})"
        for source, targets in GRAPH.items()
        for target in targets
        if source != "app" and target != "app" and LAYER_OF[unit(target)] > LAYER_OF[unit(source)]
    ]
    assert upward == []


def test_no_cycle_among_the_packages_of_app() -> None:
    packages: dict[str, set[str]] = {}
    for source, targets in GRAPH.items():
        if source == "app":
            continue
        packages.setdefault(unit(source), set()).update(
            unit(target) for target in targets if target != "app" and unit(target) != unit(source)
        )
    assert cycles(packages) == []


def test_no_cycle_among_the_modules_of_app() -> None:
    assert cycles(GRAPH) == []


@pytest.mark.parametrize(
    ("kind", "forbidden"),
    [
        # SQL knows nothing of use cases; shapes know nothing of either.
        ("repository", {"service"}),
        ("schemas", {"service", "repository"}),
    ],
)
def test_inside_a_domain_package_repositories_and_schemas_sit_below_services(
    kind: str, forbidden: set[str]
) -> None:
    wrong = [
        f"{source} imports {target}"
        for source, targets in GRAPH.items()
        if source.rpartition(".")[2] == kind
        for target in targets
        if target.rpartition(".")[2] in forbidden
    ]
    assert wrong == []


def test_routers_and_pages_call_services_never_sql() -> None:
    wrong = [
        f"{source} imports {target}"
        for source, targets in GRAPH.items()
        if unit(source) in {"api", "ui"}
        for target in targets
        if target.rpartition(".")[2] == "repository" or unit(target) == "db"
    ]
    assert wrong == []


def test_the_core_imports_only_the_standard_library_and_numpy_and_numba_in_its_kernel() -> None:
    outside = set()
    for name, path in MODULES.items():
        if unit(name) not in CORE:
            continue
        for target in imported(name, path):
            top = target.split(".")[0]
            if top == "app":
                if unit(target) not in CORE:
                    outside.add(f"{name} imports {target}")
            elif (
                top not in sys.stdlib_module_names
                and top not in CORE_THIRD_PARTY | COMPILED.get(name, set())
                and top != "__future__"
            ):
                outside.add(f"{name} imports {target}")
    assert outside == set()


def test_the_simulation_loop_and_report_are_pure_like_the_core() -> None:
    """Everything of app/simulation but its reader, live clock and command imports only the
    standard library, NumPy, the core and itself: the loop runs the service's own matchmaking
    and rating code, never its storage or web layers."""
    outside = set()
    for name, path in MODULES.items():
        if unit(name) != "simulation" or name in SIMULATION_EDGES:
            continue
        for target in imported(name, path):
            top = target.split(".")[0]
            if top == "app":
                if unit(target) not in SIMULATION_PURE and target not in SIMULATION_ALSO:
                    outside.add(f"{name} imports {target}")
            elif top not in sys.stdlib_module_names and top not in CORE_THIRD_PARTY and top != "__future__":
                outside.add(f"{name} imports {target}")
    assert outside == set()
    # app.ui.plot is geometry only: standard library.
    plot = MODULES["app.ui.plot"]
    assert {t.split(".")[0] for t in imported("app.ui.plot", plot)} <= set(sys.stdlib_module_names) | {
        "__future__"
    }


def test_no_module_imports_another_modules_private_names() -> None:
    """A name another module shares is public (no leading underscore): reaching for one that is
    not makes that module's private helpers part of its contract without saying so."""
    private = set()
    for name, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("app")):
                private.update(
                    f"{name} imports {node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.startswith("__")
                )
    assert private == set()
