"""data=multilabel_folder: a directory of images and one CSV file, any number of labels. The reader's strictness
(every error names the file, the line and the column), its split, its conversions, and whole runs with L = 5 and
L = 100 through every aggregator family, both alternative methods and the command line."""

from __future__ import annotations

import csv
import logging
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from pate.artifacts import ArtifactStore
from pate.data.labelled_images import SPLITS
from pate.data.multilabel_folder import MultilabelFolder, read_label_table, seeded_split
from pate.data.partition import read_teacher_parts
from pate.pipeline.runner import prepare, run
from tests.cli import run_cli
from tests.conftest import compose_config
from tests.data.folder_data import expected_conversions, label_names, write_folder

SPLIT_70_10_20 = "data.split_fractions=[0.7,0.1,0.2]"  # 80 test images: 60 in the tiny run's pool, 20 evaluate


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, tuple[Path, np.ndarray]]:
    """L = 5 with -1/1 values and no split column; L = 100 with 0/1 values and a split column."""
    base = tmp_path_factory.mktemp("folders")
    return {
        "five": (base / "five", write_folder(base / "five", 5, minus_one=True)),
        "hundred": (base / "hundred", write_folder(base / "hundred", 100, split_column=True)),
    }


def _copy(folders, name: str, tmp_path: Path) -> Path:
    target = tmp_path / name
    shutil.copytree(folders[name][0], target)
    return target


# ------------------------------------------------------------------------------------------ the reader
def test_both_conventions_and_the_split_column_are_read(folders):
    five, hundred = (read_label_table(folders[name][0] / "labels.csv") for name in ("five", "hundred"))
    assert five.label_names == tuple(label_names(5)) and hundred.label_names == tuple(label_names(100))
    assert np.array_equal(five.labels, folders["five"][1]) and np.array_equal(hundred.labels, folders["hundred"][1])
    assert five.labels.dtype == np.uint8 and five.split is None
    assert hundred.filenames[:2] == ("img/00000.png", "img/00001.png")
    assert np.bincount(hundred.split).tolist() == [280, 40, 80]  # train, val, test, in the file's order
    assert hundred.split[:280].tolist() == [SPLITS["train"]] * 280


def test_the_seeded_split_is_a_reproducible_permutation():
    split = seeded_split(400, (0.7, 0.1, 0.2), seed=3)
    assert np.bincount(split).tolist() == [280, 40, 80]
    assert np.array_equal(split, seeded_split(400, (0.7, 0.1, 0.2), seed=3))
    assert not np.array_equal(split, seeded_split(400, (0.7, 0.1, 0.2), seed=4))
    assert split[:280].tolist() != [0] * 280  # permuted, not in file order
    with pytest.raises(ValueError, match=r"data.split_fractions=\[0.7, 0.1\]; expected three non-negative"):
        seeded_split(10, (0.7, 0.1), 0)


@pytest.mark.slow
def test_grayscale_and_rgba_images_are_converted_and_said_once(folders, tmp_path, caplog):
    root, labels = folders["five"]
    reader = MultilabelFolder(str(root), image_size=8, split_fractions=(0.7, 0.1, 0.2))
    with caplog.at_level(logging.WARNING, logger="pate.data.tensor_cache"):
        data = reader.load(tmp_path / "cache", progress=False)
        again = reader.load(tmp_path / "cache", progress=False)
    gray, rgba = expected_conversions(400)
    lines = [r.message for r in caplog.records if "to RGB" in r.message]
    assert lines == [
        f"converted {gray} L image(s), {rgba} RGBA image(s) to RGB (grayscale replicated to 3 channels, alpha dropped)"
    ]
    assert data.images.shape == (400, 3, 8, 8) and np.array_equal(data.labels, labels)
    gray_row = 3  # written grayscale: its three channels are equal
    assert np.array_equal(data.images[gray_row, 0], data.images[gray_row, 2])
    assert again.fingerprint == data.fingerprint and data.label_names == tuple(label_names(5))


def _rewrite(root: Path, edit) -> None:
    path = root / "labels.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(edit(lines)) + "\n")


def _cell(lines, line, column, value):
    fields = lines[line - 1].split(",")
    fields[column - 1] = value
    lines[line - 1] = ",".join(fields)
    return lines


