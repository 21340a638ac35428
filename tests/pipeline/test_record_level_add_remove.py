"""A record-level add_remove guarantee (DP-SGD, Private-kNN) needs more than the mechanism's accounting: adding or
removing one record must not move other records between the private and public splits, and whether a run is
refused must not depend on the number of private records. The neighbours are built as add_remove defines them:
the data with one row appended."""

from __future__ import annotations

from pathlib import Path

import pytest

from pate.data.multilabel_folder import seeded_split
from pate.pipeline.checks import UserError
from pate.pipeline.runner import prepare
from tests.conftest import compose_config
from tests.data.folder_data import write_folder

RECORD_LEVEL = [
    ["method=private_knn"],
    ["method=dp_sgd", "method.expected_batch_size=16", "method.public_num_records=200"],
]


def test_a_split_drawn_from_all_rows_moves_other_records_when_one_is_appended():
    """Why a drawn split is refused: the seeded permutation of N + 1 rows splits the first N rows differently
    from the permutation of N rows (hundreds of the first 1,000 change split, private ones among them)."""
    first, appended = seeded_split(1000, (0.8, 0.1, 0.1), 0), seeded_split(1001, (0.8, 0.1, 0.1), 0)[:1000]
    moved = first != appended
    assert moved.sum() > 10 and (first[moved] == 0).any()  # 0: train, the private split


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    roots = {"drawn": tmp_path_factory.mktemp("drawn") / "shapes", "column": tmp_path_factory.mktemp("col") / "shapes"}
    write_folder(roots["drawn"], 5, num_images=100)
    write_folder(roots["column"], 5, num_images=100, split_column=True)  # 70 train rows
    return roots


def _prepare(root: Path, tmp_path: Path, *overrides: str):
    return prepare(
        compose_config(
            [
                "debug=tiny",
                "data=multilabel_folder",
                f"data.root={root}",
                "data.split_fractions=[0.7,0.1,0.2]",
                "features.fit_split=test",
                "data.num_queries=5",
                *overrides,
            ],
            tmp_path,
        )
    )


@pytest.mark.slow  # a heavy computation
@pytest.mark.parametrize("method", RECORD_LEVEL)
def test_a_record_level_add_remove_run_on_a_drawn_split_is_refused(folders, tmp_path, method):
    with pytest.raises(
        UserError,
        match=r"privacy.neighbors=add_remove with MultilabelFolder data that has no split "
        r"column: its rows are split by a seeded permutation",
    ):
        _prepare(folders["drawn"], tmp_path, *method, "privacy.neighbors=add_remove")
    _prepare(folders["column"], tmp_path, *method, "privacy.neighbors=add_remove")  # each record's own split
    _prepare(folders["drawn"], tmp_path, *method, "privacy.neighbors=replace")  # replace keeps every row's place


@pytest.mark.slow  # a heavy computation
@pytest.mark.parametrize("method", RECORD_LEVEL)
def test_a_method_without_teachers_is_not_refused_for_having_fewer_records_than_teachers(folders, tmp_path, method):
    """partition.num_teachers=80 against 70 private records: a refusal there would tell 79 records from 80 apart."""
    _prepare(folders["column"], tmp_path, *method, "partition.num_teachers=80", "privacy.neighbors=add_remove")
    with pytest.raises(ValueError, match=r"partition.num_teachers=80 but the private training split holds 70"):
        # PATE's teachers need the records (GaussianPATE: the folder has fewer labels than TauPATE's tau)
        _prepare(folders["column"], tmp_path, "partition.num_teachers=80", "aggregator=gaussian_pate")
