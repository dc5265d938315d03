"""The compiled kernel's cache follows every source the kernel is compiled from."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import app
from app.rating.history import kernel

# A fresh interpreter rates a small history through the kernel, and through Game alone (the
# Python functions as they are now), and prints both with where it found the package.
RATE = """
import json
import app
from app.rating.history import History, kernel

composition = [[["a"], ["b"]], [["b"], ["c"]], [["a"], ["c"]]]
compiled = History(composition, gamma=0.0)
python = History(composition, gamma=0.0)
python._flat.general[:] = True  # every game through Game, in Python
for history in (compiled, python):
    history.iteration()
mu = [h.learning_curves()["a"][-1][1].mu for h in (compiled, python)]
print(json.dumps({"package": app.__file__, "cache": str(kernel.cache_directory()), "mu": mu}))
"""


def rate_in_a_fresh_process(root: Path) -> dict[str, object]:
    environment = {key: value for key, value in os.environ.items() if key != "NUMBA_CACHE_DIR"}
    environment["PYTHONPATH"] = str(root)
    done = subprocess.run(
        [sys.executable, "-c", RATE], cwd=root, env=environment, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


@pytest.mark.slow
def test_an_edit_to_a_compiled_function_reaches_the_kernel_in_the_next_process(tmp_path: Path) -> None:
    """A copy of the package, rated twice in fresh processes with an edit to
    truncation._win_moments (a win's W halved) in between: the second process's kernel runs
    the edited code, as Python does, where numba's own cache (keyed by kernel.py alone)
    would have handed back the first process's compiled code."""
    package = Path(app.__file__).parent
    shutil.copytree(package, tmp_path / "app", ignore=shutil.ignore_patterns("__pycache__"))
    before = rate_in_a_fresh_process(tmp_path)
    assert Path(str(before["package"])).is_relative_to(tmp_path)
    first_cache = Path(str(before["cache"]))
    assert first_cache.is_relative_to(tmp_path) and any(first_cache.rglob("*.nbi"))

    source = tmp_path / "app" / "rating" / "truncation.py"
    text = source.read_text()
    assert text.count("    w = v * (v + x)\n") == 1
    source.write_text(text.replace("    w = v * (v + x)\n", "    w = 0.5 * v * (v + x)\n"))

    after = rate_in_a_fresh_process(tmp_path)
    compiled_before, python_before = before["mu"]  # type: ignore[misc]
    compiled_after, python_after = after["mu"]  # type: ignore[misc]
    assert compiled_before == pytest.approx(python_before, abs=1e-12)
    assert python_after != pytest.approx(python_before, abs=1e-6)
    assert compiled_after == pytest.approx(python_after, abs=1e-12)
    assert Path(str(after["cache"])) != first_cache
    assert not first_cache.exists()  # the older sources' cache was removed


def test_the_cache_key_covers_every_module_a_compiled_function_comes_from() -> None:
    modules = {function.__module__ for function in kernel.COMPILED_FUNCTIONS}
    assert modules <= {module.__name__ for module in kernel.COMPILED_MODULES}
    assert kernel.NEGLIGIBLE_W is kernel.game.NEGLIGIBLE_W  # a constant compiled in, from game.py