MALFORMED = {  # (edit of labels.csv, the message); line and column numbers are 1-based
    "short_row": (
        lambda ls: ls[:2] + [ls[2].rsplit(",", 1)[0]] + ls[3:],
        r"labels\.csv, line 3: expected 6 comma-separated fields \(a file name, 5 labels\), found 5",
    ),
    "bad_value": (
        lambda ls: _cell(ls, 4, 3, "2"),
        r"labels\.csv, line 4, column 3 \(square_001\): '2'; expected 0 or 1",
    ),
    "mixed_negatives": (
        lambda ls: _cell(ls, 6, 2, "0"),
        r"labels\.csv, line 6, column 2 \(circle_000\): '0'; expected the file's negative value "
        r"'-1' \(seen first\): one convention per file",
    ),
    "escaping_path": (
        lambda ls: _cell(ls, 5, 1, "../secret.png"),
        r"labels\.csv, line 5, column 1 \(file\): '\.\./secret\.png' leads to \S*secret\.png, outside "
        r"data\.root=",
    ),
    "repeated_file": (
        lambda ls: _cell(ls, 9, 1, ls[1].split(",")[0]),
        r"labels\.csv, lines 2 and 9, column 1 \(file\): 'img/00000\.png' and 'img/00000\.png' are one "
        r"file, \S*img/00000\.png; expected each image listed once",
    ),
    "header_only": (lambda ls: ls[:1], r"labels\.csv: the header names 5 labels but no image follows it"),
    "no_label_column": (
        lambda ls: [
            line.split(",")[0] + ",split" if i == 0 else line.split(",")[0] + ",train" for i, line in enumerate(ls)
        ],
        r"labels\.csv, line 1: expected at least one label column besides 'split'",
    ),
    "repeated_label": (
        lambda ls: [ls[0].replace("square_001", "circle_000")] + ls[1:],
        r"labels\.csv, line 1: label names must be distinct, found \['circle_000'\]",
    ),
    "bad_split": (
        lambda ls: [ls[0] + ",split"] + [line + (",dev" if i == 7 else ",train") for i, line in enumerate(ls[1:])],
        r"labels\.csv, line 9, column 7 \(split\): 'dev'; expected train, val or test \(or 0, 1, 2\)",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_csv_names_the_file_line_and_column(folders, tmp_path, case):
    root = _copy(folders, "five", tmp_path)
    edit, message = MALFORMED[case]
    _rewrite(root, edit)
    with pytest.raises(ValueError, match=message):
        MultilabelFolder(str(root), image_size=8).load(tmp_path / "cache", progress=False)
    assert not (tmp_path / "cache").exists()


# ------------------------------------------------------------------------------------------ whole runs
def _cfg(root: Path, folder: Path, *overrides: str):
    return compose_config(["debug=tiny", "data=multilabel_folder", f"data.root={folder}", *overrides], root)


RUNS = [  # (data, overrides, queries answered): 4 teachers never pass StableTopK's or the data-dependent test
    ("five", ["aggregator=gaussian_pate"], 40),
    ("five", ["aggregator=tau_pate", "aggregator.tau=2"], 40),
    ("hundred", ["aggregator=gaussian_pate"], 40),
    ("hundred", ["aggregator=tau_pate"], 40),
    ("hundred", ["aggregator=stable_topk_paper"], 0),
    ("hundred", ["aggregator=binary_voting_dd"], 0),
    ("hundred", ["aggregator=binary_voting"], 40),
    ("hundred", ["method=private_knn"], 40),
    ("hundred", ["method=dp_sgd", "method.expected_batch_size=64"], 40),
]


@pytest.mark.parametrize("name, overrides, answered", RUNS, ids=[f"{n}-{o[0]}" for n, o, _ in RUNS])
def test_a_folder_runs_end_to_end_with_the_datas_own_labels(folders, shared_root, tmp_path, name, overrides, answered):
    folder, _ = folders[name]
    num_labels = {"five": 5, "hundred": 100}[name]
    metrics = run(_cfg(shared_root, folder, SPLIT_70_10_20, *overrides), output_dir=tmp_path)
    assert metrics["data"] == "multilabel_folder" and metrics["num_labels"] == num_labels
    assert metrics["queries"] == 40 and metrics["answered"] == answered
    assert metrics["neighbors"] == "replace" and 199.9 <= metrics["epsilon"] <= 200.0
    assert (metrics["student_accuracy"] is None) == (answered == 0)
    if answered:
        assert 0 <= metrics["student_accuracy"] <= 1


def test_the_split_column_decides_who_sees_what(folders, shared_root, tmp_path):
    """L = 100's file places rows 0..279 in train: the teachers' parts are exactly those rows."""
    cfg = _cfg(shared_root, folders["hundred"][0])
    graph, data, _ = prepare(cfg)
    assert data.arrays.indices("train").tolist() == list(range(280))
    assert data.arrays.indices("val").tolist() == list(range(280, 320))
    parts = read_teacher_parts(ArtifactStore(Path(cfg.paths.cache_dir)).get(graph.release.stages["partition"]))
    assert sorted(np.concatenate(parts).tolist()) == list(range(280))


# ------------------------------------------------------------------------------------- the command line
def _no_images(root: Path) -> str:
    shutil.rmtree(root / "img")
    return "img/00000.png: no such image file, listed in"


def _bad_value(root: Path) -> str:
    _rewrite(root, lambda ls: _cell(ls, 4, 3, "yes"))
    return "labels.csv, line 4, column 3 (square_001): 'yes'; expected 0 or 1"


def _no_csv(root: Path) -> str:
    (root / "labels.csv").unlink()
    return "labels.csv: no such label file"


def _one_file_twice(root: Path) -> str:
    """The first image listed again under another spelling: one record in two places."""
    _rewrite(root, lambda ls: [*ls, "./" + ls[1]])
    return "labels.csv, lines 2 and 402, column 1 (file): 'img/00000.png' and './img/00000.png' are one file"


def _symlink_out(root: Path) -> str:
    """An image replaced by a symlink to a file outside data.root."""
    outside = root.parent / "outside.png"
    shutil.copy(root / "img" / "00003.png", outside)
    (root / "img" / "00003.png").unlink()
    (root / "img" / "00003.png").symlink_to(outside)
    return f"labels.csv, line 5, column 1 (file): 'img/00003.png' leads to {outside}, outside data.root="


def _too_few_test_images(root: Path) -> str:
    return "data.num_queries=40"


CLI_CASES = {
    "no_images": (_no_images, []),
    "bad_value": (_bad_value, []),
    "no_csv": (_no_csv, []),
    "one_file_twice": (_one_file_twice, []),
    "symlink_out": (_symlink_out, []),
    "too_few_test_images": (_too_few_test_images, ["data.split_fractions=[0.8,0.15,0.05]"]),
    "bad_fractions": (lambda root: "data.split_fractions=[0.5, 0.1, 0.1]", ["data.split_fractions=[0.5,0.1,0.1]"]),
}


def _malformed(case: str):
    def damage(root: Path) -> str:
        edit, message = MALFORMED[case]
        _rewrite(root, edit)
        return message

    return damage, []


CLI_CASES.update({f"csv_{case}": _malformed(case) for case in MALFORMED})


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CLI_CASES))
def test_bad_folder_data_is_one_line_through_the_command_line(folders, tmp_path, case):
    """Every bad input of the format, through train.py's command line: exit 2, one line naming the file (and the
    line and column) or the key, no image decoded."""
    root = _copy(folders, "five", tmp_path)
    damage, extra = CLI_CASES[case]
    names = damage(root)
    done = run_cli(
        "train.py",
        [
            "debug=tiny",
            "data=multilabel_folder",
            f"data.root={root}",
            SPLIT_70_10_20,
            *extra,
            f"paths.root_dir={tmp_path}",
            f"hydra.run.dir={tmp_path / 'run'}",
        ],
    )
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert re.search(names, lines[0]) if case.startswith("csv_") else names in lines[0], (names, lines[0])
    assert not list((tmp_path / "cache").glob("tensors/*.npy")), "images were decoded before the error"


