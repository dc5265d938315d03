"""Where the evaluation commands and benchmarks find their datasets.

A directory named by `--datasets DIR`, else by the `DATASETS_DIR` environment variable,
holds one folder per set (`atp/`, `football/`, `chess/`, `f1/`, `chgk/`), laid out as
docs/datasets.md describes. The sets whose licences allow it ship in tests/data/datasets and
are read from there when the named directory lacks them (or none is named). ATP and the
rating.chgk.info results are never shipped: they need a named directory.
"""

from __future__ import annotations

import os
from pathlib import Path

ENVIRONMENT = "DATASETS_DIR"
SHIPPED = Path(__file__).resolve().parents[2] / "tests" / "data" / "datasets"

# The files each source reads, relative to the datasets directory.
FILES: dict[str, tuple[str, ...]] = {
    "atp": ("atp/atp_singles_1968_2024.csv.gz",),
    "chess": ("chess/small_chessbase_1850_1855.csv",),
    "football": ("football/international_results.csv",),
    "chgk-ec": ("chgk/ec_rosters.csv", "chgk/ec_chgk_results.csv"),
    "chgk-rating": ("chgk/rating_tournaments.csv", "chgk/rating_team_results.csv.gz"),
}
NOT_SHIPPED = frozenset({"atp", "chgk-rating"})


class DatasetMissing(Exception):
    """A dataset a command needs is not where it was told to look; the message is one line."""


def named(flag: Path | None) -> Path | None:
    """The directory the user named: the flag first, then the environment variable."""
    if flag is not None:
        return flag
    value = os.environ.get(ENVIRONMENT, "").strip()
    return Path(value) if value else None


def root(source: str, flag: Path | None) -> Path:
    """The datasets directory holding every file of `source`."""
    directory = named(flag)
    files = FILES[source]
    if directory is not None:
        if not directory.is_dir():
            raise DatasetMissing(f"--datasets / {ENVIRONMENT}: {directory} is not a directory")
        if all((directory / name).is_file() for name in files):
            return directory
    if source not in NOT_SHIPPED and all((SHIPPED / name).is_file() for name in files):
        return SHIPPED
    if directory is None:
        raise DatasetMissing(
            f"{source}: needs {files[0]}; name the directory holding it with --datasets DIR "
            f"or {ENVIRONMENT} (see docs/datasets.md)"
        )
    missing = next(name for name in files if not (directory / name).is_file())
    raise DatasetMissing(
        f"{source}: {directory / missing} not found; --datasets DIR or {ENVIRONMENT} names the "
        "directory holding it (see docs/datasets.md)"
    )
