"""Where the evaluation commands find their datasets (app/evaluation/datasets.py): a named
directory first, the shipped sets otherwise, and one line with exit status 2 when a set is missing."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.cli import main
from app.evaluation.datasets import ENVIRONMENT, SHIPPED, DatasetMissing, root
from tests.conftest import DATASETS
from tests.test_cli import BAR_LINE


@pytest.fixture(autouse=True)
def no_datasets_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENVIRONMENT, raising=False)


def test_the_shipped_sets_are_the_default() -> None:
    assert SHIPPED == DATASETS
    for source in ("chess", "football", "chgk-ec"):
        assert root(source, None) == DATASETS


def test_a_named_directory_wins_over_the_shipped_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "chess").mkdir()
    shutil.copy(DATASETS / "chess" / "small_chessbase_1850_1855.csv", tmp_path / "chess")
    assert root("chess", tmp_path) == tmp_path
    monkeypatch.setenv(ENVIRONMENT, str(tmp_path))
    assert root("chess", None) == tmp_path
    # A set the named directory lacks, and the repository ships, comes from tests/data.
    assert root("football", None) == DATASETS
    assert root("football", tmp_path) == DATASETS


def test_unshipped_sets_need_a_named_directory(tmp_path: Path) -> None:
    with pytest.raises(DatasetMissing, match=f"--datasets DIR or {ENVIRONMENT}"):
        root("atp", None)
    with pytest.raises(DatasetMissing, match=r"atp_singles_1968_2024\.csv\.gz not found"):
        root("atp", tmp_path)
    with pytest.raises(DatasetMissing, match=r"rating_tournaments\.csv not found"):
        root("chgk-rating", tmp_path)
    with pytest.raises(DatasetMissing, match="is not a directory"):
        root("chess", tmp_path / "nowhere")


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["evaluate-history", "--source", "atp"], f"--datasets DIR or {ENVIRONMENT}"),
        (["evaluate-tournaments", "--source", "chgk-rating"], f"--datasets DIR or {ENVIRONMENT}"),
        (["fit-history", "--datasets", "/nonexistent-datasets"], "/nonexistent-datasets is not a directory"),
    ],
)
def test_a_missing_dataset_is_one_line_and_exit_status_2(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert says in captured.err
    # One line, after the command's first progress bar line.
    lines = [line for line in captured.err.splitlines() if not BAR_LINE.match(line)]
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in captured.err
    assert captured.out == ""


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["fit-drift", "--rounds", "-1"], "argument --rounds: -1 is less than 0"),
        (["fit-history", "--iterations", "0"], "argument --iterations: 0 is less than 1"),
        (["fit-history", "--limit", "many"], "argument --limit: 'many' is not a whole number"),
    ],
)
def test_a_bad_count_is_one_line_and_exit_status_2(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if not BAR_LINE.match(line)]
    assert len(lines) == 1 and says in lines[0] and "Traceback" not in err


def test_without_a_named_directory_only_shipped_sources_run(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["evaluate-tournaments", "--synthetic-tournaments", "3", "--synthetic-max-teams", "110"])
    assert code == 0
    out = capsys.readouterr().out
    assert "## chgk-ec: 15 tournaments" in out and "## synthetic: 3 tournaments" in out
    assert "chgk-rating" not in out