YOUR_DATA = Path(__file__).resolve().parents[2] / "docs" / "your-data.md"


def _your_data_commands() -> list[str]:
    """The command lines for a folder that docs/your-data.md shows, as written."""
    return [
        line.split()[2:]
        for line in YOUR_DATA.read_text().splitlines()
        if line.startswith("python train.py data=multilabel_folder")
    ]


@pytest.mark.slow
def test_the_your_data_page_commands_run(folders, tmp_path):
    """Each, on the L = 100 folder (and its embeddings), at the tiny run's sizes."""
    commands = _your_data_commands()
    assert len(commands) == 2
    folder, labels = folders["hundred"]
    np.save(tmp_path / "embeddings.npy", labels.astype(np.float32) + np.random.default_rng(0).normal(size=labels.shape))
    for number, args in enumerate(commands):
        args = [
            arg.replace("/path/to/images", str(folder)).replace(
                "/path/to/embeddings.npy", str(tmp_path / "embeddings.npy")
            )
            for arg in args
        ]
        done = run_cli(
            "train.py",
            ["debug=tiny", *args, f"paths.root_dir={tmp_path}", f"hydra.run.dir={tmp_path / f'run{number}'}"],
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert (
            "answered          40/40 queries" in done.stdout and (tmp_path / f"run{number}" / "metrics.json").is_file()
        )


@pytest.mark.slow
def test_a_sweep_on_a_hundred_labels_gets_its_report(folders, tmp_path):
    """The report path takes L from the runs too: a two-job sweep on the L = 100 folder, through the command line,
    writes its report, every epsilon replayed from its ledger."""
    sweep = tmp_path / "sweep"
    done = run_cli(
        "train.py",
        [
            "-m",
            "debug=tiny",
            "data=multilabel_folder",
            f"data.root={folders['hundred'][0]}",
            "aggregator=gaussian_pate,binary_voting",
            f"paths.root_dir={tmp_path}",
            f"hydra.sweep.dir={sweep}",
        ],
    )
    assert done.returncode == 0, done.stderr[-2000:]
    with open(sweep / "results.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert sorted(row["method"] for row in rows) == ["binary_voting", "gaussian_pate"]
    assert {row["num_labels"] for row in rows} == {"100"}
    report = (sweep / "report.md").read_text()
    assert "the ε of 2 of 2 finished jobs replayed from the ledger" in report
