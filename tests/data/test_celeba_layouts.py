"""CelebA as people download it: the original archive's layout, torchvision's ``root/celeba/`` and Kaggle's CSV
files with the images one directory deeper, each read to the same arrays and run end to end; a directory that
matches none lists what was looked for and what it holds; Kaggle's files are held to the text files' standard."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from pate.data.celeba import load_celeba
from pate.data.celeba_layouts import find_celeba_layout
from pate.data.synthetic import generate_synthetic_celeba
from pate.pipeline.runner import run
from tests.cli import run_cli

pytestmark = pytest.mark.slow  # end-to-end runs: not in the fast loop (-m 'not slow')


def _to_kaggle(original: Path, root: Path) -> Path:
    """Kaggle's layout of the same copy: CSV files (image_id, values 1 / -1) and the images nested one level."""
    (root / "img_align_celeba").mkdir(parents=True)
    shutil.copytree(original / "img_align_celeba", root / "img_align_celeba" / "img_align_celeba")
    lines = (original / "list_attr_celeba.txt").read_text().splitlines()
    header = ",".join(["image_id", *lines[1].split()])
    rows = [",".join(line.split()).replace("+1", "1") for line in lines[2:]]
    (root / "list_attr_celeba.csv").write_text("\n".join([header, *rows]) + "\n")
    splits = [",".join(line.split()) for line in (original / "list_eval_partition.txt").read_text().splitlines()]
    (root / "list_eval_partition.csv").write_text("\n".join(["image_id,partition", *splits]) + "\n")
    return root


def _to_torchvision(original: Path, root: Path) -> Path:
    """torchvision's layout: ``datasets.CelebA(root, download=True)`` leaves the files in ``root/celeba/``."""
    shutil.copytree(original, root / "celeba", ignore=shutil.ignore_patterns(".*"))
    return root


@pytest.fixture(scope="module")
def layouts(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("layouts")
    original = generate_synthetic_celeba(
        base / "original", num_images=400, image_size=32, split_fractions=(0.8, 0.05, 0.15), seed=0, progress=False
    )
    return {
        "original": original,
        "torchvision": _to_torchvision(original, base / "tv"),
        "kaggle": _to_kaggle(original, base / "kaggle"),
    }


@pytest.mark.parametrize("kind", ["torchvision", "kaggle"])
def test_every_layout_reads_to_the_same_arrays(layouts, kind, tmp_path):
    assert find_celeba_layout(layouts[kind]).kind == kind
    expected = load_celeba(layouts["original"], 16, tmp_path / "a", progress=False)
    got = load_celeba(layouts[kind], 16, tmp_path / "b", progress=False)
    assert got.filenames == expected.filenames and got.label_names == expected.label_names
    np.testing.assert_array_equal(got.labels, expected.labels)
    np.testing.assert_array_equal(got.split, expected.split)
    np.testing.assert_array_equal(np.asarray(got.images), np.asarray(expected.images))


def test_every_layout_runs_end_to_end_to_the_same_result(layouts, tiny_cfg, tmp_path):
    results = {
        kind: run(tiny_cfg("data=celeba", f"data.root={root}"), output_dir=tmp_path / kind)
        for kind, root in layouts.items()
    }
    for kind in ("torchvision", "kaggle"):
        for key in ("epsilon", "label_f1", "student_accuracy", "teacher_accuracy"):
            assert results[kind][key] == results["original"][key], (kind, key)


def test_a_directory_matching_no_layout_lists_what_was_looked_for_and_found(tmp_path):
    (tmp_path / "photos").mkdir()
    (tmp_path / "labels.csv").write_text("x\n")
    with pytest.raises(FileNotFoundError) as err:
        find_celeba_layout(tmp_path)
    message = str(err.value)
    for looked_for in ("list_attr_celeba.txt", "under celeba/ (torchvision)", "list_eval_partition.csv (Kaggle)"):
        assert looked_for in message
    assert "found labels.csv, photos/" in message and "data.root=/path/to/celeba" in message


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda text: text.replace("image_id", "filename", 1), "line 1: expected a header starting with 'image_id'"),
        (lambda text: text.replace(",-1", ",0", 1), r"line 2: value '0' for \w+; expected 1 \(or \+1\) or -1"),
        (lambda text: text.replace(",1\n", "\n", 1), r"line \d+: expected a file name and 40 values, found 40 fields"),
    ],
)
def test_a_bad_kaggle_file_names_the_file_and_the_line(layouts, tmp_path, edit, message):
    """Through train.py's command line: exit 2, one line naming the file and the line, no image decoded."""
    root = _to_kaggle(layouts["original"], tmp_path / "bad")
    path = root / "list_attr_celeba.csv"
    path.write_text(edit(path.read_text()))
    done = run_cli(
        "train.py",
        [
            "debug=tiny",
            "data=celeba",
            f"data.root={root}",
            f"paths.root_dir={tmp_path}",
            f"hydra.run.dir={tmp_path / 'run'}",
        ],
    )
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2 and len(lines) == 1, done.stdout + done.stderr
    assert lines[0].startswith(f"error: {path}, ") and re.search(message, lines[0]), lines[0]
    assert not list((tmp_path / "cache").glob("tensors/*.npy"))
