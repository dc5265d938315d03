"""The repository explains, builds and tests itself: no file points outside it to the
directory of reference material it was made from."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Built from parts so that this file does not match itself.
NEEDLES = (b"../" + b"shared", b"SHARED" + b"_DIR")
# Tool and build output, never part of the repository.
IGNORED = {
    ".git",
    ".venv",
    ".data",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".hypothesis",
}


def repository_files() -> list[Path]:
    found = []
    for path in ROOT.rglob("*"):
        parts = path.relative_to(ROOT).parts
        if any(p in IGNORED or p.endswith(".egg-info") for p in parts) or parts[:2] == ("bench", "results"):
            continue
        if path.is_file():
            found.append(path)
    return found


def test_no_file_refers_to_the_reference_directory() -> None:
    files = repository_files()
    assert ROOT / "README.md" in files and ROOT / "docs" / "api.md" in files
    offenders = [
        f"{path.relative_to(ROOT)}: {needle.decode()}"
        for path in files
        for needle in NEEDLES
        if needle in path.read_bytes()
    ]
    assert offenders == []
