"""Every split a stage reads holds rows, checked on the split codes before any image is decoded: train and test
(the partition, the queries; pate/data/partition.py's check) and, where features are computed, the extractor's
public fit split (``features.fit_split``, val by default). A folder whose split column has no val row used to fail
after the decode and the partition, with a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pate.data.labelled_images import SPLITS
from pate.pipeline.checks import UserError, check_fit_split
from tests.cli import run_cli
from tests.data.folder_data import write_folder

NO_VAL = np.array([SPLITS["train"]] * 7 + [SPLITS["test"]] * 3)


def test_an_empty_fit_split_is_refused_naming_the_key():
    check_fit_split(NO_VAL, "test")
    with pytest.raises(
        UserError,
        match=r"features.fit_split='val' but the val split is empty: no image has split "
        r"code 1 .*expected public images to fit the extractor on",
    ):
        check_fit_split(NO_VAL, "val")


@pytest.mark.parametrize("name", ["train", "valid"])
def test_a_fit_split_that_is_not_a_public_one_is_refused(name):
    with pytest.raises(
        UserError,
        match=rf"features.fit_split='{name}'; expected one of \['val', 'test'\]: a public "
        r"split",
    ):
        check_fit_split(NO_VAL, name)


@pytest.fixture(scope="module")
def no_val_folder(tmp_path_factory) -> Path:
    """L = 5 with a split column whose val rows are test rows."""
    root = tmp_path_factory.mktemp("no_val") / "folder"
    write_folder(root, 5, split_column=True)
    table = root / "labels.csv"
    table.write_text(table.read_text().replace(",val,", ",test,"))
    return root


def _run(folder: Path, root: Path, *overrides: str):
    # the folder has fewer labels than TauPATE's tau: the test's aggregator is GaussianPATE
    return run_cli(
        "train.py",
        [
            "debug=tiny",
            "aggregator=gaussian_pate",
            "data=multilabel_folder",
            f"data.root={folder}",
            *overrides,
            f"paths.root_dir={root}",
            f"hydra.run.dir={root / 'run'}",
        ],
    )


@pytest.mark.parametrize(
    "overrides, message",
    [
        ([], "error: features.fit_split='val' but the val split is empty"),
        (["features.fit_split=train"], "error: features.fit_split='train'; expected one of ['val', 'test']"),
    ],
    ids=["no_val_rows", "private_fit_split"],
)
def test_a_fit_split_no_stage_can_use_is_one_line_before_the_decode(no_val_folder, tmp_path, overrides, message):
    done = _run(no_val_folder, tmp_path, *overrides)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(lines) == 1 and lines[0].startswith(message), lines
    assert not list((tmp_path / "cache").glob("tensors/*.npy")), "images were decoded before the error"
    assert not (tmp_path / "cache" / "aggregate").exists()


@pytest.mark.slow
def test_the_same_folder_runs_with_the_fit_split_the_error_suggests(no_val_folder, tmp_path):
    done = _run(no_val_folder, tmp_path, "features.fit_split=test")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "student_accuracy" in json.loads((tmp_path / "run" / "metrics.json").read_text())
